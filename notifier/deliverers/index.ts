import type { NotifierConfig } from "../../lib/config.js";
import { createEmailDeliverer } from "./email.js";
import { inAppDeliverer } from "./in-app.js";
import type { Deliverers } from "./types.js";

/** In-app always; email only when SMTP_URL is set (otherwise email dead-letters, as the spec says). */
export function buildDeliverers(
  config: Pick<NotifierConfig, "SMTP_URL" | "SMTP_FROM"> & Partial<Pick<NotifierConfig, "API_PUBLIC_BASE_URL" | "ALERT_UNSUBSCRIBE_SECRET">>,
): Deliverers {
  // Alert emails get one-click unsubscribe headers when the notifier can sign the link (always, from main.ts).
  const unsubscribe =
    config.API_PUBLIC_BASE_URL && config.ALERT_UNSUBSCRIBE_SECRET
      ? { publicBaseUrl: config.API_PUBLIC_BASE_URL, secret: config.ALERT_UNSUBSCRIBE_SECRET }
      : undefined;
  return {
    in_app: inAppDeliverer,
    ...(config.SMTP_URL
      ? {
          email: createEmailDeliverer({
            smtpUrl: config.SMTP_URL,
            from: config.SMTP_FROM,
            unsubscribe,
            publicBaseUrl: config.API_PUBLIC_BASE_URL,
          }),
        }
      : {}),
  };
}
