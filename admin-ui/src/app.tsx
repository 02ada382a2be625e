import { useEffect, useMemo, useState } from "preact/hooks";
import { OidcSession, SignInError, type OidcSettings } from "../../ui-shared/oidc";
import { actorIdOf, call, type Credential, type Problem } from "./api";
import { Accounts } from "./screens/accounts";
import { Alerts } from "./screens/alerts";
import { Audit } from "./screens/audit";
import { Jobs } from "./screens/jobs";
import { Moderation } from "./screens/moderation";
import { Notifications } from "./screens/notifications";
import { Outbox } from "./screens/outbox";
import { Partners } from "./screens/partners";
import { SignIn } from "./sign-in";
import { SessionContext, toProblem, type Session } from "./ui";

const SCREENS = {
  moderation: { label: "Moderation", view: Moderation },
  alerts: { label: "Alerts", view: Alerts },
  outbox: { label: "Outbox", view: Outbox },
  jobs: { label: "Jobs", view: Jobs },
  notifications: { label: "Notifications", view: Notifications },
  audit: { label: "Audit log", view: Audit },
  accounts: { label: "Accounts", view: Accounts },
  partners: { label: "Partners", view: Partners },
} as const;
type ScreenName = keyof typeof SCREENS;

/** What the API tells the page (api/pages/single-page.ts SignInConfig). */
function pageConfig(): { oidc: OidcSettings | null; devSignIn: boolean } {
  try {
    const meta = document.querySelector<HTMLMetaElement>('meta[name="service-config"]');
    return { oidc: null, devSignIn: false, ...(meta ? JSON.parse(meta.content) : {}) };
  } catch {
    return { oidc: null, devSignIn: false };
  }
}

const config = pageConfig();
const CALLBACK_PATH = "/admin/callback";
const oidc = config.oidc ? new OidcSession(config.oidc, CALLBACK_PATH) : null;

// Tokens live in memory only. Session storage keeps the debug actor (development, no secret) and whether the tab
// signed in through the provider, so a reload asks the provider again (prompt=none) instead of showing the form.
const STORAGE_KEY = "admin-console.credential";
const PROVIDER_KEY = "admin-console.signed-in";

function storedCredential(): Credential | null {
  try {
    const raw = sessionStorage.getItem(STORAGE_KEY);
    const stored = raw ? (JSON.parse(raw) as Credential) : null;
    return stored?.kind === "debug" ? stored : null;
  } catch {
    return null;
  }
}

function screenFromHash(): ScreenName {
  const name = location.hash.replace(/^#\/?/, "");
  return name in SCREENS ? (name as ScreenName) : "moderation";
}

export function App() {
  const [credential, setCredential] = useState<Credential | null>(storedCredential);
  const [signOutReason, setSignOutReason] = useState<string | null>(null);
  const [refused, setRefused] = useState<string | null>(null);
  const [working, setWorking] = useState(() => location.pathname === CALLBACK_PATH || (oidc !== null && sessionStorage.getItem(PROVIDER_KEY) === "1"));

  // The provider's authorization response, or a reload of a tab that had signed in through it.
  useEffect(() => {
    if (!oidc) return;
    if (location.pathname === CALLBACK_PATH) {
      const callbackUrl = new URL(location.href);
      history.replaceState(null, "", "/admin");
      oidc
        .complete(callbackUrl)
        .then(async (returnTo) => {
          const candidate: Credential = { kind: "oidc", session: oidc };
          const problem = await signIn(candidate);
          if (problem) throw new SignInError(`${problem.status} ${problem.detail}`);
          sessionStorage.setItem(PROVIDER_KEY, "1");
          if (returnTo) location.hash = returnTo;
        })
        .catch((err: unknown) => {
          oidc.end();
          sessionStorage.removeItem(PROVIDER_KEY);
          const silent = err instanceof SignInError && err.providerError !== null;
          if (!silent) setRefused((err as Error).message);
        })
        .finally(() => setWorking(false));
    } else if (sessionStorage.getItem(PROVIDER_KEY) === "1") {
      oidc.begin({ returnTo: location.hash, silent: true }).catch(() => {
        sessionStorage.removeItem(PROVIDER_KEY);
        setWorking(false);
      });
    }
  }, []);
  const [screen, setScreen] = useState<ScreenName>(screenFromHash);

  useEffect(() => {
    const onHash = () => setScreen(screenFromHash());
    addEventListener("hashchange", onHash);
    return () => removeEventListener("hashchange", onHash);
  }, []);

  const session = useMemo<Session | null>(
    () =>
      credential && {
        credential,
        actorId: actorIdOf(credential),
        signOut(message) {
          if (credential.kind === "oidc") credential.session.end();
          sessionStorage.removeItem(STORAGE_KEY);
          sessionStorage.removeItem(PROVIDER_KEY);
          setSignOutReason(message ?? null);
          setCredential(null);
        },
      },
    [credential],
  );

  /** Accepts the credential only once the API let it read an admin listing: a wrong token or a missing role shows at sign-in. */
  const signIn = async (candidate: Credential): Promise<Problem | null> => {
    try {
      await call(candidate, "GET", "/v1/admin/moderation/queue?limit=1");
    } catch (err) {
      return toProblem(err);
    }
    if (candidate.kind === "debug") sessionStorage.setItem(STORAGE_KEY, JSON.stringify(candidate));
    setSignOutReason(null);
    setRefused(null);
    setCredential(candidate);
    return null;
  };

  if (working) return <p class="sign-in">Signing in…</p>;
  if (!session) {
    const onProvider = oidc
      ? () => {
          setWorking(true);
          oidc.begin({ returnTo: location.hash }).catch((err: unknown) => {
            setWorking(false);
            setRefused((err as Error).message);
          });
        }
      : null;
    return <SignIn onSignIn={signIn} notice={signOutReason} onProvider={onProvider} refused={refused} devSignIn={config.devSignIn} />;
  }

  const View = SCREENS[screen].view;
  return (
    <SessionContext.Provider value={session}>
      <header class="top">
        <h1>
          Animal Safety <span>admin console</span>
        </h1>
        <nav aria-label="Screens">
          {(Object.keys(SCREENS) as ScreenName[]).map((name) => (
            <a key={name} href={`#/${name}`} aria-current={name === screen ? "page" : undefined}>
              {SCREENS[name].label}
            </a>
          ))}
        </nav>
        <div class="who">
          <span title={{ debug: "development debug actor", bearer: "bearer token", oidc: "signed in at the identity provider" }[session.credential.kind]}>
            {session.actorId ?? "signed in"}
            {session.credential.kind === "debug" && <span class="badge escalated">debug</span>}
          </span>
          <button type="button" class="secondary" onClick={() => session.signOut()}>
            Sign out
          </button>
        </div>
      </header>
      <main>
        <View key={screen} />
      </main>
    </SessionContext.Provider>
  );
}
