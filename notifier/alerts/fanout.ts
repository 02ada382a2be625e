import { ALERTS_FANOUT_TASK, DAILY_ALERT_CAP, FANOUT_BATCH_SIZE, fanoutJobKey, NEARBY_DELIVERY_PRIORITY } from "../../lib/alerts.js";
import { withTransaction, type Pool, type Queryable } from "../../lib/db.js";
import { EventType } from "../../lib/events.js";
import { enqueueDeliveries } from "../../lib/notifications.js";
import type { QueuedJob } from "../queued-job.js";
import { channelsFor, emailPreferences, type NewNotification } from "../store.js";
import { nearbyLostDraft, type AlertReport } from "./messages.js";
import * as store from "./store.js";

/**
 * The alert fan-out: when a lost report opens or moves, every subscriber
 * whose radius covers its coarse point gets one nearby_lost notification, in
 * batches, each a graphile-worker job of its own:
 *
 *   consumer (the event's transaction, notifier/reactions.ts) → job batch 0
 *   batch 0: record the fan-out (alert_fanout) and claim every subscriber in
 *            range in alert_ledger → job batch 1
 *   batch n: decide the next ≤ 1,000 (notify, or defer past the daily cap),
 *            write their notifications and delivery jobs → job batch n+1
 *
 * Each batch is one transaction, so a worker that dies mid-batch leaves
 * nothing behind, and the ledger's primary key (report, subscriber) makes
 * it at most once per report per subscriber across replays and events.
 */

export interface FanoutStart extends store.FanoutRef {
  eventType: string;
}

/**
 * The reaction to an event that starts a fan-out: its batch 0, queued by the
 * consumer before the ack. Its key differs from the batches' (which share
 * one), so a redelivered event replaces only a start still waiting; a start
 * that finds its fan-out already recorded does nothing.
 */
export function fanoutStartJob(start: FanoutStart): QueuedJob {
  return {
    task: ALERTS_FANOUT_TASK,
    payload: { fanoutId: start.eventId, batch: 0, reportId: start.reportId, eventType: start.eventType },
    jobKey: `${fanoutJobKey(start.reportId, start.eventId)}:start`,
    maxAttempts: store.FANOUT_JOB_MAX_ATTEMPTS,
  };
}

export interface FanoutOptions {
  batchSize?: number;
  dailyCap?: number;
}

export type BatchResult =
  | { outcome: "stale" }
  | { outcome: "stopped"; reason: string }
  | { outcome: "collected"; recipients: number }
  | { outcome: "batch"; notified: number; deferred: number; skipped: number; done: boolean };

/** Why a report's alerts must stop, or null while it may still alert. */
function stopReason(fanout: store.LockedFanout): string | null {
  if (fanout.moderationState) return `report ${fanout.moderationState}`;
  if (fanout.reportStatus !== "open") return `report ${fanout.reportStatus}`;
  return null;
}

/**
 * Runs one batch of a fan-out. The start (batch 0 with `start`) records the
 * fan-out first, in the same transaction. A job whose batch is not the
 * fan-out's next (a replay, a duplicate from the stall sweep) is stale and
 * does nothing. A report closed, quarantined or removed since stops the fan-out.
 */
export async function runFanoutBatch(
  pool: Pool,
  fanoutId: string,
  batch: number,
  options: FanoutOptions = {},
  start?: Omit<FanoutStart, "eventId">,
): Promise<BatchResult> {
  const { batchSize = FANOUT_BATCH_SIZE, dailyCap = DAILY_ALERT_CAP } = options;
  return withTransaction(pool, async (client): Promise<BatchResult> => {
    if (batch === 0 && start) await store.insertFanout(client, { ...start, eventId: fanoutId });
    const fanout = await store.lockFanout(client, fanoutId);
    if (!fanout || fanout.status !== "running" || fanout.nextBatch !== batch) return { outcome: "stale" };
    const reason = stopReason(fanout);
    if (reason) {
      await store.stopFanout(client, fanoutId, reason);
      return { outcome: "stopped", reason };
    }
    if (batch === 0) {
      const recipients = await store.collectRecipients(client, fanout);
      await store.recordCollected(client, fanoutId, recipients, batchSize);
      if (recipients > 0) await store.queueFanoutBatch(client, fanout, 1);
      return { outcome: "collected", recipients };
    }
    const decided = await store.decideBatch(client, fanout, fanout.afterActor, batchSize, dailyCap);
    const notified = decided.filter((d) => d.status === "notified");
    await notify(client, fanout, notified);
    const done = decided.length < batchSize;
    const count = (status: store.Decided["status"]) => decided.filter((d) => d.status === status).length;
    await store.recordBatch(client, fanoutId, {
      afterActor: decided.at(-1)?.actorId ?? null,
      notified: notified.length,
      deferred: count("deferred"),
      skipped: count("skipped"),
      done,
    });
    if (!done) await store.queueFanoutBatch(client, fanout, batch + 1);
    return { outcome: "batch", notified: notified.length, deferred: count("deferred"), skipped: count("skipped"), done };
  });
}

/** The batch's notifications in one insert (in-app ones sent), and their email deliveries in one add_jobs, behind other notifications'. */
async function notify(client: Queryable, fanout: store.LockedFanout, recipients: store.Decided[]): Promise<void> {
  if (recipients.length === 0) return;
  const report: AlertReport = { reportId: fanout.reportId, species: fanout.species, lat: fanout.lat, lon: fanout.lon, lastSeenAt: fanout.lastSeenAt };
  const preferences = await emailPreferences(client, recipients.map((r) => r.actorId));
  const rows: NewNotification[] = recipients.flatMap((recipient) => {
    const draft = nearbyLostDraft(report, recipient);
    return channelsFor(draft.kind, preferences.get(recipient.actorId)).map((channel) => ({
      ...draft,
      sourceEventId: fanout.eventId,
      eventType: fanout.eventType as EventType,
      channel,
    }));
  });
  const inserted = await store.insertAlertNotifications(client, rows);
  await enqueueDeliveries(client, store.needingDelivery(inserted), { priority: NEARBY_DELIVERY_PRIORITY });
}

/** A fan-out untouched this long lost its job (a batch touches the row on every commit). */
export const FANOUT_STALLED_AFTER_SECONDS = 120;

/**
 * The stall sweep: re-queues fan-out jobs a dead worker still holds (locked
 * longer than any batch runs: graphile-worker would keep them for hours; a
 * start among them has not even recorded its fan-out yet), and the next batch
 * of running fan-outs that have not moved for as long (a job that used up its
 * attempts). Returns how many jobs it queued.
 */
export async function requeueStalledFanouts(pool: Pool, olderThanSeconds = FANOUT_STALLED_AFTER_SECONDS): Promise<number> {
  return withTransaction(pool, async (client) => {
    const orphaned = await store.requeueOrphanedFanoutJobs(client, olderThanSeconds);
    const stalled = await store.claimStalledFanouts(client, olderThanSeconds, 100);
    for (const fanout of stalled) await store.queueFanoutBatch(client, fanout, fanout.nextBatch);
    return orphaned + stalled.length;
  });
}
