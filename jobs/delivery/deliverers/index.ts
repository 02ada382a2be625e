import type { NotifierConfig } from "../../../lib/config.js";
import type { Pool } from "../../../lib/db.js";
import type { Registry } from "../../../lib/metrics.js";
import { developmentVapidKeys } from "../../../lib/push.js";
import type { Region } from "../../../lib/sms/phone.js";
import { createEmailDeliverer } from "./email.js";
import { inAppDeliverer } from "./in-app.js";
import { createPushDeliverer } from "./push.js";
import { createSmsDeliverer } from "./sms.js";
import type { Deliverers } from "./types.js";

type PushSettings = "VAPID_PUBLIC_KEY" | "VAPID_PRIVATE_KEY" | "VAPID_SUBJECT" | "PUSH_ENDPOINT_ALLOW" | "PUSH_DEADLINE_MS" | "PUSH_ORIGIN_PAUSE_MS";
type SmsSettings =
  | "SMS_API_BASE_URL"
  | "SMS_ACCOUNT_SID"
  | "SMS_AUTH_TOKEN"
  | "SMS_FROM"
  | "SMS_DEFAULT_REGION"
  | "SMS_DAILY_LIMIT_PER_RECIPIENT"
  | "SMS_DAILY_SEGMENTS"
  | "PUBLIC_BASE_URL";

/** The VAPID subject of a development stack, whose keys come from .data/ (lib/push.ts). */
const DEVELOPMENT_VAPID_SUBJECT = "mailto:push@animal-safety.invalid";

/**
 * In-app always; email only when SMTP_URL is set (otherwise email dead-letters, as the spec says); push when
 * the notifier's pool is given (it reads and deletes subscriptions), with the VAPID keys of the settings or,
 * when they are unset (development only: lib/config.ts requires them elsewhere), the pair kept in .data/.
 * sms when the pool is given and the SMS provider's account, token and number are set (its metrics on `registry`).
 */
export function buildDeliverers(
  config: Pick<NotifierConfig, "SMTP_URL" | "SMTP_FROM"> &
    Partial<Pick<NotifierConfig, "API_PUBLIC_BASE_URL" | "ALERT_UNSUBSCRIBE_SECRET" | "SMTP_DEADLINE_MS" | PushSettings | SmsSettings>>,
  pool?: Pool,
  registry?: Registry,
): Deliverers {
  // Alert emails get one-click unsubscribe headers when the notifier can sign the link (always, from main.ts).
  const unsubscribe =
    config.API_PUBLIC_BASE_URL && config.ALERT_UNSUBSCRIBE_SECRET
      ? { publicBaseUrl: config.API_PUBLIC_BASE_URL, secret: config.ALERT_UNSUBSCRIBE_SECRET }
      : undefined;
  const { VAPID_PUBLIC_KEY: publicKey, VAPID_PRIVATE_KEY: privateKey } = config;
  const push = pool
    ? createPushDeliverer({
        pool,
        vapid: publicKey && privateKey ? { publicKey, privateKey } : () => developmentVapidKeys(),
        subject: config.VAPID_SUBJECT ?? DEVELOPMENT_VAPID_SUBJECT,
        publicBaseUrl: config.API_PUBLIC_BASE_URL ?? "http://localhost:8080",
        allowHosts: config.PUSH_ENDPOINT_ALLOW ?? [],
        deadlineMs: config.PUSH_DEADLINE_MS,
        originPauseMs: config.PUSH_ORIGIN_PAUSE_MS,
      })
    : undefined;
  const { SMS_ACCOUNT_SID: accountSid, SMS_AUTH_TOKEN: authToken, SMS_FROM: from } = config;
  const sms =
    pool && accountSid && authToken && from
      ? createSmsDeliverer({
          pool,
          apiBaseUrl: config.SMS_API_BASE_URL ?? "https://api.twilio.com",
          accountSid,
          authToken,
          from,
          publicBaseUrl: config.PUBLIC_BASE_URL ?? config.API_PUBLIC_BASE_URL ?? "http://localhost:8080",
          defaultRegion: config.SMS_DEFAULT_REGION as Region | undefined,
          dailyLimitPerRecipient: config.SMS_DAILY_LIMIT_PER_RECIPIENT ?? 10,
          dailySegments: config.SMS_DAILY_SEGMENTS ?? 1000,
          registry,
        })
      : undefined;
  return {
    in_app: inAppDeliverer,
    ...(push ? { push } : {}),
    ...(sms ? { sms } : {}),
    ...(config.SMTP_URL
      ? {
          email: createEmailDeliverer({
            smtpUrl: config.SMTP_URL,
            from: config.SMTP_FROM,
            unsubscribe,
            publicBaseUrl: config.API_PUBLIC_BASE_URL,
            deadlineMs: config.SMTP_DEADLINE_MS,
          }),
        }
      : {}),
  };
}
