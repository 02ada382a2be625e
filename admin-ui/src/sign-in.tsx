import { useState } from "preact/hooks";
import type { Credential, Problem } from "./api";
import { ProblemNote, submit } from "./ui";

export function SignIn(props: { onSignIn(credential: Credential): Promise<Problem | null>; notice: string | null }) {
  const [kind, setKind] = useState<Credential["kind"]>("bearer");
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
        <fieldset>
          <legend>Credential</legend>
          <label class="choice">
            <input type="radio" name="kind" checked={kind === "bearer"} onChange={() => setKind("bearer")} />
            Bearer token
          </label>
          <label class="choice">
            <input type="radio" name="kind" checked={kind === "debug"} onChange={() => setKind("debug")} />
            Debug actor (development only)
          </label>
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
