import { z } from "zod";
import type { Pool, Queryable } from "../lib/db.js";
import { CONFIRMATION_TTL_HOURS } from "../lib/email-confirmation.js";
import { hashToken, newToken } from "../lib/secret-token.js";
import type { Logger } from "../lib/logger.js";
import {
  CONFIRMATION_GONE,
  EMAIL_CONFIRMATION_KIND,
  NO_DELIVERER,
  reasonCategory,
  tryLockDelivery,
  unlockDelivery,
} from "../lib/notifications.js";
import { NOTIFICATION_DELIVER_TASK } from "../lib/job-payloads.js";
import { enqueue } from "../lib/queue.js";
import { DeliveryError, type Deliverers } from "./deliverers/types.js";
import type { NotifierMetrics } from "./metrics.js";
import { armConfirmation, loadForDelivery, recordAttempt, type DeliverableNotification } from "./store.js";

/** The spec's in-process retry: 3 attempts, exponential backoff capped at 2 s. */
export const DELIVERY_ATTEMPTS = 3;
export const BACKOFF_BASE_MS = 250;
export const BACKOFF_CAP_MS = 2_000;

/** Wait before attempt n+1 (n = 1, 2, …): 250 ms, 500 ms, 1 s, 2 s, 2 s, … */
export function backoffMs(attempt: number): number {
  return Math.min(BACKOFF_BASE_MS * 2 ** (attempt - 1), BACKOFF_CAP_MS);
}

/**
 * A confirmation email gets a new token on each delivery run, so the raw
 * token is never in a row, an event or a job: only its hash is stored, with
 * an expiry counted from now, and the token rides on the notification to the
 * email deliverer, which puts the link in the body. It goes to the address the
 * confirmation is for. Null when that confirmation is gone.
 */
async function withConfirmationToken(client: Queryable, notification: DeliverableNotification): Promise<DeliverableNotification | null> {
  const id = notification.data.emailConfirmationId;
  if (!z.uuid().safeParse(id).success) return null;
  const token = newToken();
  const email = await armConfirmation(client, id!, notification.recipientActorId, hashToken(token), CONFIRMATION_TTL_HOURS);
  return email === null ? null : { ...notification, email, confirmationToken: token };
}

export interface DeliveryOptions {
  pool: Pool;
  deliverers: Deliverers;
  logger: Logger;
  attempts?: number;
  metrics?: NotifierMetrics;
}

/**
 * Delivers one notification through its channel's deliverer. Each attempt
 * updates attempts, last_error and updated_at; the row is `failed` while
 * retries remain and `dead_letter` when they are exhausted or the failure is
 * permanent (no deliverer, no address, provider rejection). A round has 3
 * attempts counted on the row, so a re-run after a crash resumes it. The job runs on
 * one client holding an advisory lock on the notification, so a duplicate job
 * (stall sweep, replay) never delivers it twice at once. The graphile-worker
 * task (jobs/notification-deliver.ts) calls the function this returns.
 */
export function createDelivery({ pool, deliverers, logger, attempts = DELIVERY_ATTEMPTS, metrics }: DeliveryOptions) {
  return async (notificationId: string): Promise<void> => {
    const client = await pool.connect();
    let locked = false;
    let broken = false;
    try {
      locked = await tryLockDelivery(client, notificationId);
      if (!locked) {
        logger.info({ notificationId }, "notifier: delivery already running elsewhere");
        return;
      }
      const notification = await loadForDelivery(client, notificationId);
      if (!notification || (notification.status !== "pending" && notification.status !== "failed")) return;

      const deliverer = deliverers[notification.channel];
      if (!deliverer) {
        await recordAttempt(client, notificationId, "dead_letter", `${NO_DELIVERER} ${notification.channel}`);
        logger.warn({ notificationId, channel: notification.channel }, "notifier: no deliverer; dead-lettered");
        return;
      }
      const deliverable = notification.kind === EMAIL_CONFIRMATION_KIND ? await withConfirmationToken(client, notification) : notification;
      if (!deliverable) {
        await recordAttempt(client, notificationId, "dead_letter", CONFIRMATION_GONE);
        logger.info({ notificationId }, "notifier: email confirmation no longer pending; dead-lettered");
        return;
      }
      // Resume the round where a dead worker left it: a crash never buys extra attempts.
      const firstAttempt = Math.min(notification.roundAttempts + 1, attempts);
      for (let attempt = firstAttempt; attempt <= attempts; attempt++) {
        const timer = metrics?.deliverySeconds.startTimer({ channel: notification.channel });
        try {
          await deliverer.deliver(deliverable, client);
          timer?.({ outcome: "sent" });
          await recordAttempt(client, notificationId, "sent", null);
          logger.info({ notificationId, eventId: notification.sourceEventId, channel: notification.channel }, "notifier: delivered");
          return;
        } catch (err) {
          timer?.({ outcome: "failed" });
          const lastError = (err as Error).message;
          const permanent = reasonCategory(lastError) === "permanent";
          const exhausted = permanent || attempt === attempts;
          await recordAttempt(client, notificationId, exhausted ? "dead_letter" : "failed", lastError);
          logger.warn(
            { notificationId, channel: notification.channel, attempt, permanent, err: { message: lastError } },
            exhausted ? "notifier: delivery dead-lettered" : "notifier: delivery attempt failed",
          );
          if (exhausted) return;
          // A Retry-After (a push service's 429 or 503) is honoured: within the backoff's cap the wait is the longer of the
          // two; past it the round's next attempt is a job of its own at that time, so no job sleeps for minutes.
          const retryAfterMs = err instanceof DeliveryError ? (err.retryAfterMs ?? 0) : 0;
          if (retryAfterMs > BACKOFF_CAP_MS) {
            await enqueue(client, NOTIFICATION_DELIVER_TASK, { notificationId }, { runAt: new Date(Date.now() + retryAfterMs) });
            return;
          }
          await new Promise((resolve) => setTimeout(resolve, Math.max(backoffMs(attempt), retryAfterMs)));
        }
      }
    } finally {
      // A client whose unlock failed may still hold the lock: destroy it rather than pool it.
      if (locked) await unlockDelivery(client, notificationId).catch(() => (broken = true));
      client.release(broken);
    }
  };
}
