import { actorSuspendedSql } from "../../lib/accounts.js";
import type { Species } from "../../lib/animals.js";
import { ALERTS_FANOUT_TASK, FANOUT_BATCH_SIZE, fanoutJobKey } from "../../lib/alerts.js";
import type { Queryable } from "../../lib/db.js";
import type { Channel } from "../../lib/notifications.js";
import type { NotificationDraft } from "../handlers.js";
import type { NewNotification } from "../store.js";

/** SQL of the alert fan-out: starting one, its batches, the stall sweep. Tables: migrations 000006. */

/** A failed batch is retried by graphile-worker, and re-queued by the stall sweep after that. */
export const FANOUT_JOB_MAX_ATTEMPTS = 20;

export interface FanoutRef {
  reportId: string;
  eventId: string;
}

/**
 * Queues batch `batch` of a fan-out in the caller's transaction (one job key
 * per fan-out), after the fan-out's counts are updated. Its priority is the
 * number of batches the fan-out has left after this one (graphile-worker
 * runs lower numbers first; starts run at 0, as does a last batch), and its
 * run_at the fan-out's start (ties go to the oldest). When fan-outs queue up
 * behind each other (a burst of reports in a city), starts and last batches
 * run in the order their reports came, so a small fan-out is not held up
 * behind a city's; then the one closest to done goes next, so the city's
 * finish one after another rather than all at the end. A big one waits only
 * while smaller ones keep arriving faster than the fan-out worker runs them.
 */
export async function queueFanoutBatch(client: Queryable, { reportId, eventId }: FanoutRef, batch: number): Promise<void> {
  await client.query(
    `select from alert_fanout f
     cross join lateral graphile_worker.add_job($1::text, json_build_object('fanoutId', $2::uuid, 'batch', $3::int),
       job_key := $4::text, max_attempts := $5::int, run_at := f.created_at,
       priority := least(greatest(coalesce(ceil((f.recipients - f.notified - f.deferred - f.skipped)::numeric / f.batch_size) - 1, 0), 0), 10000)::int)
     where f.event_id = $2::uuid`,
    [ALERTS_FANOUT_TASK, eventId, batch, fanoutJobKey(reportId, eventId), FANOUT_JOB_MAX_ATTEMPTS],
  );
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
  const { rows } = await client.query<{ n: number }>(
    `with orphaned as (
       select j.key, j.payload, j.max_attempts
       from graphile_worker._private_jobs j
       join graphile_worker._private_tasks t on t.id = j.task_id
       where t.identifier = $1::text and j.key is not null
         and j.locked_at < now() - make_interval(secs => $2::double precision)
       limit 100
     )
     select count(graphile_worker.add_job($1::text, o.payload, job_key := o.key, max_attempts := o.max_attempts))::int as n
     from orphaned o`,
    [ALERTS_FANOUT_TASK, lockedForSeconds],
  );
  return rows[0]!.n;
}

