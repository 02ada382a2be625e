import { useEffect, useState } from "preact/hooks";
import type { Preferences } from "../api";
import { Field, onSubmit, ProblemNote, useProblem } from "../forms";
import { fill, LANGUAGES, useI18n, type Language } from "../i18n";
import { pushIsOn, pushSupported, turnOnPush } from "../push";
import { useSession } from "../session";

/** Notification preferences: the email and its confirmation, the phone once SMS exists, push on this device, and the language. */
export function Settings() {
  const { m, language, setLanguage } = useI18n();
  const session = useSession()!;
  const [preferences, setPreferences] = useState<Preferences | null>(null);
  const [email, setEmail] = useState("");
  const [saved, setSaved] = useState(false);
  const [push, setPush] = useState<"unsupported" | "off" | "on" | "denied">(() => (pushSupported() ? "off" : "unsupported"));
  const load = useProblem();
  const emailForm = useProblem();
  const pushState = useProblem();

  useEffect(() => {
    void load.run(async () => {
      const got = await session.request<Preferences>("GET", "/v1/me/notification-preferences");
      setPreferences(got);
      setEmail(got.email ?? "");
    });
    if (pushSupported()) {
      if (Notification.permission === "denied") setPush("denied");
      else void pushIsOn().then((on) => on && setPush("on"));
    }
  }, []);

  const saveEmail = (value: string | null) =>
    emailForm.run(async () => {
      setSaved(false);
      const got = await session.request<Preferences>("PUT", "/v1/me/notification-preferences", { email: value });
      setPreferences(got);
      setEmail(got.email ?? "");
      setSaved(true);
    });

  const enablePush = () =>
    pushState.run(async () => {
      await turnOnPush(session);
      setPush("on");
    });

  return (
    <section aria-labelledby="settings-heading">
      <h1 id="settings-heading">{m.settings.heading}</h1>
      {load.problem && <ProblemNote problem={load.problem} />}
      <section aria-labelledby="email-heading" class="card">
        <h2 id="email-heading">{m.settings.emailHeading}</h2>
        {preferences && (
          <p class={`status email-${preferences.emailStatus}`} data-testid="email-status">
            {m.settings.emailStatus[preferences.emailStatus]}
          </p>
        )}
        <form onSubmit={onSubmit(() => saveEmail(email.trim() || null))} aria-label={m.settings.emailHeading} noValidate>
          <Field label={m.settings.email} error={emailForm.fieldError("email")}>
            {(attrs) => <input {...attrs} type="email" autocomplete="email" value={email} onInput={(e) => setEmail(e.currentTarget.value)} />}
          </Field>
          {emailForm.problem && <ProblemNote problem={emailForm.problem} fieldsShown />}
          {saved && <p role="status">{m.settings.emailSaved}</p>}
          <div class="actions">
            <button type="submit" class="primary" disabled={emailForm.busy}>
              {m.settings.saveEmail}
            </button>
            {preferences?.email && (
              <button type="button" class="secondary" disabled={emailForm.busy} onClick={() => saveEmail(null)}>
                {m.settings.removeEmail}
              </button>
            )}
          </div>
        </form>
      </section>
      {preferences && preferences.phoneStatus !== undefined && <PhoneSection preferences={preferences} />}
      <section aria-labelledby="push-heading" class="card">
        <h2 id="push-heading">{m.settings.pushHeading}</h2>
        {push === "unsupported" && <p>{m.settings.pushUnsupported}</p>}
        {push === "denied" && <p>{m.settings.pushDenied}</p>}
        {push === "on" && <p role="status">{m.settings.pushOn}</p>}
        {push === "off" && (
          <button type="button" class="primary" onClick={enablePush} disabled={pushState.busy}>
            {m.settings.pushEnable}
          </button>
        )}
        {pushState.problem && (
          <p class="problem" role="alert">
            {fill(m.settings.pushFailed, { detail: pushState.problem.detail })}
          </p>
        )}
      </section>
      <section aria-labelledby="language-heading" class="card">
        <h2 id="language-heading">{m.settings.languageHeading}</h2>
        <Field label={m.settings.language}>
          {(attrs) => (
            <select {...attrs} value={language} onChange={(e) => setLanguage(e.currentTarget.value as Language)}>
              {(Object.keys(LANGUAGES) as Language[]).map((code) => (
                <option key={code} value={code} lang={code}>
                  {LANGUAGES[code]}
                </option>
              ))}
            </select>
          )}
        </Field>
      </section>
    </section>
  );
}

/** The phone and its confirmation: shown once the service has SMS (the preferences carry phoneStatus). */
function PhoneSection(props: { preferences: Preferences }) {
  const { m } = useI18n();
  const status = props.preferences.phoneStatus ?? "none";
  return (
    <section aria-labelledby="phone-heading" class="card" data-testid="phone">
      <h2 id="phone-heading">{m.settings.phoneHeading}</h2>
      {props.preferences.phone && <p>{props.preferences.phone}</p>}
      <p class={`status phone-${status}`}>{m.settings.phoneStatus[status] ?? status}</p>
    </section>
  );
}
