import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { withTransaction } from "../../lib/db.js";
import { EventType } from "../../lib/events.js";
import { ALERTS_FANOUT_TASK } from "../../jobs/fanout/task.js";
import { enqueueMany, jobKey } from "../../jobs/queue.js";
import { startWorker } from "../../lib/worker.js";
import { runDigest } from "../../jobs/scheduled/alerts-digest.js";
import { fanoutStartJob, requeueStalledFanouts, runFanoutBatch } from "../../jobs/fanout/fanout.js";
import { coveringSubscriptionsSql } from "../../jobs/fanout/coverage.js";
import { recordEvents } from "../../notifier/consumer.js";
import { alertTasks } from "../../jobs/families.js";
import { admin } from "../helpers/app.js";
import { eventually } from "../helpers/stream.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import { call, createLostReport, freshActor, moderate } from "../safety/helpers.js";
import { batchSizes, dayAfter, fanoutRow, nearbyRecipients, offset, startTestFanout, subscribe, utcToday, type LatLon } from "./helpers.js";

/**
 * The fan-out's batches run one by one here, by hand, on the real database
 * (no worker unless a test starts one): what each batch decides, how it
 * stops, and what a replay or a dead worker leaves behind.
 */
let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
});

const CITY = { lat: 45.764043, lon: 4.835659 };
const small = { batchSize: 3 };

let places = 0;
/** A report with `n` subscribers around it (1 km away, 5 km radius), 20 km from any earlier one; the subscribers in actor order. */
async function reportWithSubscribers(n: number, at = offset(CITY, 0, 20 * ++places)): Promise<{ reportId: string; reporter: string; subscribers: string[]; at: LatLon }> {
  const reporter = freshActor("reporter");
  const reportId = await createLostReport(h.api, reporter, { location: at });
  const tag = freshActor("s");
  const subscribers = Array.from({ length: n }, (_, i) => `${tag}-${String(i).padStart(3, "0")}`);
  for (const actor of subscribers) await subscribe(h.db.pool, actor, offset(at, 1), 5);
  return { reportId, reporter, subscribers, at };
}

/** The key the batch jobs of a fan-out share, and its start's. */
const batchKey = (reportId: string, eventId: string) => jobKey(ALERTS_FANOUT_TASK, { reportId, eventId });
const startKey = (reportId: string, eventId: string) => jobKey(ALERTS_FANOUT_TASK, { reportId, eventId, start: true });

const ledger = async (reportId: string) =>
  (await h.db.pool.query(`select status, count(*)::int as n from alert_ledger where report_id = $1 group by 1 order by 1`, [reportId])).rows;

