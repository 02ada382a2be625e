import { useEffect, useState } from "preact/hooks";
import type { PhoneState, Preferences } from "../api";
import { readPageConfig } from "../config";
import { Field, onSubmit, ProblemNote, useProblem } from "../forms";
import { fill, LANGUAGES, useI18n, type Language } from "../i18n";
import { pushIsOn, pushSupported, turnOnPush } from "../push";
import { useSession } from "../session";

const smsOn = readPageConfig().sms;

/** Notification preferences: the email and its confirmation, the phone when the service sends texts, push on this device, and the language. */
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
        {/* The form waits for the stored address: filled earlier, the loaded one would overwrite what was typed. */}
        {!preferences && !load.problem && <p>{m.common.loading}</p>}
        {preferences && (
          <>
            <p class={`status email-${preferences.emailStatus}`} data-testid="email-status">
              {m.settings.emailStatus[preferences.emailStatus]}
            </p>
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
                {preferences.email && (
                  <button type="button" class="secondary" disabled={emailForm.busy} onClick={() => saveEmail(null)}>
                    {m.settings.removeEmail}
                  </button>
                )}
              </div>
            </form>
          </>
        )}
      </section>
      {smsOn && preferences && (
        <PhoneSection
          state={{ phoneStatus: preferences.phoneStatus, phoneEnding: preferences.phoneEnding }}
          onChange={(state) => setPreferences({ ...preferences, ...state })}
        />
      )}
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

/**
 * The phone for texts (PUT /v1/me/phone), confirmed with the code texted to
 * it (POST /v1/me/phone/verify). The service never shows the number again:
 * only its last two digits.
 */
function PhoneSection(props: { state: PhoneState; onChange: (state: PhoneState) => void }) {
  const { m } = useI18n();
  const session = useSession()!;
  const { phoneStatus, phoneEnding } = props.state;
  const [phone, setPhone] = useState("");
  const [code, setCode] = useState("");
  const [changing, setChanging] = useState(false);
  const form = useProblem();

  const put = (value: string | null) =>
    form.run(async () => {
      props.onChange(await session.request<PhoneState>("PUT", "/v1/me/phone", { phone: value }));
      setChanging(false);
      setCode("");
    });
  const verify = () =>
    form.run(async () => {
      props.onChange(await session.request<PhoneState>("POST", "/v1/me/phone/verify", { code: code.trim() }));
      setPhone("");
    });

  const askNumber = phoneStatus === "none" || changing;
  return (
    <section aria-labelledby="phone-heading" class="card" data-testid="phone">
      <h2 id="phone-heading">{m.settings.phoneHeading}</h2>
      <p>{m.settings.phoneIntro}</p>
      <p class={`status phone-${phoneStatus}`}>{m.settings.phoneStatus[phoneStatus] ?? phoneStatus}</p>
      {phoneEnding && phoneStatus !== "none" && <p>{fill(m.settings.phoneEnding, { digits: phoneEnding })}</p>}
      {askNumber ? (
        <form onSubmit={onSubmit(() => put(phone.trim()))} noValidate>
          <Field label={m.settings.phone} hint={m.settings.phoneHint} error={form.fieldError("phone")}>
            {(attrs) => <input {...attrs} type="tel" autocomplete="tel" value={phone} onInput={(e) => setPhone(e.currentTarget.value)} />}
          </Field>
          {form.problem && <ProblemNote problem={form.problem} fieldsShown />}
          <div class="actions">
            <button type="submit" class="primary" disabled={form.busy}>
              {m.settings.sendCode}
            </button>
            {changing && (
              <button type="button" class="secondary" onClick={() => setChanging(false)}>
                {m.common.cancel}
              </button>
            )}
          </div>
        </form>
      ) : (
        <>
          {phoneStatus === "pending" && (
            <form onSubmit={onSubmit(verify)} noValidate>
              <Field label={m.settings.code} error={form.fieldError("code")}>
                {(attrs) => (
                  <input {...attrs} inputMode="numeric" autocomplete="one-time-code" maxLength={6} value={code} onInput={(e) => setCode(e.currentTarget.value)} />
                )}
              </Field>
              {form.problem && <ProblemNote problem={form.problem} fieldsShown />}
              <div class="actions">
                <button type="submit" class="primary" disabled={form.busy}>
                  {m.settings.confirmCode}
                </button>
              </div>
            </form>
          )}
          {phoneStatus !== "pending" && form.problem && <ProblemNote problem={form.problem} />}
          <div class="actions">
            <button type="button" class="secondary" disabled={form.busy} onClick={() => setChanging(true)}>
              {m.settings.changePhone}
            </button>
            <button type="button" class="secondary" disabled={form.busy} onClick={() => put(null)}>
              {m.settings.removePhone}
            </button>
          </div>
        </>
      )}
    </section>
  );
}
