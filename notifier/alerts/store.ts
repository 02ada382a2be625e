import { actorSuspendedSql } from "../../lib/accounts.js";
import type { Species } from "../../lib/animals.js";
import { ALERTS_FANOUT_TASK, fanoutJobKey } from "../../lib/alerts.js";
import type { Queryable } from "../../lib/db.js";
import type { NewNotification } from "../store.js";

/** SQL of the alert fan-out: starting one, its batches, the stall sweep. Tables: migrations 000006. */

/** A failed batch is retried by graphile-worker, and re-queued by the stall sweep after that. */
export const FANOUT_JOB_MAX_ATTEMPTS = 20;

export interface FanoutRef {
  reportId: string;
  eventId: string;
}

/** Queues batch `batch` of a fan-out in the caller's transaction (one job key per fan-out). */
export async function queueFanoutBatch(client: Queryable, { reportId, eventId }: FanoutRef, batch: number): Promise<void> {
  await client.query(
    `select from graphile_worker.add_job($1::text, json_build_object('fanoutId', $2::uuid, 'batch', $3::int),
       job_key := $4::text, max_attempts := $5::int)`,
    [ALERTS_FANOUT_TASK, eventId, batch, fanoutJobKey(reportId, eventId), FANOUT_JOB_MAX_ATTEMPTS],
  );
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
 * The lookup of subscriptions whose radius covers the report's coarse point:
 * the GiST index on `area` finds the candidates, ST_DWithin keeps the exact
 * ones. Per actor, the closest covering subscription; never the reporter.
 * $1 report id. Exported for the EXPLAIN test and the bench.
 */
export const coveringSubscriptionsSql = `
  select distinct on (s.actor_id) s.actor_id, s.id as subscription_id, st_distance(s.location, r.coarse_location) as distance_m
  from safety_lost_report r
  join alert_subscription s
    on s.area && r.coarse_location::geometry and st_dwithin(s.location, r.coarse_location, s.radius_m)
  where r.id = $1::uuid
    and (s.species is null or r.species = any(s.species))
    and s.actor_id <> r.reporter_id
  order by s.actor_id, distance_m, s.id`;

/**
 * Batch 0: claims every subscriber in range for this fan-out in the ledger.
 * A subscriber already decided for this report (an earlier event) is left
 * alone; one still pending under an earlier fan-out is taken over. Returns
 * how many this fan-out now holds.
 */
export async function collectRecipients(client: Queryable, { reportId, eventId }: FanoutRef): Promise<number> {
  const { rowCount } = await client.query(
    `insert into alert_ledger (report_id, actor_id, fanout_event_id, subscription_id, distance_m)
     select $1::uuid, c.actor_id, $2::uuid, c.subscription_id, c.distance_m from (${coveringSubscriptionsSql}) c
     on conflict (report_id, actor_id) do update
       set fanout_event_id = excluded.fanout_event_id, subscription_id = excluded.subscription_id, distance_m = excluded.distance_m
       where alert_ledger.status = 'pending'`,
    [reportId, eventId],
  );
  return rowCount ?? 0;
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

export async function recordCollected(client: Queryable, eventId: string, recipients: number, batchSize: number): Promise<void> {
  await client.query(
    `update alert_fanout
     set recipients = $2::int, batch_size = $3::int, next_batch = 1, updated_at = now(),
       status = case when $2::int = 0 then 'done' else status end,
       finished_at = case when $2::int = 0 then now() end
     where event_id = $1::uuid`,
    [eventId, recipients, batchSize],
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
 * skipped.
 */
export async function claimStalledFanouts(client: Queryable, olderThanSeconds: number, limit: number): Promise<Array<FanoutRef & { nextBatch: number }>> {
  const { rows } = await client.query<FanoutRef & { nextBatch: number }>(
    `with stalled as (
       select event_id from alert_fanout
       where status = 'running' and updated_at < now() - make_interval(secs => $1::double precision)
       order by updated_at
       limit $2::int
       for update skip locked
     )
     update alert_fanout f set updated_at = now() from stalled s where f.event_id = s.event_id
     returning f.report_id as "reportId", f.event_id as "eventId", f.next_batch as "nextBatch"`,
    [olderThanSeconds, limit],
  );
  return rows;
}