describe("a fan-out in batches", () => {
  it("collects the subscribers in range, then notifies them in batches of the configured size, in actor order", async () => {
    const { reportId, subscribers } = await reportWithSubscribers(7);
    await h.db.pool.query(`insert into notification_preference (actor_id, email) values ($1, 'one@example.org')`, [subscribers[4]]);
    const fanout = await startTestFanout(h.db.pool, reportId);
    expect(await runFanoutBatch(h.db.pool, fanout, 0, small)).toEqual({ outcome: "collected", recipients: 7, deferred: 0 });
    // Stored as three batches, not a ledger row each: the ledger gets a row per subscriber notified.
    expect(await batchSizes(h.db.pool, fanout)).toEqual([3, 3, 1]);
    expect(await ledger(reportId)).toEqual([]);
    // The next batch's job runs before the batches of fan-outs with more left (its priority: batches left after it),
    // and before those of younger fan-outs with as many left (its run_at: the fan-out's start).
    const nextJob = async () =>
      (
        await h.db.pool.query(
          `select j.payload->>'batch' as batch, j.priority, j.run_at = f.created_at as "byAge"
           from graphile_worker._private_jobs j, alert_fanout f where j.key = $1 and f.event_id = $2`,
          [batchKey(reportId, fanout), fanout],
        )
      ).rows[0];
    expect(await nextJob()).toEqual({ batch: "1", priority: 2, byAge: true });

    expect(await runFanoutBatch(h.db.pool, fanout, 1, small)).toMatchObject({ outcome: "batch", notified: 3, done: false });
    expect(await nextJob()).toEqual({ batch: "2", priority: 1, byAge: true });
    expect(await nearbyRecipients(h.db.pool, reportId)).toEqual(subscribers.slice(0, 3));
    expect(await runFanoutBatch(h.db.pool, fanout, 2, small)).toMatchObject({ notified: 3, done: false });
    expect(await runFanoutBatch(h.db.pool, fanout, 3, small)).toMatchObject({ notified: 1, done: true });
    expect(await nearbyRecipients(h.db.pool, reportId)).toEqual(subscribers);
    expect(await fanoutRow(h.db.pool, fanout)).toMatchObject({ status: "done", recipients: 7, notified: 7, batches_done: 3 });
    expect(await ledger(reportId)).toEqual([{ status: "notified", n: 7 }]);
    expect(await batchSizes(h.db.pool, fanout)).toEqual([]);

    // In-app rows are the message itself: written sent. The email one is in a batch delivery job, behind other notifications (priority 10).
    const { rows } = await h.db.pool.query(
      `select n.channel, n.status, n.attempts, n.sent_at is not null as "sentAt", count(j.id)::int as jobs, min(j.priority) as priority
       from notification n left join graphile_worker._private_jobs j on j.payload::jsonb->'notificationIds' ? n.id::text
       where n.kind = 'nearby_lost' and n.data->>'lostReportId' = $1
       group by 1, 2, 3, 4 order by 1`,
      [reportId],
    );
    expect(rows).toEqual([
      { channel: "email", status: "pending", attempts: 0, sentAt: false, jobs: 1, priority: 10 },
      { channel: "in_app", status: "sent", attempts: 1, sentAt: true, jobs: 0, priority: null },
    ]);
  });

  it("does nothing for a replayed or out-of-turn batch job", async () => {
    const { reportId } = await reportWithSubscribers(4);
    const fanout = await startTestFanout(h.db.pool, reportId);
    await runFanoutBatch(h.db.pool, fanout, 0, small);
    expect(await runFanoutBatch(h.db.pool, fanout, 2, small)).toEqual({ outcome: "stale" });
    await runFanoutBatch(h.db.pool, fanout, 1, small);
    expect(await runFanoutBatch(h.db.pool, fanout, 1, small)).toEqual({ outcome: "stale" });
    expect(await runFanoutBatch(h.db.pool, fanout, 0, small)).toEqual({ outcome: "stale" });
    expect(await nearbyRecipients(h.db.pool, reportId)).toHaveLength(3);
    await runFanoutBatch(h.db.pool, fanout, 2, small);
    expect(await nearbyRecipients(h.db.pool, reportId)).toHaveLength(4);
  });

  it("never notifies a subscriber twice for one report across later events (a reopen or a move), and reaches newcomers", async () => {
    const { reportId, subscribers, at } = await reportWithSubscribers(2);
    const first = await startTestFanout(h.db.pool, reportId);
    for (let b = 0; b <= 1; b++) await runFanoutBatch(h.db.pool, first, b, small);
    const newcomer = `${freshActor("late")}`;
    await subscribe(h.db.pool, newcomer, offset(at, -2), 10);
    const second = await startTestFanout(h.db.pool, reportId);
    expect(await runFanoutBatch(h.db.pool, second, 0, small)).toEqual({ outcome: "collected", recipients: 1, deferred: 0 });
    await runFanoutBatch(h.db.pool, second, 1, small);
    expect(await nearbyRecipients(h.db.pool, reportId)).toEqual([...subscribers, newcomer].sort());
  });

  it("skips a subscriber whose subscription was deleted before its batch", async () => {
    const { reportId, subscribers } = await reportWithSubscribers(2);
    const fanout = await startTestFanout(h.db.pool, reportId);
    await runFanoutBatch(h.db.pool, fanout, 0, small);
    await h.db.pool.query(`delete from alert_subscription where actor_id = $1`, [subscribers[0]]);
    expect(await runFanoutBatch(h.db.pool, fanout, 1, small)).toMatchObject({ notified: 1, skipped: 1, done: true });
    expect(await nearbyRecipients(h.db.pool, reportId)).toEqual([subscribers[1]]);
  });
});

