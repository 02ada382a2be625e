import { useEffect, useMemo, useState } from "preact/hooks";
import { OidcSession, SignInError } from "../../ui-shared/oidc";
import { call, type Credential } from "./api";
import { readPageConfig } from "./config";
import { CATALOGUES, fill, I18nContext, initialLanguage, storeLanguage, type I18n, type Language } from "./i18n";
import { Alerts } from "./screens/alerts";
import { FileReport } from "./screens/file-report";
import { Messages } from "./screens/messages";
import { MyReports } from "./screens/my-reports";
import { ReportDetail } from "./screens/report-detail";
import { Search } from "./screens/search";
import { Settings } from "./screens/settings";
import { SignIn } from "./screens/sign-in";
import { SessionContext, type Session } from "./session";

const config = readPageConfig();
const CALLBACK_PATH = "/app/callback";
const oidc = config.oidc ? new OidcSession(config.oidc, CALLBACK_PATH) : null;
/** Whether this tab was signed in through the provider: not a token, only a reason to ask the provider again after a reload. */
const SIGNED_IN_KEY = "app.signed-in";

export type Route =
  | { screen: "search" }
  | { screen: "file" }
  | { screen: "reports" }
  | { screen: "report"; kind: "lost" | "found"; id: string }
  | { screen: "messages" }
  | { screen: "alerts" }
  | { screen: "settings" };

