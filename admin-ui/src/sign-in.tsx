import { useState } from "preact/hooks";
import type { Credential, Problem } from "./api";
import { ProblemNote, submit } from "./ui";

/**
 * The identity provider's sign-in (OpenID Connect) when the API has one;
 * pasting a bearer token stays as the operators' fallback; the debug actor
 * only where the API's development bypass is on.
 */
export function SignIn(props: {
  onSignIn(credential: Credential): Promise<Problem | null>;
  notice: string | null;
  onProvider: (() => void) | null;
  refused: string | null;
  devSignIn: boolean;
}) {
  const [kind, setKind] = useState<"bearer" | "debug">("bearer");
  const [token, setToken] = useState("");
  const [actorId, setActorId] = useState("");
  const [roles, setRoles] = useState("platform_admin");
  const [problem, setProblem] = useState<Problem | null>(null);
  const [busy, setBusy] = useState(false);

  const signIn = async () => {
    setBusy(true);
    const credential: Credential = kind === "bearer" ? { kind, token: token.trim() } : { kind, actorId: actorId.trim(), roles };
    setProblem(await props.onSignIn(credential));
    setBusy(false);
  };

  return (
    <main class="sign-in">
      <form class="card" aria-label="Sign in" onSubmit={submit(signIn)}>
        <h1>
          Animal Safety <span>admin console</span>
        </h1>
        {props.notice && <p class="warning">Signed out: {props.notice}</p>}
        {props.refused && (
          <p class="problem" role="alert">
            Sign-in refused: {props.refused}
          </p>
        )}
        {props.onProvider && (
          <>
            <button type="button" onClick={props.onProvider}>
              Sign in with the identity provider
            </button>
            <p class="muted">Or, as a fallback:</p>
          </>
        )}
        <fieldset>
          <legend>Credential</legend>
          <label class="choice">
            <input type="radio" name="kind" checked={kind === "bearer"} onChange={() => setKind("bearer")} />
            Bearer token
          </label>
          {props.devSignIn && (
            <label class="choice">
              <input type="radio" name="kind" checked={kind === "debug"} onChange={() => setKind("debug")} />
              Debug actor (development only)
            </label>
          )}
        </fieldset>
        {kind === "bearer" ? (
          <label>
            Token
            <textarea value={token} required rows={4} placeholder="eyJhbGciOi…" onInput={(e) => setToken(e.currentTarget.value)} />
          </label>
        ) : (
          <>
            <label>
              Actor id
              <input value={actorId} required placeholder="admin-1" onInput={(e) => setActorId(e.currentTarget.value)} />
            </label>
            <label>
              Roles
              <input value={roles} onInput={(e) => setRoles(e.currentTarget.value)} />
            </label>
            <p class="muted">Sent as X-Debug-Actor and X-Debug-Roles; the API accepts them only with API_DEV_AUTH_BYPASS in development.</p>
          </>
        )}
        {problem && <ProblemNote problem={problem} />}
        <button type="submit" disabled={busy}>
          Sign in
        </button>
      </form>
    </main>
  );
}