describe("moderation and report state are honoured mid-fan-out", () => {
  it.each(["quarantined", "removed"] as const)("stops notifying once the report is %s", async (state) => {
    const { reportId, subscribers } = await reportWithSubscribers(7);
    const fanout = await startTestFanout(h.db.pool, reportId);
    await runFanoutBatch(h.db.pool, fanout, 0, small);
    await runFanoutBatch(h.db.pool, fanout, 1, small);
    await moderate(h.db, "lost_report", reportId, state);
    expect(await runFanoutBatch(h.db.pool, fanout, 2, small)).toEqual({ outcome: "stopped", reason: `report ${state}` });
    expect(await runFanoutBatch(h.db.pool, fanout, 2, small)).toEqual({ outcome: "stale" });
    expect(await nearbyRecipients(h.db.pool, reportId)).toEqual(subscribers.slice(0, 3));
    expect(await fanoutRow(h.db.pool, fanout)).toMatchObject({ status: "stopped", stop_reason: `report ${state}`, notified: 3 });
  });

  it("stops when the reporter resolved the report before the first batch", async () => {
    const { reportId, reporter } = await reportWithSubscribers(2);
    const fanout = await startTestFanout(h.db.pool, reportId);
    const resolved = await call(h.api, {
      method: "POST",
      url: `/v1/safety/lost-reports/${reportId}/resolve`,
      headers: { "x-debug-actor": reporter },
      payload: { outcome: "reunited" },
    });
    expect(resolved.statusCode, resolved.body).toBe(200);
    expect(await runFanoutBatch(h.db.pool, fanout, 0, small)).toEqual({ outcome: "stopped", reason: "report reunited" });
    expect(await nearbyRecipients(h.db.pool, reportId)).toEqual([]);
  });
});

