import type { Queryable } from "../lib/db.js";
import type { EventType } from "../lib/events.js";
import type { NotificationDraft } from "./handlers.js";

/** Notification SQL shared by the consumer, the delivery job and the admin replay. */

export type Channel = "email" | "in_app";
export type NotificationStatus = "pending" | "sent" | "failed" | "dead_letter";

export const NOTIFICATION_DELIVER_TASK = "notification_deliver";
/**
 * graphile-worker attempts of the delivery job. Delivery retries happen inside
 * the job; these only cover the job itself failing (Postgres unreachable).
 */
export const DELIVER_JOB_MAX_ATTEMPTS = 5;

/** Each recipient's preferred channel; email for those who never chose one (contract). */
export async function preferredChannels(client: Queryable, actorIds: string[]): Promise<Map<string, Channel>> {
  const { rows } = await client.query<{ actorId: string; channel: Channel }>(
    `select actor_id as "actorId", channel from notification_preference where actor_id = any($1::text[])`,
    [actorIds],
  );
  const channels = new Map<string, Channel>(actorIds.map((id) => [id, "email"]));
  for (const row of rows) channels.set(row.actorId, row.channel);
  return channels;
}

export interface NewNotification extends NotificationDraft {
  sourceEventId: string;
  eventType: EventType;
  channel: Channel;
}

/**
 * Inserts the notifications whose event has none yet, in one statement;
 * returns the new ids by source event. Events that already have one are
 * left out of the result (redelivery, a second notifier).
 */
export async function insertNotifications(
  client: Queryable,
  batch: NewNotification[],
): Promise<Array<{ id: string; sourceEventId: string }>> {
  if (batch.length === 0) return [];
  const { rows } = await client.query<{ id: string; sourceEventId: string }>(
    `insert into notification (recipient_actor_id, channel, source_event_id, source_key, event_type, subject, body)
     select * from unnest($1::text[], $2::text[], $3::uuid[], $4::text[], $5::text[], $6::text[], $7::text[])
     on conflict (source_event_id) do nothing
     returning id, source_event_id as "sourceEventId"`,
    [
      batch.map((n) => n.recipientActorId),
      batch.map((n) => n.channel),
      batch.map((n) => n.sourceEventId),
      batch.map((n) => n.sourceKey),
      batch.map((n) => n.eventType),
      batch.map((n) => n.subject),
      batch.map((n) => n.body),
    ],
  );
  return rows;
}

/** Inserts one notification unless one exists for its event; returns the new id, or null. */
export async function insertNotification(client: Queryable, n: NewNotification): Promise<string | null> {
  return (await insertNotifications(client, [n]))[0]?.id ?? null;
}

/**
 * Queues delivery jobs in the caller's transaction, one add_jobs call for the
 * lot. The job key makes a second enqueue of a waiting job replace it rather
 * than add another; a job held by a worker that died is superseded.
 */
export async function enqueueDeliveries(client: Queryable, notificationIds: string[]): Promise<void> {
  if (notificationIds.length === 0) return;
  await client.query(
    `select from graphile_worker.add_jobs(
       array(select ($1::text, json_build_object('notificationId', id), null, null, $2::smallint, $1::text || ':' || id, null, null)::graphile_worker.job_spec
             from unnest($3::uuid[]) as id))`,
    [NOTIFICATION_DELIVER_TASK, DELIVER_JOB_MAX_ATTEMPTS, notificationIds],
  );
}

export async function enqueueDelivery(client: Queryable, notificationId: string): Promise<void> {
  await enqueueDeliveries(client, [notificationId]);
}

export interface DeliverableNotification {
  id: string;
  recipientActorId: string;
  channel: Channel;
  status: NotificationStatus;
  attempts: number;
  /** Attempts already made in this round (since creation or the last replay). */
  roundAttempts: number;
  subject: string;
  body: string;
  /** The event it came from, logged so one event can be followed across the three processes. */
  sourceEventId: string | null;
  /** The recipient's address, read at delivery time so a corrected address applies to a replay. */
  email: string | null;
}

export async function loadForDelivery(client: Queryable, id: string): Promise<DeliverableNotification | null> {
  const { rows } = await client.query<DeliverableNotification>(
    `select n.id, n.recipient_actor_id as "recipientActorId", n.channel, n.status, n.attempts,
       n.round_attempts as "roundAttempts", n.subject, n.body, n.source_event_id as "sourceEventId", p.email
     from notification n
     left join notification_preference p on p.actor_id = n.recipient_actor_id
     where n.id = $1::uuid`,
    [id],
  );
  return rows[0] ?? null;
}

/** Records one delivery attempt: its outcome, the error (if any) and the time. */
export async function recordAttempt(
  client: Queryable,
  id: string,
  status: Exclude<NotificationStatus, "pending">,
  lastError: string | null,
): Promise<void> {
  await client.query(
    `update notification
     set attempts = attempts + 1,
       round_attempts = round_attempts + 1,
       status = $2::text,
       last_error = coalesce($3::text, last_error),
       sent_at = case when $2::text = 'sent' then now() else sent_at end,
       updated_at = now()
     where id = $1::uuid`,
    [id, status, lastError],
  );
}

/**
 * Re-queues deliveries that stalled: rows still pending or failed long after
 * their last change, which happens when the worker running their job died
 * (graphile-worker keeps that job locked for hours). Returns the ids.
 */
export async function requeueStalledDeliveries(client: Queryable, olderThanSeconds: number, limit: number): Promise<string[]> {
  const { rows } = await client.query<{ id: string }>(
    `select id from notification
     where status in ('pending', 'failed')
       and updated_at < now() - make_interval(secs => $1::double precision)
     order by updated_at
     limit $2::int
     for update skip locked`,
    [olderThanSeconds, limit],
  );
  for (const { id } of rows) {
    await enqueueDelivery(client, id);
    await client.query(`update notification set updated_at = now() where id = $1::uuid`, [id]);
  }
  return rows.map((r) => r.id);
}

/** Key of the session advisory lock a delivery holds, so one notification never has two deliveries at once. */
export function deliveryLockKey(notificationId: string): string {
  return `${NOTIFICATION_DELIVER_TASK}:${notificationId}`;
}

export async function tryLockDelivery(client: Queryable, notificationId: string): Promise<boolean> {
  const { rows } = await client.query<{ locked: boolean }>(
    `select pg_try_advisory_lock(hashtextextended($1::text, 0)) as locked`,
    [deliveryLockKey(notificationId)],
  );
  return rows[0]!.locked;
}

export async function unlockDelivery(client: Queryable, notificationId: string): Promise<void> {
  await client.query(`select pg_advisory_unlock(hashtextextended($1::text, 0))`, [deliveryLockKey(notificationId)]);
}

/** For the replay transaction: false while a delivery of this notification is running. */
export async function tryLockDeliveryInTransaction(client: Queryable, notificationId: string): Promise<boolean> {
  const { rows } = await client.query<{ locked: boolean }>(
    `select pg_try_advisory_xact_lock(hashtextextended($1::text, 0)) as locked`,
    [deliveryLockKey(notificationId)],
  );
  return rows[0]!.locked;
}
