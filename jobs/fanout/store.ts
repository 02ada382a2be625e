import { actorSuspendedSql } from "../../lib/accounts.js";
import type { Species } from "../../lib/animals.js";
import { FANOUT_BATCH_SIZE } from "../../lib/alerts.js";
import { exactTime, type Queryable } from "../../lib/db.js";
import { ALERTS_FANOUT_TASK } from "./task.js";
import { jobWaitingSql, lockedJobs } from "../job-state.js";
import { enqueue, jobKeySql, requeue } from "../queue.js";
import { coveringSubscriptionsSql, subscriptionCoversReport } from "./coverage.js";

/** SQL of the alert fan-out: starting one, its batches, the stall sweep. Tables: migrations 000006 and 000009. */

export interface FanoutRef {
  reportId: string;
  eventId: string;
}

/**
 * When a fan-out's next batch job runs. Its priority is the number of
 * batches the fan-out has left after that one (graphile-worker runs lower
 * numbers first; starts run at 0, as does a last batch), and its run_at the
 * fan-out's start (ties go to the oldest). When fan-outs queue up behind
 * each other (a burst of reports in a city), starts and last batches run in
 * the order their reports came, so a small fan-out is not held up behind a
 * city's; then the one closest to done goes next, so the city's finish one
 * after another rather than all at the end. A big one waits only while
 * smaller ones keep arriving faster than the fan-out worker runs them.
 */
export interface FanoutSchedule {
  /** The fan-out's created_at, to the microsecond. */
  runAt: string;
  priority: number;
}

/**
 * Select-list items of FanoutSchedule from fan-out row `f`, returned by the
 * statements that update the row's counts (recordCollected, recordBatch,
 * claimStalledFanouts), so queueing the next batch reads nothing more.
 */
const fanoutSchedule = (f: string) =>
  `${exactTime(`${f}.created_at`)} as "runAt",
   least(greatest(coalesce(ceil((${f}.recipients - ${f}.notified - ${f}.deferred - ${f}.skipped)::numeric / ${f}.batch_size) - 1, 0), 0), 10000)::int as priority`;

/** Queues batch `batch` of a fan-out in the caller's transaction (one job key per fan-out), after the fan-out's counts are updated. */
export async function queueFanoutBatch(client: Queryable, { reportId, eventId }: FanoutRef, batch: number, schedule: FanoutSchedule): Promise<void> {
  await enqueue(client, ALERTS_FANOUT_TASK, { fanoutId: eventId, batch }, { key: { reportId, eventId }, runAt: schedule.runAt, priority: schedule.priority });
}

/**
 * A batch's commit does not wait for its WAL to reach the disk
 * (synchronous_commit off for the transaction): batches write megabytes of
 * WAL, and waiting on each flush slowed the API's own commits, which flush
 * behind them. Nothing is lost that is not redone: a batch lost to a
 * Postgres crash takes its job's completion with it (a later WAL record,
 * whose flush would have flushed the batch), so the job runs it again; and
 * no email leaves for its notifications before a delivery job's own commit
 * has flushed them.
 */
export async function commitWithoutWaitingForFlush(client: Queryable): Promise<void> {
  await client.query(`set local synchronous_commit = off`);
}

/** Records the fan-out of an event (its batch 0 does); false when it exists already (a redelivered event) or the report does not. */
export async function insertFanout(client: Queryable, ref: FanoutRef & { eventType: string }): Promise<boolean> {
  const { rowCount } = await client.query(
    `insert into alert_fanout (event_id, report_id, event_type)
     select $1::uuid, $2::uuid, $3::text where exists (select 1 from safety_lost_report where id = $2::uuid)
     on conflict (event_id) do nothing`,
    [ref.eventId, ref.reportId, ref.eventType],
  );
  return rowCount === 1;
}

/**
 * Fan-out jobs locked longer than a batch can run, so their worker is gone:
 * each is added again under its key, which graphile-worker moves from the
 * locked job to the new one. The locked one, released hours later, finds its
 * batch done and does nothing. Returns how many.
 */