describe("a worker that dies mid-batch", () => {
  it("leaves nothing of the batch behind: the re-run decides the same subscribers exactly once", async () => {
    const { reportId, subscribers } = await reportWithSubscribers(5);
    const fanout = await startTestFanout(h.db.pool, reportId);
    await runFanoutBatch(h.db.pool, fanout, 0, small);
    // The batch fails after its ledger and quota writes, at the notification insert: as if the process died there.
    await h.db.pool.query(`
      create function test_fail_nearby() returns trigger language plpgsql as $$
      begin raise exception 'worker died'; end $$;
      create trigger test_fail_nearby before insert on notification for each row execute function test_fail_nearby();`);
    try {
      await expect(runFanoutBatch(h.db.pool, fanout, 1, small)).rejects.toThrow(/worker died/);
    } finally {
      await h.db.pool.query(`drop trigger test_fail_nearby on notification; drop function test_fail_nearby();`);
    }
    expect(await ledger(reportId)).toEqual([]);
    expect(await batchSizes(h.db.pool, fanout)).toEqual([3, 2]);
    const quota = await h.db.pool.query(`select count(*)::int as n from alert_daily_quota where actor_id = any($1)`, [subscribers]);
    expect(quota.rows[0].n).toBe(0);
    expect(await fanoutRow(h.db.pool, fanout)).toMatchObject({ next_batch: 1, notified: 0 });

    await runFanoutBatch(h.db.pool, fanout, 1, small);
    await runFanoutBatch(h.db.pool, fanout, 2, small);
    expect(await nearbyRecipients(h.db.pool, reportId)).toEqual(subscribers);
    const sent = await h.db.pool.query(`select sent from alert_daily_quota where actor_id = any($1)`, [subscribers]);
    expect(sent.rows.map((r) => r.sent)).toEqual([1, 1, 1, 1, 1]);
  });

  it("whose job stays locked is re-queued by the stall sweep, and a live worker finishes the fan-out", async () => {
    const { reportId, subscribers } = await reportWithSubscribers(4);
    const fanout = await startTestFanout(h.db.pool, reportId);
    // A dead worker holds batch 0's job (graphile-worker would keep it locked for hours) and the fan-out has not moved for 5 minutes.
    await h.db.pool.query(
      `update graphile_worker._private_jobs set locked_at = now(), locked_by = 'dead-worker' where key like 'alerts__fanout:' || $1 || ':%'`,
      [reportId],
    );
    await h.db.pool.query(`update alert_fanout set updated_at = now() - interval '5 minutes' where event_id = $1`, [fanout]);
    expect(await requeueStalledFanouts(h.db.pool)).toBe(1);
    expect(await requeueStalledFanouts(h.db.pool)).toBe(0);

    const logger = pino({ level: "silent" });
    const worker = await startWorker({
      pool: h.api.pool,
      logger,
      taskList: alertTasks(h.api.pool, small),
      concurrency: 2,
      pollInterval: 100,
    });
    try {
      await eventually(async () => ((await fanoutRow(h.db.pool, fanout)).status === "done" ? true : undefined), 20_000);
    } finally {
      await worker.stop();
    }
    expect(await nearbyRecipients(h.db.pool, reportId)).toEqual(subscribers);
  });
});

describe("the stall sweep and a fan-out waiting its turn", () => {
  it("leaves a queued next batch alone however long it waits, and re-queues one whose job used up its attempts", async () => {
    const { reportId } = await reportWithSubscribers(4);
    const fanout = await startTestFanout(h.db.pool, reportId);
    await runFanoutBatch(h.db.pool, fanout, 0, small);
    // Batch 1's job waits behind a burst of other fan-outs: the fan-out has not moved for 5 minutes.
    await h.db.pool.query(`update alert_fanout set updated_at = now() - interval '5 minutes' where event_id = $1`, [fanout]);
    const job = async () =>
      (await h.db.pool.query(`select id, run_at, attempts from graphile_worker._private_jobs where key = $1`, [batchKey(reportId, fanout)])).rows[0];
    const waiting = await job();
    expect(await requeueStalledFanouts(h.db.pool)).toBe(0);
    expect(await job()).toEqual(waiting);

    await h.db.pool.query(`update graphile_worker._private_jobs set attempts = max_attempts, last_error = 'gave up' where id = $1`, [waiting.id]);
    expect(await requeueStalledFanouts(h.db.pool)).toBe(1);
    expect(await job()).toMatchObject({ attempts: 0 });
  });
});

describe("a start job held by a dead worker", () => {
  it("is re-queued by the stall sweep before it recorded anything, and the fan-out then runs", async () => {
    const { reportId, subscribers } = await reportWithSubscribers(2);
    const eventId = crypto.randomUUID();
    // As the consumer queues it; then a worker takes it and dies before its transaction commits.
    await withTransaction(h.db.pool, (client) =>
      enqueueMany(client, [fanoutStartJob({ reportId, eventId, eventType: EventType.AnimalLostReported })]),
    );
    await h.db.pool.query(
      `update graphile_worker._private_jobs set locked_at = now() - interval '5 minutes', locked_by = 'dead-worker' where key = $1`,
      [startKey(reportId, eventId)],
    );
    expect(await h.db.pool.query(`select 1 from alert_fanout where event_id = $1`, [eventId])).toMatchObject({ rowCount: 0 });
    expect(await requeueStalledFanouts(h.db.pool)).toBe(1);

    const logger = pino({ level: "silent" });
    const worker = await startWorker({ pool: h.api.pool, logger, taskList: alertTasks(h.api.pool, small), concurrency: 2, pollInterval: 100 });
    try {
      await eventually(async () => ((await fanoutRow(h.db.pool, eventId))?.status === "done" ? true : undefined), 20_000);
    } finally {
      await worker.stop();
    }
    expect(await nearbyRecipients(h.db.pool, reportId)).toEqual(subscribers);
  });
});

