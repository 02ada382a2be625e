import type { Queryable } from "../../lib/db.js";
import type { Channel, NotificationKind, NotificationStatus } from "../../lib/notifications.js";
import { enqueueDeliveries } from "../queue.js";

/** The delivery job's reads and writes of notification rows, and the stall sweep. */

export interface DeliverableNotification {
  id: string;
  recipientActorId: string;
  channel: Channel;
  status: NotificationStatus;
  attempts: number;
  /** Attempts already made in this round (since creation or the last replay). */
  roundAttempts: number;
  kind: NotificationKind;
  subject: string;
  body: string;
  /** The ids to follow; the email deliverer builds an alert's unsubscribe link from them. */
  data: Record<string, string>;
  /** The event it came from, logged so one event can be followed across the three processes. */
  sourceEventId: string | null;
  /**
   * The recipient's address, read at delivery time so a corrected address applies to a replay. It is the
   * address in use, which the API sets only once confirmed; a confirmation email goes to the address it confirms.
   */
  email: string | null;
  /** A confirmation email's token, made for this delivery and stored only hashed: the email deliverer puts its link in the body. */
  confirmationToken?: string;
  /** A push notification's recipient's subscriptions, oldest first, read with the row (loadForDelivery). */
  pushSubscriptions?: PushSubscriptionRow[];
}

export interface PushSubscriptionRow {
  id: string;
  endpoint: string;
  p256dh: string;
  auth: string;
}

/**
 * The row to deliver, read under the delivery lock (lib/notifications.ts
 * tryLockDelivery, taken in a statement of its own first: this read's snapshot
 * must start after the lock is held, so a delivery that finished just before is
 * seen as sent), with its recipient's address and, for a push, their
 * subscriptions: one round trip instead of two (`npm run bench`, the push
 * drain's statements per push; docs/decisions/0080).
 */
export async function loadForDelivery(client: Queryable, id: string): Promise<DeliverableNotification | null> {
  const { rows } = await client.query<DeliveryRow>({
    // Named: parsed and planned once per connection; every delivery runs it.
    name: "notifier-load-for-delivery",
    text: `${DELIVERY_SELECT} where n.id = $1::uuid`,
    values: [id],
  });
  return rows[0] ? deliverable(rows[0]) : null;
}

/** loadForDelivery for a batch (jobs/delivery/delivery.ts createBatchDelivery), in one statement; the order is not kept. */
export async function loadManyForDelivery(client: Queryable, ids: readonly string[]): Promise<DeliverableNotification[]> {
  if (ids.length === 0) return [];
  const { rows } = await client.query<DeliveryRow>({
    name: "notifier-load-many-for-delivery",
    text: `${DELIVERY_SELECT} where n.id = any($1::uuid[])`,
    values: [ids],
  });
  return rows.map(deliverable);
}

type DeliveryRow = DeliverableNotification & { pushSubscriptions: PushSubscriptionRow[] | null };

const deliverable = (row: DeliveryRow): DeliverableNotification => {
  if (row.pushSubscriptions === null) delete (row as DeliverableNotification).pushSubscriptions;
  return row;
};

// The address is a subquery, not a join: with a join the planner hash-joined the whole preference table
// whenever it expected more than a row or two for the id (a new partition without statistics).
const DELIVERY_SELECT = `select n.id, n.recipient_actor_id as "recipientActorId", n.channel, n.status, n.attempts,
       n.round_attempts as "roundAttempts", n.kind, n.subject, n.body, n.data, n.source_event_id as "sourceEventId",
       (select p.email from notification_preference p where p.actor_id = n.recipient_actor_id) as email,
       case when n.channel = 'push' then
         (select coalesce(json_agg(json_build_object('id', s.id, 'endpoint', s.endpoint, 'p256dh', s.p256dh, 'auth', s.auth)
             order by s.created_at), '[]')
          from push_subscription s where s.actor_id = n.recipient_actor_id)
       end as "pushSubscriptions"
     from notification n`;

/**
 * Gives a waiting email confirmation the hash of a new token and an expiry
 * counted from now, for the delivery about to send its link; the address it
 * confirms, or null when it is gone (replaced by another address, cleared or
 * used), which makes any earlier link of it stop working.
 */
export async function armConfirmation(
  client: Queryable,
  emailConfirmationId: string,
  actorId: string,
  tokenHash: Buffer,
  ttlHours: number,
): Promise<string | null> {
  const { rows } = await client.query<{ email: string }>(
    `update email_confirmation set token_hash = $3::bytea, expires_at = now() + make_interval(hours => $4::int)
     where id = $1::uuid and actor_id = $2::text
     returning email`,
    [emailConfirmationId, actorId, tokenHash, ttlHours],
  );
  return rows[0]?.email ?? null;
}

/** An attempt's outcome, as recordAttempt(s) write it. */
export interface AttemptOutcome {
  id: string;
  status: Exclude<NotificationStatus, "pending">;
  lastError: string | null;
}

/** Records one delivery attempt: its outcome, the error (if any) and the time. */
export async function recordAttempt(
  client: Queryable,
  id: string,
  status: Exclude<NotificationStatus, "pending">,
  lastError: string | null,
): Promise<void> {
  await client.query({
    // Named: parsed and planned once per connection; every delivery runs it.
    name: "notifier-record-attempt",
    text: `update notification
     set attempts = attempts + 1,
       round_attempts = round_attempts + 1,
       status = $2::text,
       last_error = coalesce($3::text, last_error),
       sent_at = case when $2::text = 'sent' then now() else sent_at end,
       updated_at = now()
     where id = $1::uuid`,
    values: [id, status, lastError],
  });
}

/** recordAttempt for a batch's attempts, in one statement. */
export async function recordAttempts(client: Queryable, outcomes: readonly AttemptOutcome[]): Promise<void> {
  if (outcomes.length === 0) return;
  await client.query({
    name: "notifier-record-attempts",
    // `n.id = any($1)` as well as the join: each partition's id index finds the rows, whatever the unnest is estimated at.
    text: `update notification n
     set attempts = n.attempts + 1,
       round_attempts = n.round_attempts + 1,
       status = u.status,
       last_error = coalesce(u.last_error, n.last_error),
       sent_at = case when u.status = 'sent' then now() else n.sent_at end,
       updated_at = now()
     from unnest($1::uuid[], $2::text[], $3::text[]) as u(id, status, last_error)
     where n.id = any($1::uuid[]) and n.id = u.id`,
    values: [outcomes.map((o) => o.id), outcomes.map((o) => o.status), outcomes.map((o) => o.lastError)],
  });
}

/**
 * Re-queues deliveries that stalled: rows still pending or failed long after
 * their last change, which happens when the worker running their job died
 * (graphile-worker keeps that job locked for hours). Returns the ids.
 */
export async function requeueStalledDeliveries(client: Queryable, olderThanSeconds: number, limit: number): Promise<string[]> {
  const { rows } = await client.query<{ id: string; channel: Channel }>(
    `select id, channel from notification
     where status in ('pending', 'failed')
       and updated_at < now() - make_interval(secs => $1::double precision)
     order by updated_at
     limit $2::int
     for update skip locked`,
    [olderThanSeconds, limit],
  );
  await enqueueDeliveries(client, rows);
  for (const { id } of rows) await client.query(`update notification set updated_at = now() where id = $1::uuid`, [id]);
  return rows.map((r) => r.id);
}
