import type { Queryable } from "../lib/db.js";
import type { EventType } from "../lib/events.js";
import { NOTIFICATION_DELIVER_TASK } from "../lib/job-payloads.js";
import { DEFAULT_SMS_KINDS, type Channel, type NotificationKind, type NotificationStatus } from "../lib/notifications.js";
import { enqueue } from "../lib/queue.js";
import type { NotificationDraft } from "./handlers.js";

/** Notification SQL of the notifier: the consumer's inserts, the delivery job's reads and writes, the stall sweep. */

/** Who gets email, and for which kinds: null kinds means every kind (contract, part 2). */
export interface EmailPreference {
  email: string | null;
  emailKinds: NotificationKind[] | null;
  /** Kinds pushed to phones; null means every kind. */
  pushKinds?: NotificationKind[] | null;
  /** Whether the recipient has a push subscription now: a push notification is written only then. */
  hasPush?: boolean;
  /** Kinds texted to a verified phone; null means DEFAULT_SMS_KINDS. */
  smsKinds?: NotificationKind[] | null;
  /** Whether the recipient has a verified phone that has not sent STOP: an sms notification is written only then. */
  hasPhone?: boolean;
}

/**
 * The preferences of these recipients, and whether each has a push
 * subscription (migration 000020): a recipient with a subscription and no
 * preference row gets an entry too, with email unset.
 */
export async function emailPreferences(client: Queryable, actorIds: string[]): Promise<Map<string, EmailPreference>> {
  // Most events (a new report, a photo) notify nobody: no round trip for them.
  if (actorIds.length === 0) return new Map();
  const { rows } = await client.query<EmailPreference & { actorId: string }>(
    `select a.id as "actorId", p.email, p.email_kinds as "emailKinds", p.push_kinds as "pushKinds",
       exists (select 1 from push_subscription s where s.actor_id = a.id) as "hasPush",
       p.sms_kinds as "smsKinds",
       p.phone is not null and not exists (select 1 from sms_number n where n.phone = p.phone and n.stopped_at is not null) as "hasPhone"
     from unnest($1::text[]) as a(id)
     left join notification_preference p on p.actor_id = a.id
     where p.actor_id is not null or exists (select 1 from push_subscription s where s.actor_id = a.id)`,
    [actorIds],
  );
  return new Map(rows.map(({ actorId, ...preference }) => [actorId, preference]));
}

/**
 * in_app always; email as well when the recipient set an address and wants
 * this kind by email; push as well when they have a push subscription now
 * and want this kind pushed (pushKinds null: every kind). A recipient with no
 * subscription gets no push row at all, rather than one that dead-letters.
 * sms as well when they have a verified phone that has not sent STOP and want
 * this kind texted (smsKinds null: DEFAULT_SMS_KINDS).
 */
export function channelsFor(kind: NotificationKind, preference: EmailPreference | undefined): Channel[] {
  const email = preference?.email && (preference.emailKinds === null || preference.emailKinds.includes(kind));
  const push = preference?.hasPush && (preference.pushKinds == null || preference.pushKinds.includes(kind));
  const sms = preference?.hasPhone && (preference.smsKinds ?? (DEFAULT_SMS_KINDS as readonly NotificationKind[])).includes(kind);
  const channels: Channel[] = email ? ["in_app", "email"] : ["in_app"];
  if (push) channels.push("push");
  if (sms) channels.push("sms");
  return channels;
}

export interface NewNotification extends NotificationDraft {
  sourceEventId: string;
  /**
   * The source event's occurredAt as its envelope carries it (to the
   * millisecond): notifications are partitioned on it, and it is part of the
   * key that keeps one row per (source event, recipient, channel), so every
   * copy of an event must give the same value (migration 000022). A source
   * that is no event gives a time fixed with its id (a digest's day), or, for
   * a source id made fresh with the row (a contact-message digest), the time
   * it was made.
   */
  sourceOccurredAt: string | Date;
  eventType: EventType;
  channel: Channel;
}

