import { useEffect, useMemo, useState } from "preact/hooks";
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

// Session storage: the credential lives as long as the tab, never on disk across browser restarts.
const STORAGE_KEY = "admin-console.credential";

function storedCredential(): Credential | null {
  try {
    const raw = sessionStorage.getItem(STORAGE_KEY);
    return raw ? (JSON.parse(raw) as Credential) : null;
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
          sessionStorage.removeItem(STORAGE_KEY);
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
    sessionStorage.setItem(STORAGE_KEY, JSON.stringify(candidate));
    setSignOutReason(null);
    setCredential(candidate);
    return null;
  };

  if (!session) return <SignIn onSignIn={signIn} notice={signOutReason} />;

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
          <span title={session.credential.kind === "debug" ? "development debug actor" : "bearer token"}>
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