describe("the daily cap", () => {
  it("notifies a subscriber at most 20 times a UTC day and defers the rest to the digest, at once when already capped", async () => {
    const spot = offset(CITY, 40);
    const subscriber = freshActor("busy");
    await subscribe(h.db.pool, subscriber, spot, 5);
    const outcomes: string[] = [];
    for (let i = 0; i < 22; i++) {
      const reportId = await createLostReport(h.api, freshActor("reporter"), { location: offset(spot, 0.5) });
      const fanout = await startTestFanout(h.db.pool, reportId);
      const collected = await runFanoutBatch(h.db.pool, fanout, 0, small);
      if (collected.outcome === "collected" && collected.deferred === 1) {
        outcomes.push("deferred at once");
        // Nothing left for a batch: the fan-out is done.
        expect(await fanoutRow(h.db.pool, fanout)).toMatchObject({ status: "done", recipients: 1, deferred: 1, batches_done: 0 });
        expect(await runFanoutBatch(h.db.pool, fanout, 1, small)).toEqual({ outcome: "stale" });
        continue;
      }
      const result = await runFanoutBatch(h.db.pool, fanout, 1, small);
      outcomes.push(result.outcome === "batch" ? (result.notified ? "notified" : "deferred") : result.outcome);
    }
    expect(outcomes).toEqual([...Array(20).fill("notified"), "deferred at once", "deferred at once"]);
    const { rows } = await h.db.pool.query(
      `select count(*)::int as n from notification where recipient_actor_id = $1 and kind = 'nearby_lost'`,
      [subscriber],
    );
    expect(rows[0].n).toBe(20);
    // The two deferred wrote nothing: the ledger holds the 20 notified (the morning digest finds the others).
    const ledgerRows = await h.db.pool.query(`select status, count(*)::int as n from alert_ledger where actor_id = $1 group by 1`, [subscriber]);
    expect(ledgerRows.rows).toEqual([{ status: "notified", n: 20 }]);
  });

  it("defers in the batch a subscriber who reached the cap after the fan-out collected them", async () => {
    const spot = offset(CITY, 80);
    const subscriber = freshActor("raced");
    await subscribe(h.db.pool, subscriber, spot, 5);
    const late = await createLostReport(h.api, freshActor("reporter"), { location: spot });
    const lateFanout = await startTestFanout(h.db.pool, late);
    expect(await runFanoutBatch(h.db.pool, lateFanout, 0, { ...small, dailyCap: 1 })).toMatchObject({ recipients: 1, deferred: 0 });
    // Another report's fan-out notifies them meanwhile and reaches the cap (1 here).
    const first = await createLostReport(h.api, freshActor("reporter"), { location: spot });
    const firstFanout = await startTestFanout(h.db.pool, first);
    await runFanoutBatch(h.db.pool, firstFanout, 0, { ...small, dailyCap: 1 });
    expect(await runFanoutBatch(h.db.pool, firstFanout, 1, { ...small, dailyCap: 1 })).toMatchObject({ notified: 1 });
    expect(await runFanoutBatch(h.db.pool, lateFanout, 1, { ...small, dailyCap: 1 })).toMatchObject({ notified: 0, deferred: 1, done: true });
    expect(await nearbyRecipients(h.db.pool, late)).toEqual([]);
  });
});

