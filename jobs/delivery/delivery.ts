import type { Channel } from "../../lib/notifications.js";
import { z } from "zod";
import type { Pool, Queryable } from "../../lib/db.js";
import { CONFIRMATION_TTL_HOURS } from "../../lib/email-confirmation.js";
import { hashToken, newToken } from "../../lib/secret-token.js";
import type { Logger } from "../../lib/logger.js";
import {
  CONFIRMATION_GONE,
  EMAIL_CONFIRMATION_KIND,
  NO_DELIVERER,
  reasonCategory,
  tryLockDeliveries,
  tryLockDelivery,
  unlockDeliveries,
  unlockDelivery,
} from "../../lib/notifications.js";
import { deliverTask } from "./task.js";
import { enqueue, enqueueMany } from "../queue.js";
import { DeliveryError, type Deliverers } from "./deliverers/types.js";
import type { Histogram } from "../../lib/metrics.js";
import {
  armConfirmation,
  loadForDelivery,
  loadManyForDelivery,
  recordAttempt,
  recordAttempts,
  type AttemptOutcome,
  type DeliverableNotification,
} from "./store.js";

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

/** The delivery's own metric; the notifier's registry provides it (notifier/metrics.ts). */
export interface DeliveryMetrics {
  /** Duration of one deliverer call, by channel and outcome (sent, failed). */
  deliverySeconds: Histogram;
}

export interface DeliveryOptions {
  pool: Pool;
  deliverers: Deliverers;
  logger: Logger;
  attempts?: number;
  metrics?: DeliveryMetrics;
}

/** One attempt's outcome: what the row records, and when a round that goes on makes its next attempt. */
interface Attempted extends AttemptOutcome {
  /** Set when the round goes on: the wait before its next attempt. */
  retryInMs?: number;
}

/**
 * The attempts of both delivery jobs: one attempt of a notification read
 * under its delivery lock, and what it leaves the row as. `attempt` is its
 * place in the round (1…attempts): the last one, or a permanent failure
 * (provider rejection, no address), dead-letters.
 */
function attempter({ deliverers, logger, attempts = DELIVERY_ATTEMPTS, metrics }: DeliveryOptions) {
  return async (client: Queryable, notification: DeliverableNotification, attempt: number): Promise<Attempted> => {
    const { id, channel } = notification;
    const deliverer = deliverers[channel];
    if (!deliverer) {
      logger.warn({ notificationId: id, channel }, "notifier: no deliverer; dead-lettered");
      return { id, status: "dead_letter", lastError: `${NO_DELIVERER} ${channel}` };
    }
    const deliverable = notification.kind === EMAIL_CONFIRMATION_KIND ? await withConfirmationToken(client, notification) : notification;
    if (!deliverable) {
      logger.info({ notificationId: id }, "notifier: email confirmation no longer pending; dead-lettered");
      return { id, status: "dead_letter", lastError: CONFIRMATION_GONE };
    }
    const timer = metrics?.deliverySeconds.startTimer({ channel });
    try {
      await deliverer.deliver(deliverable, client);
      timer?.({ outcome: "sent" });
      logger.info({ notificationId: id, eventId: notification.sourceEventId, channel }, "notifier: delivered");
      return { id, status: "sent", lastError: null };
    } catch (err) {
      timer?.({ outcome: "failed" });
      const lastError = (err as Error).message;
      const permanent = reasonCategory(lastError) === "permanent";
      const exhausted = permanent || attempt >= attempts;
      logger.warn(
        { notificationId: id, channel, attempt, permanent, err: { message: lastError } },
        exhausted ? "notifier: delivery dead-lettered" : "notifier: delivery attempt failed",
      );
      if (exhausted) return { id, status: "dead_letter", lastError };
      // A Retry-After (a push service's 429 or 503) is honoured: the wait is the longer of it and the backoff.
      const retryAfterMs = err instanceof DeliveryError ? (err.retryAfterMs ?? 0) : 0;
      return { id, status: "failed", lastError, retryInMs: Math.max(backoffMs(attempt), retryAfterMs) };
    }
  };
}

const deliverableNow = (n: DeliverableNotification | null): n is DeliverableNotification =>
  n !== null && (n.status === "pending" || n.status === "failed");

/** When the notification's deliverer holds it back (a paused push origin), or null (deliverers/types.ts heldUntil). */
function heldUntil({ deliverers }: DeliveryOptions, client: Queryable, notification: DeliverableNotification): Promise<Date | null> {
  return deliverers[notification.channel]?.heldUntil?.(notification, client) ?? Promise.resolve(null);
}

/**
 * Puts held notifications back until their time: a notification__deliver job
 * then, with no attempt counted, and the job that found them ends, so no slot
 * waits. The row's updated_at moves, so the stall sweep does not take the wait
 * for a dead worker.
 */