export async function requeueOrphanedFanoutJobs(client: Queryable, lockedForSeconds: number): Promise<number> {
  const orphaned = await lockedJobs(client, ALERTS_FANOUT_TASK, lockedForSeconds, 100);
  await requeue(client, orphaned);
  return orphaned.length;
}

export interface LockedFanout {
  eventId: string;
  reportId: string;
  eventType: string;
  status: "running" | "done" | "stopped";
  nextBatch: number;
  reportStatus: string;
  moderationState: string | null;
  reporterId: string;
  species: Species;
  lat: number;
  lon: number;
  lastSeenAt: Date;
}

/**
 * The fan-out with its report, locked for the batch's transaction: batches of
 * one fan-out never run at the same time, and a duplicate job waits here,
 * then finds next_batch moved on. Null when it is gone with its report.
 */
export async function lockFanout(client: Queryable, eventId: string): Promise<LockedFanout | null> {
  const { rows } = await client.query<LockedFanout>(
    `select f.event_id as "eventId", f.report_id as "reportId", f.event_type as "eventType", f.status,
       f.next_batch as "nextBatch",
       r.status as "reportStatus", m.state as "moderationState", r.reporter_id as "reporterId", r.species,
       st_y(r.coarse_location::geometry) as lat, st_x(r.coarse_location::geometry) as lon, r.last_seen_at as "lastSeenAt"
     from alert_fanout f
     join safety_lost_report r on r.id = f.report_id
     left join moderation_content_state m on m.target_type = 'lost_report' and m.target_id = r.id
     where f.event_id = $1::uuid
     for update of f`,
    [eventId],
  );
  return rows[0] ?? null;
}

/**
 * Fan-out starts whose report no subscription covers are recorded as done
 * with no recipients, here, instead of running as jobs: most reports in a
 * quiet area, and every create of the write-path bench, would otherwise pay
 * a job (its fetch, lock, transaction and completion, and a wake-up of every
 * runner) to find nobody. For a consumer's whole batch, as CTEs of its
 * reaction check (jobs/reaction-checks.ts); `needed` selects the event
 * ids of the starts that still need their job (a report gone since is left
 * to its job, which does nothing). Arguments are SQL (placeholders).
 *
 * Each start reads its report by key, through a subquery the planner cannot
 * flatten (`offset 0`). The consumer plans this statement once per
 * connection (CONSUMER_SESSION_SETTINGS), so a plan chosen while the table
 * was small stays while it grows: as a join, it is planned as a hash join
 * over a sequential scan of every lost report, once per batch (0.62 ms a run
 * under auto_explain at 500 creates/s; tests/notifier/consumer-plans.test.ts
 * checks the plan).
 */
export function uncoveredFanoutsSql(starts: { eventIds: string; reportIds: string; eventTypes: string }, batchSize: string) {
  return {
    ctes: `fanout_start as (
       select * from unnest(${starts.eventIds}, ${starts.reportIds}, ${starts.eventTypes}) as t(event_id, report_id, event_type)
     ),
     fanout_uncovered as (
       select st.* from fanout_start st
       cross join lateral (
         select r.coarse_location, r.species, r.reporter_id from safety_lost_report r where r.id = st.report_id offset 0
       ) r
       where not exists (select 1 from alert_subscription s where ${subscriptionCoversReport("s", "r")})
     ),
     fanout_recorded as (
       insert into alert_fanout (event_id, report_id, event_type, status, recipients, batch_size, next_batch, finished_at)
       select event_id, report_id, event_type, 'done', 0, ${batchSize}, 1, now() from fanout_uncovered
       on conflict (event_id) do nothing
     )`,
    needed: `select event_id::text from fanout_start where event_id not in (select event_id from fanout_uncovered)`,
  };
}

/**
 * How many other fan-outs of the report of `eventType` (its re-sends: the
 * PATCHes that moved it or changed its species) collected anyone. Takes a
 * lock on the report's re-send count first, held to the commit: batch 0s of
 * two moves running at once would each count the other out. A fan-out that
 * collected nobody (no new subscriber in range, or stopped before collecting)
 * is not counted, so a correction into an empty area costs no re-send.
 */