describe("a report deferred past the cap", () => {
  it("is listed once in the digest however many of its fan-outs deferred it, and never alerts that subscriber after", async () => {
    const capOne = { ...small, dailyCap: 1 };
    const spot = offset(CITY, 120);
    const subscriber = freshActor("capped");
    await subscribe(h.db.pool, subscriber, spot, 10);
    const runAll = async (reportId: string) => {
      const fanout = await startTestFanout(h.db.pool, reportId);
      for (let b = 0; (await fanoutRow(h.db.pool, fanout)).status === "running"; b++) await runFanoutBatch(h.db.pool, fanout, b, capOne);
      return fanoutRow(h.db.pool, fanout);
    };
    // The first report reaches the cap (1 here); the second is deferred, and deferred again when it moves (a second fan-out).
    await runAll(await createLostReport(h.api, freshActor("reporter"), { location: spot }));
    const deferred = await createLostReport(h.api, freshActor("reporter"), { location: offset(spot, 1) });
    expect(await runAll(deferred)).toMatchObject({ recipients: 1, deferred: 1 });
    expect(await runAll(deferred)).toMatchObject({ recipients: 1, deferred: 1 });

    await runDigest(h.db.pool, dayAfter(await utcToday(h.db.pool)), 1);
    const digests = await h.db.pool.query(
      `select data->>'lostReportIds' as reports from notification
       where kind = 'nearby_lost' and channel = 'in_app' and data ? 'digestDay' and recipient_actor_id = $1`,
      [subscriber],
    );
    expect(digests.rows).toEqual([{ reports: deferred }]);

    // A new day's count (its quota row gone) and a third fan-out of the report: the digest's ledger row keeps it at once.
    await h.db.pool.query(`delete from alert_daily_quota where actor_id = $1`, [subscriber]);
    expect(await runAll(deferred)).toMatchObject({ recipients: 0, notified: 0 });
    expect(await nearbyRecipients(h.db.pool, deferred)).toEqual([]);
  });
});

describe("a fan-out whose area reached the cap after it was collected", () => {
  it("defers its capped subscribers at once when a batch is mostly past the cap, writing nothing for them; the next morning's digest lists the report", async () => {
    const capOne = { ...small, dailyCap: 1 };
    const { reportId, subscribers, at } = await reportWithSubscribers(7, offset(CITY, -60));
    const late = await startTestFanout(h.db.pool, reportId);
    await runFanoutBatch(h.db.pool, late, 0, capOne);
    // Another report there, by the second subscriber, notifies the six others first, which caps them (at 1 here).
    const other = await createLostReport(h.api, subscribers[1]!, { location: at });
    const first = await startTestFanout(h.db.pool, other);
    for (let b = 0; b <= 2; b++) await runFanoutBatch(h.db.pool, first, b, capOne);
    expect(await nearbyRecipients(h.db.pool, other)).toHaveLength(6);

    // Batch 1 decides 3 (one notified, two deferred), then defers the four capped ones of batches 2 and 3 at once.
    expect(await batchSizes(h.db.pool, late)).toEqual([3, 3, 1]);
    expect(await runFanoutBatch(h.db.pool, late, 1, capOne)).toEqual({ outcome: "batch", notified: 1, deferred: 6, skipped: 0, done: true });
    expect(await batchSizes(h.db.pool, late)).toEqual([]);
    expect(await nearbyRecipients(h.db.pool, reportId)).toEqual([subscribers[1]]);
    expect(await ledger(reportId)).toEqual([{ status: "notified", n: 1 }]);
    expect(await fanoutRow(h.db.pool, late)).toMatchObject({ status: "done", notified: 1, deferred: 6, batches_done: 1 });

    // The next morning (with the cap the fan-out had), each of the six gets one digest listing the report.
    await runDigest(h.db.pool, dayAfter(await utcToday(h.db.pool)), 1);
    const digests = await h.db.pool.query(
      `select recipient_actor_id as actor, data->>'lostReportIds' as reports from notification
       where kind = 'nearby_lost' and channel = 'in_app' and data ? 'digestDay' and recipient_actor_id = any($1) order by 1`,
      [subscribers],
    );
    expect(digests.rows).toEqual(subscribers.filter((s) => s !== subscribers[1]).map((actor) => ({ actor, reports: reportId })));
    expect(await ledger(reportId)).toEqual([
      { status: "digested", n: 6 },
      { status: "notified", n: 1 },
    ]);
  });
});

