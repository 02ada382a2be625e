import { DAILY_ALERT_CAP, FANOUT_BATCH_SIZE, MAX_ALERT_RESENDS, NEARBY_DELIVERY_BATCH, NEARBY_DELIVERY_PRIORITY } from "../../lib/alerts.js";
import { withTransaction, type Pool, type Queryable } from "../../lib/db.js";
import { EventType } from "../../lib/events.js";
import { ALERTS_FANOUT_TASK } from "./task.js";
import { enqueueDeliveryBatches } from "../queue.js";
import type { QueuedJob } from "../queued-job.js";
import type { ReactionCheck } from "../reaction-checks.js";
import { channelsFor, emailPreferences } from "../../lib/notification-rows.js";
import { nearbyLostTexts, textIndex } from "./messages.js";
import { insertNearbyNotifications, type NearbyRow } from "./notifications.js";
import * as store from "./store.js";

/**
 * The alert fan-out: when a lost report opens or moves, every subscriber
 * whose radius covers its coarse point gets one nearby_lost notification, in
 * batches, each a graphile-worker job of its own:
 *
 *   consumer (the event's transaction, notifier/reactions.ts) → job batch 0
 *   batch 0: record the fan-out (alert_fanout) and store every subscriber in
 *            range as its batches of ≤ 1,000 (alert_fanout_batch), leaving
 *            out those already at the day's cap → job batch 1
 *   batch n: decide batch n's subscribers (notify with a ledger row, or
 *            defer past the daily cap with none), write their
 *            notifications and delivery jobs → job for the next batch
 *            (a batch mostly past the cap defers the capped subscribers of
 *            the later batches at once, dropping the batches left empty)
 *
 * A subscriber deferred has no row until the morning digest finds the
 * report through their subscription (digest.ts). Each batch is one
 * transaction, so a worker that dies mid-batch leaves nothing behind, and
 * the ledger's primary key (report, subscriber) makes it at most once per
 * report per subscriber across replays and events. A move's fan-out (a
 * re-send) is stopped at batch 0 once MAX_ALERT_RESENDS earlier re-sends of
 * the report collected anyone.
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
export function fanoutStartJob(start: FanoutStart): QueuedJob<typeof ALERTS_FANOUT_TASK> {
  return {
    task: ALERTS_FANOUT_TASK,
    payload: { fanoutId: start.eventId, batch: 0, reportId: start.reportId, eventType: start.eventType },
    options: { key: { reportId: start.reportId, eventId: start.eventId, start: true } },
  };
}

type FanoutStartJob = QueuedJob<typeof ALERTS_FANOUT_TASK> & { payload: { batch: 0; reportId: string; eventType: string } };

const isFanoutStart = (job: QueuedJob): job is FanoutStartJob => job.task === ALERTS_FANOUT_TASK && job.payload.batch === 0;

/**
 * The consumer's check of its fan-out starts: those that would find no
 * subscriber are recorded as done at once (store.uncoveredFanoutsSql), in the
 * statement of the consumer's reaction checks, and their jobs dropped.
 */
export const uncoveredFanoutCheck: ReactionCheck<FanoutStartJob> = {
  name: "uncovered-fanouts",
  applies: isFanoutStart,
  keyOf: (job) => job.payload.fanoutId,
  sql: (jobs, param) => {
    const starts = jobs.map((job) => job.payload);
    return store.uncoveredFanoutsSql(
      {
        eventIds: param(starts.map((s) => s.fanoutId), "uuid[]"),
        reportIds: param(starts.map((s) => s.reportId), "uuid[]"),
        eventTypes: param(starts.map((s) => s.eventType), "text[]"),
      },
      param(FANOUT_BATCH_SIZE, "int"),
    );
  },
};

export interface FanoutOptions {
  batchSize?: number;
  dailyCap?: number;
  /** nearby_lost notifications per delivery job (NOTIFIER_ALERT_DELIVERY_BATCH). */
  deliveryBatch?: number;
}