export async function resendsOfReport(client: Queryable, { reportId, eventId }: FanoutRef, eventType: string): Promise<number> {
  await client.query(`select pg_advisory_xact_lock(hashtextextended('alert-resends:' || $1::text, 0))`, [reportId]);
  const { rows } = await client.query<{ n: number }>(
    `select count(*)::int as n from alert_fanout
     where report_id = $1::uuid and event_type = $2::text and event_id <> $3::uuid and recipients > 0`,
    [reportId, eventType, eventId],
  );
  return rows[0]!.n;
}

export interface Claimed {
  /** Left for the batches to decide. */
  pending: number;
  /** Past the cap at once: their count for the day had reached it. */
  deferred: number;
}

/** Today's UTC date in SQL: the day a decision counts against the cap. */
const utcToday = `(now() at time zone 'utc')::date`;

/** SQL: `actor`'s count for today has reached the cap (`cap`, an SQL parameter). */
const cappedToday = (actor: string, cap: string) =>
  `exists (select 1 from alert_daily_quota q where q.actor_id = ${actor} and q.day = ${utcToday} and q.sent >= ${cap})`;

/**
 * Batch 0: finds every subscriber in range and stores those left to decide
 * as the fan-out's batches, one row of arrays per `batchSize` of them in
 * actor order (alert_fanout_batch), not a ledger row each. A subscriber
 * already decided for this report (by an earlier event) is left out. One
 * whose count for the UTC day has reached the cap is deferred here, by
 * writing nothing: the morning digest finds the report through their
 * subscription (digest.ts). The count only grows within a day, so no lock
 * is needed; one read before a concurrent batch raised it leaves the
 * subscriber to their batch. After a burst of reports in a city most of its
 * subscribers are capped, and those reports cost a read each.
 */
export async function collectRecipients(client: Queryable, { reportId, eventId }: FanoutRef, dailyCap: number, batchSize: number): Promise<Claimed> {
  // The planner expects a single covering subscription (ST_DWithin's estimate), so it probes the day's
  // quota once per recipient, as a bitmap scan: 3× a plain index probe's cost over a city's 20,000.
  await client.query(`set local enable_bitmapscan = off`);
  const { rows } = await client.query<Claimed>(
    `with recipients as (
       select c.actor_id, c.subscription_id, c.distance_m,
         ${cappedToday("c.actor_id", "$3::int")} as capped
       from (${coveringSubscriptionsSql}) c
       -- A hashed subplan: one range scan of the report's rows (none for a new report), where "not exists" probed once per recipient.
       where c.actor_id not in (select l.actor_id from alert_ledger l where l.report_id = $1::uuid)
     ),
     numbered as (
       select r.*, (row_number() over (order by r.actor_id) - 1) / $4::int + 1 as batch from recipients r where not r.capped
     ),
     stored as (
       insert into alert_fanout_batch (fanout_event_id, batch, actor_ids, subscription_ids, distances_m)
       select $2::uuid, batch, array_agg(actor_id order by actor_id), array_agg(subscription_id order by actor_id),
         array_agg(distance_m order by actor_id)
       from numbered group by batch
     )
     select count(*) filter (where not capped)::int as pending, count(*) filter (where capped)::int as deferred from recipients`,
    [reportId, eventId, dailyCap, batchSize],
  );
  await client.query(`set local enable_bitmapscan to default`);
  return rows[0]!;
}

export interface Decided {
  /** Ledger rows written: these get their notification. */
  notified: Array<{ actorId: string; subscriptionId: string; distanceM: number }>;
  /** Past the day's cap: left for the digest, with no row. */
  deferred: number;
  /** Subscription gone, subscriber suspended, or the report already decided for them by another of its fan-outs. */
  skipped: number;
  /** The fan-out's next batch still stored; null when this was its last. */
  next: number | null;
}

/**
 * Batch n: takes the batch's row (deleting it) and decides each of its
 * subscribers in one statement: skipped when their subscription is gone or
 * they are suspended (as of this batch: a suspension before it counts,
 * whenever the fan-out started), or another fan-out of the report decided
 * them since; notified while their count for the UTC day is under the cap,
 * with a ledger row; deferred past it, with none (as in collectRecipients).
 * The quota upsert goes in actor order, so concurrent fan-outs lock
 * subscribers in the same order and never deadlock; the ledger's primary key
 * keeps two fan-outs of one report from both notifying a subscriber (the
 * loser's quota count is one too high that day: fewer alerts, never more).
 */
