import { useState } from "preact/hooks";
import { Field, onSubmit } from "../forms";
import { fill, useI18n } from "../i18n";

/**
 * Sign-in: the provider's pages (OpenID Connect), and, on a development
 * server only, the debug actor the API's bypass accepts.
 */
export function SignIn(props: {
  oidcAvailable: boolean;
  devSignIn: boolean;
  refused: string | null;
  notice: string | null;
  onProvider(): void;
  onDebug(actorId: string): void;
}) {
  const { m } = useI18n();
  const [actorId, setActorId] = useState("");
  return (
    <section class="sign-in" aria-labelledby="sign-in-heading">
      <h1 id="sign-in-heading">{m.signIn.heading}</h1>
      <p>{m.signIn.intro}</p>
      {props.refused && (
        <p class="problem" role="alert">
          {fill(m.signIn.refused, { reason: props.refused })}
        </p>
      )}
      {props.notice && (
        <p class="warning" role="status">
          {fill(m.signIn.signedOut, { reason: props.notice })}
        </p>
      )}
      {props.oidcAvailable ? (
        <button type="button" class="primary wide" onClick={props.onProvider}>
          {m.signIn.button}
        </button>
      ) : (
        !props.devSignIn && <p class="muted">{m.signIn.noProvider}</p>
      )}
      {props.devSignIn && (
        <form class="card dev" aria-labelledby="dev-heading" onSubmit={onSubmit(() => actorId.trim() && props.onDebug(actorId.trim()))}>
          <h2 id="dev-heading">{m.signIn.devHeading}</h2>
          <p class="muted">{m.signIn.devIntro}</p>
          <Field label={m.signIn.actorId}>{(attrs) => <input {...attrs} value={actorId} required autocomplete="username" onInput={(e) => setActorId(e.currentTarget.value)} />}</Field>
          <button type="submit">{m.signIn.devButton}</button>
        </form>
      )}
    </section>
  );
}
