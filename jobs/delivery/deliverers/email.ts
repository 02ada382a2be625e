import net from "node:net";
import nodemailer from "nodemailer";
import SMTPTransport from "nodemailer/lib/smtp-transport/index.js";
import { DEFAULT_DEADLINES_MS, withDeadline } from "../../../lib/deadline.js";
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
  /** The total deadline of one message, connecting included (SMTP_DEADLINE_MS). */
  deadlineMs?: number;
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

/**
 * Sends through the SMTP server of SMTP_URL, each message on a connection of
 * its own, under a total deadline (SMTP_DEADLINE_MS, 30 s): from connecting
 * to the server's last answer. Past it the connection is destroyed and the
 * attempt fails as a timeout (ETIMEDOUT, transient). nodemailer's own timers
 * are idle ones, which a server answering a byte every few seconds never
 * trips; and a pooled transport's connection cannot be cut for one message,
 * so the socket is this deliverer's (nodemailer's getSocket) and the
 * deadline destroys it (docs/decisions/0090). The transport is built as an
 * SMTPTransport: nodemailer.createTransport given `url` reads the URL alone
 * and drops every other option.
 */
export function createEmailDeliverer({ smtpUrl, from, unsubscribe, publicBaseUrl, deadlineMs = DEFAULT_DEADLINES_MS.smtpMessage }: EmailDelivererOptions): Deliverer {
  return {
    async deliver(notification) {
      if (!notification.email) throw new DeliveryError(NO_ADDRESS);
      const text = emailText(notification, publicBaseUrl);
      let socket: net.Socket | null = null;
      let cut = false;
      const smtp = new SMTPTransport({
        url: smtpUrl,
        greetingTimeout: 5_000,
        socketTimeout: 10_000,
        // The connection nodemailer speaks SMTP on (and upgrades to TLS, for smtps: or STARTTLS): ours, so the deadline can cut it.
        getSocket(settings, callback) {
          if (cut) return callback(new Error("cut at the deadline"), null);
          // As nodemailer's own connection: the URL's port, else 465 for smtps: and 587 for smtp:.
          const port = Number(settings.port) || (settings.secure ? 465 : 587);
          const opened = net.connect({ host: settings.host ?? "localhost", port });
          socket = opened;
          const failed = (err: Error) => callback(err, null);
          opened.once("error", failed);
          opened.once("connect", () => {
            opened.removeListener("error", failed);
            callback(null, { connection: opened });
          });
        },
      });
      const transport = nodemailer.createTransport(smtp);
      try {
        await withDeadline(
          deadlineMs,
          "the email",
          transport.sendMail({
            from,
            to: notification.email,
            subject: notification.subject,
            text,
            headers: { "X-Notification-Id": notification.id, ...(unsubscribe ? listUnsubscribeHeaders(notification, unsubscribe) : {}) },
          }),
          () => {
            cut = true;
            (socket as net.Socket | null)?.destroy();
          },
        );
      } catch (err) {
        throw new DeliveryError(describeSmtpFailure(err));
      } finally {
        transport.close();
      }
    },
  };
}
