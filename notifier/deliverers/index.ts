import type { NotifierConfig } from "../../lib/config.js";
import { createEmailDeliverer } from "./email.js";
import { inAppDeliverer } from "./in_app.js";
import type { Deliverers } from "./types.js";

/** In-app always; email only when SMTP_URL is set (otherwise email dead-letters, as the spec says). */
export function buildDeliverers(config: Pick<NotifierConfig, "SMTP_URL" | "SMTP_FROM">): Deliverers {
  return {
    in_app: inAppDeliverer,
    ...(config.SMTP_URL ? { email: createEmailDeliverer({ smtpUrl: config.SMTP_URL, from: config.SMTP_FROM }) } : {}),
  };
}