describe("deferring the later batches at once", () => {
  it("drops a batch left with nobody, keeps the uncapped rest of another, and goes on with the next batch left", async () => {
    const capOne = { ...small, dailyCap: 1 };
    const { reportId, subscribers } = await reportWithSubscribers(10, offset(CITY, -100));
    const fanout = await startTestFanout(h.db.pool, reportId);
    await runFanoutBatch(h.db.pool, fanout, 0, capOne);
    expect(await batchSizes(h.db.pool, fanout)).toEqual([3, 3, 3, 1]);
    // The first eight reached the day's cap (1 here) elsewhere since.
    await h.db.pool.query(
      `insert into alert_daily_quota (actor_id, day, sent) select unnest($1::text[]), (now() at time zone 'utc')::date, 1`,
      [subscribers.slice(0, 8)],
    );
    // Batch 1 defers all three of its own, then five more: batch 2 is dropped, batch 3 keeps its ninth subscriber.
    expect(await runFanoutBatch(h.db.pool, fanout, 1, capOne)).toEqual({ outcome: "batch", notified: 0, deferred: 8, skipped: 0, done: false });
    expect(await batchSizes(h.db.pool, fanout)).toEqual([1, 1]);
    expect(await fanoutRow(h.db.pool, fanout)).toMatchObject({ next_batch: 3, deferred: 8 });
    expect(await runFanoutBatch(h.db.pool, fanout, 2, capOne)).toEqual({ outcome: "stale" });
    expect(await runFanoutBatch(h.db.pool, fanout, 3, capOne)).toMatchObject({ notified: 1, done: false });
    expect(await runFanoutBatch(h.db.pool, fanout, 4, capOne)).toMatchObject({ notified: 1, done: true });
    expect(await nearbyRecipients(h.db.pool, reportId)).toEqual(subscribers.slice(8));
    expect(await fanoutRow(h.db.pool, fanout)).toMatchObject({ status: "done", recipients: 10, notified: 2, deferred: 8, batches_done: 3 });
  });
});

describe("a fan-out start no subscription covers", () => {
  it("is recorded done with no recipients in the consumer's transaction, and queues no job; a covered one queues its start", async () => {
    const far = offset(CITY, 0, 20 * ++places);
    const reporter = freshActor("reporter");
    const uncovered = await createLostReport(h.api, reporter, { location: far });
    // Neither the reporter's own subscription nor one for cats covers a dog's report.
    await subscribe(h.db.pool, reporter, offset(far, 1), 5);
    await subscribe(h.db.pool, freshActor("cats"), offset(far, 1), 5, ["cat"]);
    const { reportId: covered } = await reportWithSubscribers(1);
    const start = (reportId: string) => {
      const event = { id: crypto.randomUUID(), type: EventType.AnimalLostReported, occurredAt: new Date().toISOString(), data: {} };
      return { event, drafts: [], jobs: [fanoutStartJob({ reportId, eventId: event.id, eventType: event.type })] };
    };
    const [quiet, busy] = [start(uncovered), start(covered)];
    await recordEvents(h.db.pool, [quiet, busy]);

    expect(await fanoutRow(h.db.pool, quiet.event.id)).toMatchObject({ status: "done", recipients: 0, notified: 0 });
    expect(await fanoutRow(h.db.pool, busy.event.id)).toBeUndefined();
    const queued = await h.db.pool.query(`select key from graphile_worker._private_jobs where key = any($1::text[]) order by key`, [
      [startKey(uncovered, quiet.event.id), startKey(covered, busy.event.id)],
    ]);
    expect(queued.rows).toEqual([{ key: startKey(covered, busy.event.id) }]);
    // A redelivered event records nothing twice.
    await recordEvents(h.db.pool, [quiet]);
    expect((await h.db.pool.query(`select count(*)::int as n from alert_fanout where report_id = $1`, [uncovered])).rows[0].n).toBe(1);
  });
});