function routeFromHash(): Route {
  const parts = location.hash.replace(/^#\/?/, "").split("/");
  switch (parts[0]) {
    case "file":
    case "reports":
    case "messages":
    case "alerts":
    case "settings":
      if (parts[0] === "reports" && (parts[1] === "lost" || parts[1] === "found") && parts[2]) return { screen: "report", kind: parts[1], id: parts[2] };
      return { screen: parts[0] };
    default:
      return { screen: "search" };
  }
}

type Start = { state: "ready" } | { state: "working" } | { state: "refused"; reason: string };

export function App() {
  const [language, setLanguage] = useState<Language>(initialLanguage);
  const [credential, setCredential] = useState<Credential | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [start, setStart] = useState<Start>(() => (location.pathname === CALLBACK_PATH ? { state: "working" } : { state: "ready" }));
  const [route, setRoute] = useState<Route>(routeFromHash);

  const i18n = useMemo<I18n>(() => {
    const format = new Intl.DateTimeFormat(language, { dateStyle: "medium", timeStyle: "short" });
    return {
      language,
      m: CATALOGUES[language],
      setLanguage(next) {
        storeLanguage(next);
        setLanguage(next);
      },
      date: (iso) => format.format(new Date(iso)),
    };
  }, [language]);
  const m = i18n.m;

  useEffect(() => {
    document.documentElement.lang = language;
    document.title = m.appName;
  }, [language]);

  useEffect(() => {
    const onHash = () => {
      setRoute(routeFromHash());
      setStart((was) => (was.state === "refused" ? { state: "ready" } : was));
    };
    addEventListener("hashchange", onHash);
    return () => removeEventListener("hashchange", onHash);
  }, []);

  // The authorization response, or a reload of a tab that was signed in.
  useEffect(() => {
    if (location.pathname === CALLBACK_PATH) {
      const callbackUrl = new URL(location.href);
      // The code leaves the address bar (and history) before it is used.
      history.replaceState(null, "", "/app/");
      if (!oidc) return setStart({ state: "refused", reason: m.signIn.noProvider });
      oidc
        .complete(callbackUrl)
        .then((returnTo) => {
          sessionStorage.setItem(SIGNED_IN_KEY, "oidc");
          setCredential({ kind: "oidc", session: oidc });
          setStart({ state: "ready" });
          location.hash = returnTo || "#/reports";
        })
        .catch((err: unknown) => {
          sessionStorage.removeItem(SIGNED_IN_KEY);
          const silent = err instanceof SignInError && err.providerError !== null && ["login_required", "interaction_required", "consent_required"].includes(err.providerError);
          setStart(silent ? { state: "ready" } : { state: "refused", reason: (err as Error).message });
        });
    } else if (oidc && sessionStorage.getItem(SIGNED_IN_KEY) === "oidc") {
      setStart({ state: "working" });
      oidc.begin({ returnTo: location.hash, silent: true }).catch(() => {
        sessionStorage.removeItem(SIGNED_IN_KEY);
        setStart({ state: "ready" });
      });
    }
  }, []);

  const session = useMemo<Session | null>(() => {
    if (!credential) return null;
    const actorId = credential.kind === "debug" ? credential.actorId : (credential.session.subject ?? "");
    const signOut = (reason?: string) => {
      if (credential.kind === "oidc") credential.session.end();
      sessionStorage.removeItem(SIGNED_IN_KEY);
      setNotice(reason ?? null);
      setCredential(null);
    };
    if (credential.kind === "oidc") credential.session.onEnded = signOut;
    return {
      credential,
      actorId,
      signOut,
      request: (method, path, body) => call(credential, method, path, body, { onUnauthenticated: (problem) => signOut(problem.detail) }),
    };
  }, [credential]);

  const signInProps = {
    oidcAvailable: oidc !== null,
    devSignIn: config.devSignIn,
    refused: start.state === "refused" ? start.reason : null,
    notice,
    onProvider: () => {
      setStart({ state: "working" });
      const returnTo = route.screen === "search" ? "#/reports" : location.hash;
      oidc?.begin({ returnTo }).catch((err: unknown) => setStart({ state: "refused", reason: (err as Error).message }));
    },
    onDebug: (actorId: string) => {
      setNotice(null);
      setStart({ state: "ready" });
      setCredential({ kind: "debug", actorId });
      if (route.screen === "search") location.hash = "#/reports";
    },
  };

  const needsSession = route.screen !== "search";
  let body;
  if (start.state === "working") {
    body = (
      <p class="working" role="status">
        {m.signIn.working}
      </p>
    );
  } else if (start.state === "refused" || (needsSession && !session)) {
    body = <SignIn {...signInProps} />;
  } else {
    switch (route.screen) {
      case "search":
        body = <Search />;
        break;
      case "file":
        body = <FileReport />;
        break;
      case "reports":
        body = <MyReports />;
        break;
      case "report":
        body = <ReportDetail kind={route.kind} id={route.id} />;
        break;
      case "messages":
        body = <Messages />;
        break;
      case "alerts":
        body = <Alerts />;
        break;
      case "settings":
        body = <Settings />;
        break;
    }
  }

  const nav: Array<[Route["screen"], string, string]> = [
    ["search", "#/search", m.nav.search],
    ["file", "#/file", m.nav.file],
    ["reports", "#/reports", m.nav.reports],
    ["messages", "#/messages", m.nav.messages],
    ["alerts", "#/alerts", m.nav.alerts],
    ["settings", "#/settings", m.nav.settings],
  ];
  const current = route.screen === "report" ? "reports" : route.screen;

  return (
    <I18nContext.Provider value={i18n}>
      <SessionContext.Provider value={session}>
        <header class="top">
          <a class="brand" href="#/search">
            {m.appName}
          </a>
          {session ? (
            <div class="who">
              <span class="actor" title={fill(m.signIn.signedInAs, { who: session.actorId })}>
                {session.actorId}
              </span>
              <button type="button" class="link" onClick={() => session.signOut()}>
                {m.signIn.signOut}
              </button>
            </div>
          ) : (
            route.screen === "search" &&
            start.state !== "working" && (
              <a class="button small" href="#/reports">
                {m.signIn.button}
              </a>
            )
          )}
        </header>
        <main id="main">{body}</main>
        <nav class="tabs" aria-label={m.appName}>
          {nav.map(([screen, href, label]) => (
            <a key={screen} href={href} aria-current={screen === current ? "page" : undefined}>
              {label}
            </a>
          ))}
        </nav>
      </SessionContext.Provider>
    </I18nContext.Provider>
  );
}