export async function decideBatch(client: Queryable, { reportId, eventId }: FanoutRef, batch: number, dailyCap: number): Promise<Decided> {
  const { rows } = await client.query<Decided>(
    `with taken as (
       delete from alert_fanout_batch where fanout_event_id = $2::uuid and batch = $3::int
       returning actor_ids, subscription_ids, distances_m
     ),
     recipients as (
       select u.actor_id, u.subscription_id, u.distance_m,
         exists (select 1 from alert_subscription s where s.id = u.subscription_id) and not ${actorSuspendedSql("u.actor_id")}
           and not exists (select 1 from alert_ledger l where l.report_id = $1::uuid and l.actor_id = u.actor_id) as live,
         ${cappedToday("u.actor_id", "$4::int")} as capped
       from taken t, unnest(t.actor_ids, t.subscription_ids, t.distances_m) as u(actor_id, subscription_id, distance_m)
     ),
     quota as (
       insert into alert_daily_quota as q (actor_id, day, sent)
       select actor_id, ${utcToday}, 1 from recipients where live and not capped order by actor_id
       on conflict (actor_id, day) do update set sent = q.sent + 1 where q.sent < $4::int
       returning q.actor_id
     ),
     notified as (
       insert into alert_ledger (report_id, actor_id, fanout_event_id, subscription_id, distance_m, status, day, decided_at)
       -- "in (select …)" is a hashed subplan; a join to the quota CTE was planned as a nested loop (1,000 × 1,000).
       select $1::uuid, r.actor_id, $2::uuid, r.subscription_id, r.distance_m, 'notified', ${utcToday}, now()
       from recipients r where r.actor_id in (select actor_id from quota)
       on conflict (report_id, actor_id) do nothing
       returning actor_id, subscription_id, distance_m
     )
     select
       (select coalesce(json_agg(json_build_object('actorId', actor_id, 'subscriptionId', subscription_id, 'distanceM', distance_m)
          order by actor_id), '[]') from notified) as notified,
       (count(*) filter (where live) - (select count(*) from quota))::int as deferred,
       -- Live ones whose ledger row another fan-out of the report wrote first are skipped too.
       (count(*) filter (where not live) + (select count(*) from quota) - (select count(*) from notified))::int as skipped,
       (select min(batch) from alert_fanout_batch where fanout_event_id = $2::uuid and batch > $3::int) as next
     from recipients`,
    [reportId, eventId, batch, dailyCap],
  );
  return rows[0]!;
}

/**
 * Defers, in one statement, every subscriber of the fan-out's batches after
 * `batch` whose count for the UTC day has reached the cap, as their batches
 * would (writing nothing for them; the count only grows within a day, so no
 * lock is needed): a batch left with none is dropped, the others keep the
 * rest. After a burst of reports in a city most of its subscribers are
 * capped by the time the later fan-outs' batches run, and each of those
 * batches was a job and a statement (about 45 ms) that deferred all 1,000.
 * Returns how many it deferred and the next batch left.
 */
export async function deferCappedLater(
  client: Queryable,
  { eventId }: FanoutRef,
  batch: number,
  dailyCap: number,
): Promise<{ deferred: number; next: number | null }> {
  const { rows } = await client.query<{ deferred: number; next: number | null }>(
    `with later as (
       select b.batch, u.actor_id, u.subscription_id, u.distance_m, u.ord,
         ${cappedToday("u.actor_id", "$3::int")} as capped
       from alert_fanout_batch b,
         unnest(b.actor_ids, b.subscription_ids, b.distances_m) with ordinality as u(actor_id, subscription_id, distance_m, ord)
       where b.fanout_event_id = $1::uuid and b.batch > $2::int
     ),
     kept as (
       select batch, array_agg(actor_id order by ord) as actor_ids, array_agg(subscription_id order by ord) as subscription_ids,
         array_agg(distance_m order by ord) as distances_m, count(*) as n
       from later where not capped group by batch
     ),
     dropped as (
       delete from alert_fanout_batch b
       where b.fanout_event_id = $1::uuid and b.batch > $2::int and b.batch not in (select batch from kept)
     ),
     trimmed as (
       update alert_fanout_batch b set actor_ids = k.actor_ids, subscription_ids = k.subscription_ids, distances_m = k.distances_m
       from kept k
       where b.fanout_event_id = $1::uuid and b.batch = k.batch and k.n < cardinality(b.actor_ids)
     )
     select (select count(*) from later where capped)::int as deferred, (select min(batch) from kept) as next`,
    [eventId, batch, dailyCap],
  );
  return rows[0]!;
}