describe("the lookup of subscriptions covering a point", () => {
  it("is a GiST index lookup on the subscription areas, not a scan", async () => {
    // 5,000 subscriptions over a country (far from the other tests' places), so the planner has a real choice.
    await h.db.pool.query(
      `insert into alert_subscription (actor_id, location, radius_m)
       select 'plan-' || g, st_setsrid(st_makepoint(10 + random() * 8, 57 + random() * 7), 4326)::geography, 500 + random() * 49500
       from generate_series(1, 5000) g;
       analyze alert_subscription;`,
    );
    const reportId = await createLostReport(h.api, freshActor("reporter"), { location: { lat: 60.2, lon: 14.1 } });
    const { rows } = await h.db.pool.query(`explain (format json) ${coveringSubscriptionsSql}`, [reportId]);
    const plan = JSON.stringify(rows[0]["QUERY PLAN"]);
    expect(plan).toContain('"Index Name":"alert_subscription_area_idx"');
    expect(plan).not.toMatch(/"Node Type":"Seq Scan","[^}]*"Relation Name":"alert_subscription"/);
    // And it finds exactly the covering subscriptions a full check finds.
    const found = await h.db.pool.query(`select count(*)::int as n from (${coveringSubscriptionsSql}) c`, [reportId]);
    const exact = await h.db.pool.query(
      `select count(distinct s.actor_id)::int as n from alert_subscription s, safety_lost_report r
       where r.id = $1 and st_distance(s.location, r.coarse_location) <= s.radius_m and s.actor_id <> r.reporter_id`,
      [reportId],
    );
    expect(found.rows[0].n).toBe(exact.rows[0].n);
    expect(found.rows[0].n).toBeGreaterThan(0);
  });
});

describe("GET /v1/admin/lost-reports/{id}/alerts", () => {
  it("shows the subscriptions in range and the fan-out's progress, with no subscriber in it", async () => {
    const { reportId, subscribers } = await reportWithSubscribers(7);
    const fanout = await startTestFanout(h.db.pool, reportId);
    await runFanoutBatch(h.db.pool, fanout, 0, small);
    await runFanoutBatch(h.db.pool, fanout, 1, small);
    const res = await call(h.api, { url: `/v1/admin/lost-reports/${reportId}/alerts`, headers: admin() });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({
      lostReportId: reportId,
      reportStatus: "open",
      moderationState: null,
      subscriptionsInRange: 7,
      subscribersInRange: 7,
      recipients: { pending: 4, notified: 3, deferred: 0, digested: 0, skipped: 0 },
    });
    expect(body.fanouts).toEqual([
      expect.objectContaining({
        eventId: fanout,
        status: "running",
        recipients: 7,
        notified: 3,
        deferredToDigest: 0,
        batchesDone: 1,
        batchesPending: 2,
        job: expect.objectContaining({ state: "waiting", batch: 2, attempts: 0 }),
      }),
    ]);
    for (const actor of subscribers) expect(res.body).not.toContain(actor);
    expect(res.body).not.toContain(String(offset(CITY, 1).lat));

    const missing = await call(h.api, { url: `/v1/admin/lost-reports/${crypto.randomUUID()}/alerts`, headers: admin() });
    expect(missing.statusCode).toBe(404);
    expect((await call(h.api, { url: `/v1/admin/lost-reports/${reportId}/alerts`, headers: { "x-debug-actor": "nobody" } })).statusCode).toBe(403);
  });
});