export interface LockedFanout {
  eventId: string;
  reportId: string;
  eventType: string;
  status: "running" | "done" | "stopped";
  nextBatch: number;
  afterActor: string | null;
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
       f.next_batch as "nextBatch", f.after_actor as "afterActor",
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
 * A subscription `s` covers lost report `r`: the GiST index on `area` finds
 * the candidates, ST_DWithin keeps the exact ones; its species, if it names
 * any, include the report's; never the reporter's own.
 */
const subscriptionCoversReport = `
  s.area && r.coarse_location::geometry and st_dwithin(s.location, r.coarse_location, s.radius_m)
  and (s.species is null or r.species = any(s.species))
  and s.actor_id <> r.reporter_id`;

/**
 * The lookup of subscriptions whose radius covers the report's coarse point:
 * the GiST index on `area` finds the candidates, ST_DWithin keeps the exact
 * ones. Per actor, the closest covering subscription; never the reporter.
 * $1 report id. Exported for the EXPLAIN test and the bench.
 */
export const coveringSubscriptionsSql = `
  select distinct on (s.actor_id) s.actor_id, s.id as subscription_id, st_distance(s.location, r.coarse_location) as distance_m
  from safety_lost_report r
  join alert_subscription s on ${subscriptionCoversReport}
  where r.id = $1::uuid
  order by s.actor_id, distance_m, s.id`;

/**
 * Fan-out starts whose report no subscription covers are recorded as done
 * with no recipients, here, instead of running as jobs: most reports in a
 * quiet area, and every create of the write-path bench, would otherwise pay
 * a job (its fetch, lock, transaction and completion, and a wake-up of every
 * runner) to find nobody. One statement for a consumer's whole batch, in its
 * transaction. Returns the event ids of the starts that still need their job
 * (a report gone since is left to its job, which does nothing).
 */
export async function recordUncoveredFanouts(client: Queryable, starts: Array<FanoutRef & { eventType: string }>): Promise<Set<string>> {
  if (starts.length === 0) return new Set();
  const { rows } = await client.query<{ eventId: string }>(
    `with start as (
       select * from unnest($1::uuid[], $2::uuid[], $3::text[]) as t(event_id, report_id, event_type)
     ),
     uncovered as (
       select st.* from start st
       join safety_lost_report r on r.id = st.report_id
       where not exists (select 1 from alert_subscription s where ${subscriptionCoversReport})
     ),
     recorded as (
       insert into alert_fanout (event_id, report_id, event_type, status, recipients, batch_size, next_batch, finished_at)
       select event_id, report_id, event_type, 'done', 0, $4::int, 1, now() from uncovered
       on conflict (event_id) do nothing
     )
     select event_id as "eventId" from start where event_id not in (select event_id from uncovered)`,
    [starts.map((s) => s.eventId), starts.map((s) => s.reportId), starts.map((s) => s.eventType), FANOUT_BATCH_SIZE],
  );
  return new Set(rows.map((r) => r.eventId));
}

export interface Claimed {
  /** Left for the batches to decide. */
  pending: number;
  /** Deferred to the digest at once: their count for the day had reached the cap. */
  deferred: number;
}

/**
 * Batch 0: claims every subscriber in range for this fan-out in the ledger.
 * A subscriber already decided for this report (an earlier event) is left
 * alone; one still pending under an earlier fan-out is taken over. A
 * subscriber whose count for the UTC day has reached the cap is deferred to
 * the digest here, in the same statement, as its batch would: the count
 * only grows within a day (a count read before a concurrent batch raised it
 * leaves the subscriber pending, for its batch to decide under the lock).
 * After a burst of reports in one city most of its subscribers are capped,
 * so their batches are never run.
 */
export async function collectRecipients(client: Queryable, { reportId, eventId }: FanoutRef, dailyCap: number): Promise<Claimed> {
  // The planner expects a single covering subscription (ST_DWithin's estimate), so it probes the day's
  // quota once per recipient, as a bitmap scan: 3× a plain index probe's cost over a city's 20,000.
  await client.query(`set local enable_bitmapscan = off`);
  const { rows } = await client.query<Claimed>(
    `with claimed as (
       insert into alert_ledger as l (report_id, actor_id, fanout_event_id, subscription_id, distance_m, status, day, decided_at)
       select $1::uuid, c.actor_id, $2::uuid, c.subscription_id, c.distance_m,
         case when q.actor_id is null then 'pending' else 'deferred' end,
         case when q.actor_id is not null then (now() at time zone 'utc')::date end,
         case when q.actor_id is not null then now() end
       from (${coveringSubscriptionsSql}) c
       left join alert_daily_quota q on q.actor_id = c.actor_id and q.day = (now() at time zone 'utc')::date and q.sent >= $3::int
       on conflict (report_id, actor_id) do update
         set fanout_event_id = excluded.fanout_event_id, subscription_id = excluded.subscription_id, distance_m = excluded.distance_m,
           status = excluded.status, day = excluded.day, decided_at = excluded.decided_at
         where l.status = 'pending'
       returning l.status
     )
     select count(*) filter (where status = 'pending')::int as pending, count(*) filter (where status = 'deferred')::int as deferred
     from claimed`,
    [reportId, eventId, dailyCap],
  );
  await client.query(`set local enable_bitmapscan to default`);
  return rows[0]!;
}

export interface Decided {
  actorId: string;
  subscriptionId: string;
  distanceM: number;
  status: "notified" | "deferred" | "skipped";
}

/**
 * Batch n: the next `size` pending subscribers after `afterActor`, each
 * decided in one statement: skipped when its subscription is gone or its
 * subscriber is suspended (as of this batch: a suspension before it counts,
 * whenever the fan-out started), notified
 * while the subscriber's count for the UTC day is under the cap, deferred to
 * the digest past it. The quota upsert goes in actor order, so concurrent
 * fan-outs lock subscribers in the same order and never deadlock.
 */
export async function decideBatch(
  client: Queryable,
  { reportId, eventId }: FanoutRef,
  afterActor: string | null,
  size: number,
  dailyCap: number,
): Promise<Decided[]> {
  const { rows } = await client.query<Decided>(
    `with batch as (
       select l.actor_id,
         exists (select 1 from alert_subscription s where s.id = l.subscription_id) and not ${actorSuspendedSql("l.actor_id")} as live
       from alert_ledger l
       where l.report_id = $1::uuid and l.fanout_event_id = $2::uuid and l.status = 'pending' and l.actor_id > $3::text
       order by l.actor_id
       limit $4::int
       for update of l
     ),
     quota as (
       insert into alert_daily_quota as q (actor_id, day, sent)
       select actor_id, (now() at time zone 'utc')::date, 1 from batch where live order by actor_id
       on conflict (actor_id, day) do update set sent = q.sent + 1 where q.sent < $5::int
       returning q.actor_id
     ),
     decided as (
       update alert_ledger l
       -- "in (select …)" is a hashed subplan; a join to the quota CTE was planned as a nested loop (1,000 × 1,000).
       set status = case when not b.live then 'skipped' when b.actor_id in (select actor_id from quota) then 'notified' else 'deferred' end,
         day = (now() at time zone 'utc')::date, decided_at = now()
       from batch b
       where l.report_id = $1::uuid and l.actor_id = b.actor_id
       returning l.actor_id, l.subscription_id, l.distance_m, l.status
     )
     select actor_id as "actorId", subscription_id as "subscriptionId", distance_m as "distanceM", status
     from decided order by actor_id`,
    [reportId, eventId, afterActor ?? "", size, dailyCap],
  );
  return rows;
}

/**
 * Defers every subscriber still pending in the fan-out whose count for the
 * UTC day has reached the cap, in one statement, as their batches would (the
 * count only grows within a day, so no quota lock is needed). Returns how
 * many it deferred and how many are left pending.
 */
export async function deferCapped(client: Queryable, { reportId, eventId }: FanoutRef, dailyCap: number): Promise<{ deferred: number; left: number }> {
  const { rows } = await client.query<{ deferred: number; left: number }>(
    `with capped as (
       update alert_ledger l set status = 'deferred', day = (now() at time zone 'utc')::date, decided_at = now()
       from alert_daily_quota q
       where l.report_id = $1::uuid and l.fanout_event_id = $2::uuid and l.status = 'pending'
         and q.actor_id = l.actor_id and q.day = (now() at time zone 'utc')::date and q.sent >= $3::int
       returning 1
     )
     select (select count(*) from capped)::int as deferred,
       -- The statement's snapshot is from before the update: pending then, less the ones deferred.
       ((select count(*) from alert_ledger where report_id = $1::uuid and fanout_event_id = $2::uuid and status = 'pending')
         - (select count(*) from capped))::int as left`,
    [reportId, eventId, dailyCap],
  );
  return rows[0]!;
}

/**
 * Inserts a batch's notifications in one statement, like the consumer's
 * insertNotifications, except that in_app rows are written already `sent`:
 * the row is the in-app message and the in-app deliverer only marks it sent,
 * which would cost a job (an advisory lock, a read and an update) for each of
 * thousands of recipients. Returns the new rows; the ones not in_app (email)
 * still need a delivery job. A row that exists already (a replay) is left alone.
 */
export async function insertAlertNotifications(client: Queryable, batch: NewNotification[]): Promise<Array<{ id: string; channel: string }>> {
  if (batch.length === 0) return [];
  const { rows } = await client.query<{ id: string; channel: string }>(
    `insert into notification (recipient_actor_id, channel, source_event_id, source_key, event_type, kind, subject, body, data,
                               status, attempts, round_attempts, sent_at)
     select u.r, u.c, u.e, u.k, u.t, u.kind, u.s, u.b, u.d,
       case when u.c = 'in_app' then 'sent' else 'pending' end,
       case when u.c = 'in_app' then 1 else 0 end, case when u.c = 'in_app' then 1 else 0 end,
       case when u.c = 'in_app' then now() end
     from unnest($1::text[], $2::text[], $3::uuid[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::jsonb[])
       as u(r, c, e, k, t, kind, s, b, d)
     on conflict (source_event_id, recipient_actor_id, channel) do nothing
     returning id, channel`,
    [
      batch.map((n) => n.recipientActorId),
      batch.map((n) => n.channel),
      batch.map((n) => n.sourceEventId),
      batch.map((n) => n.sourceKey),
      batch.map((n) => n.eventType),
      batch.map((n) => n.kind),
      batch.map((n) => n.subject),
      batch.map((n) => n.body),
      batch.map((n) => JSON.stringify(n.data)),
    ],
  );
  return rows;
}

export interface NearbyRow {
  actorId: string;
  subscriptionId: string;
  /** Index into the texts: the distance rounded to the km (messages.ts textIndex). */
  km: number;
  channel: Channel;
}

/**
 * A batch's nearby_lost notifications in one statement, each row's subject,
 * body and data picked in SQL from `texts` (messages.ts nearbyLostTexts, one
 * per km) by its rounded distance, with its subscription id added to the
 * data: the batch sends Postgres four short columns per row instead of the
 * texts. In-app rows are written sent, as in insertAlertNotifications; a row
 * that exists already (a replay) is left alone. Returns the ids of the new
 * rows that need a delivery job (the email ones).
 */
export async function insertNearbyNotifications(
  client: Queryable,
  source: { eventId: string; eventType: string },
  texts: NotificationDraft[],
  rows: NearbyRow[],
): Promise<string[]> {
  if (rows.length === 0) return [];
  const { rows: inserted } = await client.query<{ id: string }>(
    `with inserted as (
       insert into notification (recipient_actor_id, channel, source_event_id, source_key, event_type, kind, subject, body, data,
                                 status, attempts, round_attempts, sent_at)
       select u.r, u.c, $5::uuid, $6::text, $7::text, $8::text, ($9::text[])[u.km + 1], ($10::text[])[u.km + 1],
         ($11::jsonb[])[u.km + 1] || jsonb_build_object('alertSubscriptionId', u.s::text),
         case when u.c = 'in_app' then 'sent' else 'pending' end,
         case when u.c = 'in_app' then 1 else 0 end, case when u.c = 'in_app' then 1 else 0 end,
         case when u.c = 'in_app' then now() end
       from unnest($1::text[], $2::text[], $3::uuid[], $4::int[]) as u(r, c, s, km)
       on conflict (source_event_id, recipient_actor_id, channel) do nothing
       returning id, channel
     )
     select id from inserted where channel <> 'in_app'`,
    [
      rows.map((r) => r.actorId),
      rows.map((r) => r.channel),
      rows.map((r) => r.subscriptionId),
      rows.map((r) => r.km),
      source.eventId,
      texts[0]!.sourceKey,
      source.eventType,
      texts[0]!.kind,
      texts.map((t) => t.subject),
      texts.map((t) => t.body),
      texts.map((t) => JSON.stringify(t.data)),
    ],
  );
  return inserted.map((r) => r.id);
}

/** The new notifications that need a delivery job: all but in_app, which are written sent. */
export const needingDelivery = (rows: Array<{ id: string; channel: string }>) => rows.filter((r) => r.channel !== "in_app").map((r) => r.id);

export interface BatchOutcome {
  afterActor: string | null;
  notified: number;
  deferred: number;
  skipped: number;
  done: boolean;
}

export async function recordBatch(client: Queryable, eventId: string, outcome: BatchOutcome): Promise<void> {
  await client.query(
    `update alert_fanout
     set next_batch = next_batch + 1, after_actor = coalesce($2::text, after_actor), batches_done = batches_done + 1,
       notified = notified + $3::int, deferred = deferred + $4::int, skipped = skipped + $5::int, updated_at = now(),
       status = case when $6::boolean then 'done' else status end,
       finished_at = case when $6::boolean then now() end
     where event_id = $1::uuid`,
    [eventId, outcome.afterActor, outcome.notified, outcome.deferred, outcome.skipped, outcome.done],
  );
}

/** Batch 0's outcome: the recipients claimed, the ones deferred at once among them; done when none is left pending. */
export async function recordCollected(client: Queryable, eventId: string, claimed: Claimed, batchSize: number): Promise<void> {
  await client.query(
    `update alert_fanout
     set recipients = $2::int + $3::int, deferred = $3::int, batch_size = $4::int, next_batch = 1, updated_at = now(),
       status = case when $2::int = 0 then 'done' else status end,
       finished_at = case when $2::int = 0 then now() end
     where event_id = $1::uuid`,
    [eventId, claimed.pending, claimed.deferred, batchSize],
  );
}

export async function stopFanout(client: Queryable, eventId: string, reason: string): Promise<void> {
  await client.query(
    `update alert_fanout set status = 'stopped', stop_reason = $2::text, updated_at = now(), finished_at = now()
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
export async function claimStalledFanouts(client: Queryable, olderThanSeconds: number, limit: number): Promise<Array<FanoutRef & { nextBatch: number }>> {
  const { rows } = await client.query<FanoutRef & { nextBatch: number }>(
    `with stalled as (
       select f.event_id from alert_fanout f
       where f.status = 'running' and f.updated_at < now() - make_interval(secs => $1::double precision)
         and not exists (
           -- The batches' job key (lib/alerts.ts fanoutJobKey).
           select 1 from graphile_worker._private_jobs j
           where j.key = $3::text || ':' || f.report_id || ':' || f.event_id and j.locked_at is null and j.attempts < j.max_attempts
         )
       order by f.updated_at
       limit $2::int
       for update of f skip locked
     )
     update alert_fanout f set updated_at = now() from stalled s where f.event_id = s.event_id
     returning f.report_id as "reportId", f.event_id as "eventId", f.next_batch as "nextBatch"`,
    [olderThanSeconds, limit, ALERTS_FANOUT_TASK],
  );
  return rows;
}