export interface BatchOutcome {
  notified: number;
  deferred: number;
  skipped: number;
  /** The next batch to run; null when the fan-out is done. */
  next: number | null;
}

/** Records a batch's outcome; returns when the next batch runs. */
export async function recordBatch(client: Queryable, eventId: string, outcome: BatchOutcome): Promise<FanoutSchedule> {
  const { rows } = await client.query<FanoutSchedule>(
    `update alert_fanout f
     set next_batch = coalesce($5::int, next_batch + 1), batches_done = batches_done + 1,
       notified = notified + $2::int, deferred = deferred + $3::int, skipped = skipped + $4::int, updated_at = now(),
       status = case when $5::int is null then 'done' else status end,
       finished_at = case when $5::int is null then now() end
     where event_id = $1::uuid
     returning ${fanoutSchedule("f")}`,
    [eventId, outcome.notified, outcome.deferred, outcome.skipped, outcome.next],
  );
  return rows[0]!;
}

/**
 * Batch 0's outcome: the recipients claimed, the ones deferred at once among
 * them; done when none is left pending. Returns when batch 1 runs.
 */
export async function recordCollected(client: Queryable, eventId: string, claimed: Claimed, batchSize: number): Promise<FanoutSchedule> {
  const { rows } = await client.query<FanoutSchedule>(
    `update alert_fanout f
     set recipients = $2::int + $3::int, deferred = $3::int, batch_size = $4::int, next_batch = 1, updated_at = now(),
       status = case when $2::int = 0 then 'done' else status end,
       finished_at = case when $2::int = 0 then now() end
     where event_id = $1::uuid
     returning ${fanoutSchedule("f")}`,
    [eventId, claimed.pending, claimed.deferred, batchSize],
  );
  return rows[0]!;
}

/** Stops a fan-out; its batches not run yet are dropped. */
export async function stopFanout(client: Queryable, eventId: string, reason: string): Promise<void> {
  await client.query(
    `with dropped as (delete from alert_fanout_batch where fanout_event_id = $1::uuid)
     update alert_fanout set status = 'stopped', stop_reason = $2::text, updated_at = now(), finished_at = now()
     where event_id = $1::uuid`,
    [eventId, reason],
  );
}

/**
 * Fan-outs that have not moved for a while: their job died with a worker
 * (graphile-worker keeps it locked for hours) or failed its retries. Touched
 * here and returned for re-queuing; a batch in progress holds its row and is
 * skipped, and so is a fan-out whose next job is still queued, waiting for
 * its turn behind other fan-outs (a burst can queue minutes of batches) or
 * for a retry: re-adding it would move it to the back of the queue.
 */
export async function claimStalledFanouts(
  client: Queryable,
  olderThanSeconds: number,
  limit: number,
): Promise<Array<FanoutRef & FanoutSchedule & { nextBatch: number }>> {
  const { rows } = await client.query<FanoutRef & FanoutSchedule & { nextBatch: number }>(
    `with stalled as (
       select f.event_id from alert_fanout f
       where f.status = 'running' and f.updated_at < now() - make_interval(secs => $1::double precision)
         and not ${jobWaitingSql(jobKeySql(ALERTS_FANOUT_TASK, { reportId: "f.report_id", eventId: "f.event_id" }))}
       order by f.updated_at
       limit $2::int
       for update of f skip locked
     )
     update alert_fanout f set updated_at = now() from stalled s where f.event_id = s.event_id
     returning f.report_id as "reportId", f.event_id as "eventId", f.next_batch as "nextBatch", ${fanoutSchedule("f")}`,
    [olderThanSeconds, limit],
  );
  return rows;
}