export type BatchResult =
  | { outcome: "stale" }
  | { outcome: "stopped"; reason: string }
  | { outcome: "collected"; recipients: number; deferred: number }
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
  const { batchSize = FANOUT_BATCH_SIZE, dailyCap = DAILY_ALERT_CAP, deliveryBatch = NEARBY_DELIVERY_BATCH } = options;
  return withTransaction(pool, async (client): Promise<BatchResult> => {
    await store.commitWithoutWaitingForFlush(client);
    if (batch === 0 && start) await store.insertFanout(client, { ...start, eventId: fanoutId });
    const fanout = await store.lockFanout(client, fanoutId);
    if (!fanout || fanout.status !== "running" || fanout.nextBatch !== batch) return { outcome: "stale" };
    const reason = stopReason(fanout);
    if (reason) {
      await store.stopFanout(client, fanoutId, reason);
      return { outcome: "stopped", reason };
    }
    if (batch === 0) {
      if (fanout.eventType === EventType.ReportUpdated && (await store.resendsOfReport(client, fanout, fanout.eventType)) >= MAX_ALERT_RESENDS) {
        const used = `the report's alerts were re-sent ${MAX_ALERT_RESENDS} times already`;
        await store.stopFanout(client, fanoutId, used);
        return { outcome: "stopped", reason: used };
      }
      const claimed = await store.collectRecipients(client, fanout, dailyCap, batchSize);
      const schedule = await store.recordCollected(client, fanoutId, claimed, batchSize);
      if (claimed.pending > 0) await store.queueFanoutBatch(client, fanout, 1, schedule);
      return { outcome: "collected", recipients: claimed.pending + claimed.deferred, deferred: claimed.deferred };
    }
    const decided = await store.decideBatch(client, fanout, batch, dailyCap);
    await notify(client, fanout, decided.notified, deliveryBatch);
    let { deferred, next } = decided;
    // Mostly past the cap: other fan-outs in the area reached it since this one was collected (a burst
    // of reports in a city). The capped subscribers of its later batches are deferred now, in one statement.
    if (next !== null && deferred * 2 >= decided.notified.length + deferred + decided.skipped) {
      const swept = await store.deferCappedLater(client, fanout, batch, dailyCap);
      deferred += swept.deferred;
      next = swept.next;
    }
    const outcome = { notified: decided.notified.length, deferred, skipped: decided.skipped };
    const schedule = await store.recordBatch(client, fanoutId, { ...outcome, next });
    if (next !== null) await store.queueFanoutBatch(client, fanout, next, schedule);
    return { outcome: "batch", ...outcome, done: next === null };
  });
}

/**
 * The batch's notifications in one insert (in-app ones sent), and their email and push deliveries in one add_jobs,
 * `deliveryBatch` notifications a job, behind other notifications'.
 */
async function notify(client: Queryable, fanout: store.LockedFanout, recipients: store.Decided["notified"], deliveryBatch: number): Promise<void> {
  if (recipients.length === 0) return;
  const texts = nearbyLostTexts({ reportId: fanout.reportId, species: fanout.species, lat: fanout.lat, lon: fanout.lon, lastSeenAt: fanout.lastSeenAt });
  const preferences = await emailPreferences(client, recipients.map((r) => r.actorId));
  const rows: NearbyRow[] = recipients.flatMap((recipient) =>
    channelsFor(texts[0]!.kind, preferences.get(recipient.actorId)).map((channel) => ({
      actorId: recipient.actorId,
      subscriptionId: recipient.subscriptionId,
      km: textIndex(recipient.distanceM),
      channel,
    })),
  );
  const needDelivery = await insertNearbyNotifications(client, fanout, texts, rows);
  await enqueueDeliveryBatches(client, needDelivery, { priority: NEARBY_DELIVERY_PRIORITY, size: deliveryBatch });
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
    for (const fanout of stalled) await store.queueFanoutBatch(client, fanout, fanout.nextBatch, fanout);
    return orphaned + stalled.length;
  });
}