/** A batch of notifications as ten column arrays, the parameters $1–$10 of notificationsUnnest. */
export const notificationArrays = (batch: NewNotification[]): unknown[] => [
  batch.map((n) => n.recipientActorId),
  batch.map((n) => n.channel),
  batch.map((n) => n.sourceEventId),
  batch.map((n) => n.sourceKey),
  batch.map((n) => n.eventType),
  batch.map((n) => n.kind),
  batch.map((n) => n.subject),
  batch.map((n) => n.body),
  batch.map((n) => JSON.stringify(n.data)),
  batch.map((n) => (n.sourceOccurredAt instanceof Date ? n.sourceOccurredAt.toISOString() : n.sourceOccurredAt)),
];

/** The rows of notificationArrays: recipient, channel, source event, source key, event type, kind, subject, body, data, source time. */
export const notificationsUnnest = `unnest($1::text[], $2::text[], $3::uuid[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::jsonb[], $10::timestamptz[])`;

/** The channel whose rows are written sent (newRowStatus). */
const IN_APP: Channel = "in_app";

/** The status a new row is written with when a delivery job still has to send it (needingDelivery). */
export const AWAITING_DELIVERY: NotificationStatus = "pending";

/**
 * status, attempts, round_attempts and sent_at of a new row on channel `c`.
 * An in_app row is written `sent`: the row is the in-app message (read at
 * GET /v1/me/notifications), and its delivery job would only mark it sent, at
 * the price of a job (its insert, claim and delete), an advisory lock, a read
 * and an update for every in-app notification: six statements and two dead
 * tuples, on the same cores as the consumer (`npm run bench`, notifier).
 * Every other row is written AWAITING_DELIVERY.
 */
export const newRowStatus = (c: string) => {
  const inApp = `${c} = '${IN_APP}'`;
  const sent: NotificationStatus = "sent";
  return `case when ${inApp} then '${sent}' else '${AWAITING_DELIVERY}' end,
   case when ${inApp} then 1 else 0 end, case when ${inApp} then 1 else 0 end,
   case when ${inApp} then now() end`;
};

/**
 * Inserts the notifications that do not exist yet, in one statement, in_app
 * ones written sent (newRowStatus); the unique (source event, its time,
 * recipient, channel) leaves out the ones a redelivery or a second notifier
 * already wrote. Returns the new rows; needingDelivery picks the ones a delivery job
 * still has to send.
 */
export async function insertNotifications(
  client: Queryable,
  batch: NewNotification[],
): Promise<Array<{ id: string; sourceEventId: string; status: NotificationStatus }>> {
  if (batch.length === 0) return [];
  const { rows } = await client.query<{ id: string; sourceEventId: string; status: NotificationStatus }>(
    `insert into notification (recipient_actor_id, channel, source_event_id, source_key, event_type, kind, subject, body, data,
                               source_occurred_at, status, attempts, round_attempts, sent_at)
     select u.r, u.c, u.e, u.k, u.t, u.kind, u.s, u.b, u.d, u.o, ${newRowStatus("u.c")}
     from ${notificationsUnnest} as u(r, c, e, k, t, kind, s, b, d, o)
     on conflict (source_event_id, source_occurred_at, recipient_actor_id, channel) do nothing
     returning id, source_event_id as "sourceEventId", status`,
    notificationArrays(batch),
  );
  return rows;
}

/** The ids of new notifications that need a delivery job: those newRowStatus wrote AWAITING_DELIVERY. */
export const needingDelivery = (rows: Array<{ id: string; status: NotificationStatus }>) =>
  rows.filter((r) => r.status === AWAITING_DELIVERY).map((r) => r.id);

/** Inserts one notification unless it exists; returns the new id, or null. */
export async function insertNotification(client: Queryable, n: NewNotification): Promise<string | null> {
  return (await insertNotifications(client, [n]))[0]?.id ?? null;
}

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

/** loadForDelivery for a batch (notifier/delivery.ts createBatchDelivery), in one statement; the order is not kept. */
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
    await enqueue(client, NOTIFICATION_DELIVER_TASK, { notificationId: id });
    await client.query(`update notification set updated_at = now() where id = $1::uuid`, [id]);
  }
  return rows.map((r) => r.id);
}