async function putBack(client: Queryable, held: readonly { id: string; channel: Channel; until: Date }[], logger: Logger): Promise<void> {
  if (held.length === 0) return;
  await enqueueMany(
    client,
    held.map(({ id, channel, until }) => ({ task: deliverTask(channel), payload: { notificationId: id }, options: { runAt: until } })),
  );
  await client.query(`update notification set updated_at = now() where id = any($1::uuid[])`, [held.map((h) => h.id)]);
  logger.info({ notifications: held.length, until: held[0]!.until }, "notifier: deliveries put back until their push origin's pause ends");
}

/**
 * Delivers one notification through its channel's deliverer. Each attempt
 * updates attempts, last_error and updated_at; the row is `failed` while
 * retries remain and `dead_letter` when they are exhausted or the failure is
 * permanent (no deliverer, no address, provider rejection). A round has 3
 * attempts counted on the row, so a re-run after a crash resumes it. The job runs on
 * one client holding an advisory lock on the notification, so a duplicate job
 * (stall sweep, replay) never delivers it twice at once. The graphile-worker
 * task (jobs/delivery/task.ts) calls the function this returns.
 */
export function createDelivery(options: DeliveryOptions) {
  const { pool, logger, attempts = DELIVERY_ATTEMPTS } = options;
  const attempt = attempter(options);
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
      if (!deliverableNow(notification)) return;
      // Resume the round where a dead worker left it: a crash never buys extra attempts.
      for (let n = Math.min(notification.roundAttempts + 1, attempts); ; n++) {
        // Before every attempt: this round's own timeout may be the one that paused the origin.
        const until = await heldUntil(options, client, notification);
        if (until) return await putBack(client, [{ id: notificationId, channel: notification.channel, until }], logger);
        const outcome = await attempt(client, notification, n);
        await recordAttempt(client, notificationId, outcome.status, outcome.lastError);
        if (outcome.retryInMs === undefined) return;
        // Past the backoff's cap (a long Retry-After) the round's next attempt is a job of its own at that time,
        // so no job sleeps for minutes.
        if (outcome.retryInMs > BACKOFF_CAP_MS) {
          await enqueue(client, deliverTask(notification.channel), { notificationId }, { runAt: new Date(Date.now() + outcome.retryInMs) });
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, outcome.retryInMs));
      }
    } finally {
      // A client whose unlock failed may still hold the lock: destroy it rather than pool it.
      if (locked) await unlockDelivery(client, notificationId).catch(() => (broken = true));
      client.release(broken);
    }
  };
}

/**
 * Delivers a batch of notifications (the alert fan-out's:
 * jobs/queue.ts enqueueDeliveryBatches) on one client: their delivery locks,
 * their rows, their outcomes and their unlocks a statement each for the whole
 * batch, and the sends at once (docs/decisions/0084). Each gets one attempt
 * here, its round's next; a notification whose round goes on is queued as a
 * notification__deliver job of its own at its backoff (or Retry-After), once its
 * lock is released, and that job resumes the round. One whose lock another
 * delivery holds is left to that delivery. The graphile-worker task
 * (jobs/delivery/task.ts) calls the function this returns.
 */
export function createBatchDelivery(options: DeliveryOptions) {
  const { pool, logger, attempts = DELIVERY_ATTEMPTS } = options;
  const attempt = attempter(options);
  return async (notificationIds: readonly string[]): Promise<void> => {
    const client = await pool.connect();
    let locked: string[] = [];
    let broken = false;
    try {
      locked = await tryLockDeliveries(client, notificationIds);
      if (locked.length < notificationIds.length) {
        logger.info({ notifications: notificationIds.length - locked.length }, "notifier: deliveries already running elsewhere");
      }
      const loaded = (await loadManyForDelivery(client, locked)).filter(deliverableNow);
      const held: { id: string; channel: Channel; until: Date }[] = [];
      const due: DeliverableNotification[] = [];
      for (const n of loaded) {
        const until = await heldUntil(options, client, n);
        if (until) held.push({ id: n.id, channel: n.channel, until });
        else due.push(n);
      }
      const outcomes = await Promise.all(due.map((n) => attempt(client, n, Math.min(n.roundAttempts + 1, attempts))));
      await recordAttempts(client, outcomes);
      const unlocking = locked;
      locked = [];
      await unlockDeliveries(client, unlocking);
      await putBack(client, held, logger);
      const now = Date.now();
      await enqueueMany(
        client,
        outcomes
          .map((o, i) => ({ ...o, channel: due[i]!.channel }))
          .filter((o) => o.retryInMs !== undefined)
          .map((o) => ({ task: deliverTask(o.channel), payload: { notificationId: o.id }, options: { runAt: new Date(now + o.retryInMs!) } })),
      );
    } finally {
      // A client whose unlock failed may still hold the locks: destroy it rather than pool it.
      if (locked.length > 0) await unlockDeliveries(client, locked).catch(() => (broken = true));
      client.release(broken);
    }
  };
}
