import nodemailer from "nodemailer";
import { confirmationLink } from "../../../lib/email-confirmation.js";
import { NO_ADDRESS } from "../../../lib/notifications.js";
import type { DeliverableNotification } from "../store.js";
import { listUnsubscribeHeaders, type UnsubscribeLinks } from "./alert-headers.js";
import { DeliveryError, type Deliverer } from "./types.js";

export interface EmailDelivererOptions {
  smtpUrl: string;
  from: string;
  /** Signs the one-click unsubscribe links of alert emails (alert-headers.ts). */
  unsubscribe?: UnsubscribeLinks;
  /** The API's public base URL, where a confirmation email's link points. */
  publicBaseUrl?: string;
}

interface SmtpFailure {
  code?: string;
  responseCode?: number;
  message?: string;
}

/**
 * Turns a nodemailer failure into last_error text the reason classifier
 * reads: `smtp <code>: …` when the server answered, else the socket error
 * code (ECONNREFUSED, ETIMEDOUT, …) with its message.
 */
export function describeSmtpFailure(err: unknown): string {
  const e = (err ?? {}) as SmtpFailure;
  const message = e.message ?? String(err);
  if (typeof e.responseCode === "number") return `smtp ${e.responseCode}: ${message}`;
  return e.code ? `${e.code}: ${message}` : message;
}

/** The text of the email: a confirmation email's body ends with its link, built here so the token is in no stored row. */
function emailText(notification: DeliverableNotification, publicBaseUrl: string | undefined): string {
  if (notification.confirmationToken === undefined) return notification.body;
  if (!publicBaseUrl) throw new DeliveryError("no public base URL configured for the confirmation link");
  return `${notification.body}\n\n${confirmationLink(publicBaseUrl, notification.confirmationToken)}\n`;
}

/** Sends through the SMTP server of SMTP_URL; one pooled transport per process. */
export function createEmailDeliverer({ smtpUrl, from, unsubscribe, publicBaseUrl }: EmailDelivererOptions): Deliverer {
  const transport = nodemailer.createTransport({
    url: smtpUrl,
    pool: true,
    maxConnections: 5,
    // Bounded, so three attempts and their backoff finish well inside a job's lifetime.
    connectionTimeout: 5_000,
    greetingTimeout: 5_000,
    socketTimeout: 10_000,
  });
  return {
    async deliver(notification) {
      if (!notification.email) throw new DeliveryError(NO_ADDRESS);
      const text = emailText(notification, publicBaseUrl);
      try {
        await transport.sendMail({
          from,
          to: notification.email,
          subject: notification.subject,
          text,
          headers: { "X-Notification-Id": notification.id, ...(unsubscribe ? listUnsubscribeHeaders(notification, unsubscribe) : {}) },
        });
      } catch (err) {
        throw new DeliveryError(describeSmtpFailure(err));
      }
    },
    close() {
      transport.close();
    },
  };
}
