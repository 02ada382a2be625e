import { randomUUID } from "node:crypto";
import { exactTime, type Queryable } from "../../lib/db.js";
import { CONFIRMATION_TTL_HOURS } from "../../lib/email-confirmation.js";
import { EventType } from "../../lib/events.js";
import { EMAIL_CONFIRMATION_KIND, type Channel, type NotificationKind, type NotificationStatus } from "../../lib/notifications.js";
import { recordEvent, type EventLog } from "../../lib/outbox.js";
import { enqueueDeliveries } from "../../jobs/queue.js";
import type { TimeIdCursor } from "../pagination.js";
import { phoneState } from "../phone/store.js";
import type { EmailKind, EmailStatus, NotificationPreferences } from "./schemas.js";

export interface MyNotificationRow {
  id: string;
  channel: Channel;
  status: NotificationStatus;
  kind: NotificationKind;
  subject: string;
  body: string;
  data: Record<string, string>;
  eventType: string;
  createdAt: Date;
  sentAt: Date | null;
  readAt: Date | null;
  cursorAt: string;
}

export async function listMyNotifications(
  client: Queryable,
  actorId: string,
  limit: number,
  after: TimeIdCursor | null,
): Promise<MyNotificationRow[]> {
  const { rows } = await client.query<MyNotificationRow>(
    `select id, channel, status, kind, subject, body, data, event_type as "eventType", created_at as "createdAt",
       sent_at as "sentAt", read_at as "readAt", ${exactTime("created_at")} as "cursorAt"
     from notification
     where recipient_actor_id = $1::text
       and ($2::timestamptz is null or (created_at, id) < ($2::timestamptz, $3::uuid))
     order by created_at desc, id desc
     limit $4::int`,
    [actorId, after?.at ?? null, after?.id ?? null, limit],
  );
  return rows;
}

/** Marks one of the actor's notifications read (the first time only); false when it is not theirs or does not exist. */
export async function markRead(client: Queryable, actorId: string, id: string): Promise<{ readAt: Date } | null> {
  const { rows } = await client.query<{ readAt: Date }>(
    `update notification set read_at = coalesce(read_at, now())
     where id = $1::uuid and recipient_actor_id = $2::text
     returning read_at as "readAt"`,
    [id, actorId],
  );
  return rows[0] ?? null;
}

export async function getPreferences(client: Queryable, actorId: string): Promise<NotificationPreferences> {
  const { rows } = await client.query<{
    email: string | null;
    pendingEmail: string | null;
    emailKinds: EmailKind[] | null;
    pushKinds: EmailKind[] | null;
    smsKinds: EmailKind[] | null;
    updatedAt: Date;
  }>(
    `select p.email, c.email as "pendingEmail", p.email_kinds as "emailKinds", p.push_kinds as "pushKinds", p.sms_kinds as "smsKinds",
       p.updated_at as "updatedAt"
     from notification_preference p
     left join email_confirmation c on c.actor_id = p.actor_id
     where p.actor_id = $1::text`,
    [actorId],
  );
  const row = rows[0];
  const phone = await phoneState(client, actorId);
  // Never chosen: in_app only (no address), every kind by email once an address is set.
  if (!row) return { email: null, emailStatus: "none", emailKinds: null, pushKinds: null, smsKinds: null, ...phone, channel: "in_app", updatedAt: null };
  const emailStatus: EmailStatus = row.pendingEmail !== null ? "pending" : row.email !== null ? "confirmed" : "none";
  const emails = emailStatus === "confirmed" && (row.emailKinds === null || row.emailKinds.length > 0);
  return {
    email: row.pendingEmail ?? row.email,
    emailStatus,
    emailKinds: row.emailKinds,
    pushKinds: row.pushKinds,
    smsKinds: row.smsKinds,
    ...phone,
    channel: emails ? "email" : "in_app",
    updatedAt: row.updatedAt.toISOString(),
  };
}

/**
 * Upserts the preference. `email` is the address in use (the one the
 * notifier sends to): undefined keeps the stored one, null clears it.
 * `emailKinds` null means every kind; undefined (a PUT of pushKinds alone) keeps the stored choice.
 */
export async function putPreferences(
  client: Queryable,
  actorId: string,
  emailKinds: EmailKind[] | null | undefined,
  email: string | null | undefined,
  pushKinds?: EmailKind[] | null,
  smsKinds?: EmailKind[] | null,
): Promise<void> {
  // pushKinds and smsKinds left out keep the stored choice; a new row gets null (every kind, the default kinds).
  await client.query(
    `insert into notification_preference (actor_id, email_kinds, email, push_kinds, sms_kinds)
     values ($1::text, $2::text[], $3::text, $5::text[], $8::text[])
     on conflict (actor_id) do update
     set email_kinds = case when $7::boolean then excluded.email_kinds else notification_preference.email_kinds end,
       email = case when $4::boolean then excluded.email else notification_preference.email end,
       push_kinds = case when $6::boolean then excluded.push_kinds else notification_preference.push_kinds end,
       sms_kinds = case when $9::boolean then excluded.sms_kinds else notification_preference.sms_kinds end,
       updated_at = now()`,
    [
      actorId,
      emailKinds ?? null,
      email ?? null,
      email !== undefined,
      pushKinds ?? null,
      pushKinds !== undefined,
      emailKinds !== undefined,
      smsKinds ?? null,
      smsKinds !== undefined,
    ],
  );
}

// ---- email confirmation -------------------------------------------------------

/**
 * Takes the actor's address lock for the transaction, then reads the address
 * in use. Two PUTs at once would otherwise both pass the hourly count, or
 * both replace the waiting confirmation. The read is a statement of its own,
 * so its snapshot is taken after the lock.
 */
export async function lockAddressInUse(client: Queryable, actorId: string): Promise<string | null> {
  await client.query(`select pg_advisory_xact_lock(hashtextextended($1::text, 0))`, [`email-confirmation:${actorId}`]);
  const { rows } = await client.query<{ email: string | null }>(
    `select email from notification_preference where actor_id = $1::text`,
    [actorId],
  );
  return rows[0]?.email ?? null;
}

/** Notifications of `kind` the actor caused in the last hour, and the seconds until the oldest of them leaves that hour. */
export async function recentOfKind(client: Queryable, actorId: string, kind: NotificationKind): Promise<{ count: number; secondsUntilSlot: number }> {
  const { rows } = await client.query<{ count: number; secondsUntilSlot: number | null }>(
    `select count(*)::int as count,
       extract(epoch from min(created_at) + interval '1 hour' - now())::float8 as "secondsUntilSlot"
     from notification
     where recipient_actor_id = $1::text and kind = $2::text and created_at > now() - interval '1 hour'`,
    [actorId, kind],
  );
  return { count: rows[0]!.count, secondsUntilSlot: rows[0]!.secondsUntilSlot ?? 0 };
}

/** Confirmation emails the actor caused in the last hour (recentOfKind). */
export const recentConfirmations = (client: Queryable, actorId: string) => recentOfKind(client, actorId, EMAIL_CONFIRMATION_KIND);

/** Drops the actor's waiting confirmation, if any: its link stops working. */
export async function dropConfirmation(client: Queryable, actorId: string): Promise<void> {
  await client.query(`delete from email_confirmation where actor_id = $1::text`, [actorId]);
}

const CONFIRMATION_SUBJECT = "Confirm your email address for Animal Safety";
const CONFIRMATION_BODY =
  "Someone, we hope you, asked Animal Safety to send notifications to this address. " +
  `Open the link below within ${CONFIRMATION_TTL_HOURS} hours to confirm it. Until then no other email goes to this address. ` +
  "If it was not you, ignore this email.";

/**
 * Starts a confirmation of `email`: it replaces the actor's waiting one (a
 * new id, no token yet, so the earlier link dies), records
 * events.account.email_confirmation_requested.v1 and writes the email's
 * notification with its delivery job, all in the caller's transaction. The
 * body has no link: the delivery makes the token when it sends the email.
 */
export async function requestConfirmation(client: Queryable, actorId: string, email: string, log: EventLog): Promise<void> {
  const { rows } = await client.query<{ id: string }>(
    `insert into email_confirmation (actor_id, email) values ($1::text, $2::text)
     on conflict (actor_id) do update
     set id = gen_random_uuid(), email = excluded.email, token_hash = null, requested_at = now(), expires_at = null
     returning id`,
    [actorId, email],
  );
  const emailConfirmationId = rows[0]!.id;
  const notificationId = randomUUID();
  const type = EventType.EmailConfirmationRequested;
  const event = await recordEvent(client, type, { actorId, emailConfirmationId, notificationId }, log);
  await client.query(
    `insert into notification (id, recipient_actor_id, channel, source_event_id, source_key, event_type, kind, subject, body, data)
     values ($1::uuid, $2::text, $3::text, $4::uuid, $5::text, $6::text, $7::text, $8::text, $9::text, $10::jsonb)`,
    [
      notificationId,
      actorId,
      "email" satisfies Channel,
      event.id,
      // A later confirmation email supersedes this one for an admin replay.
      `${EMAIL_CONFIRMATION_KIND}:${actorId}`,
      type,
      EMAIL_CONFIRMATION_KIND,
      CONFIRMATION_SUBJECT,
      CONFIRMATION_BODY,
      JSON.stringify({ emailConfirmationId }),
    ],
  );
  await enqueueDeliveries(client, [{ id: notificationId, channel: "email" }]);
}

/**
 * Follows a link: the waiting confirmation whose token hashes to `tokenHash`
 * and has not expired is deleted (a link works once), and its address
 * becomes the one in use. Null when there is none.
 */
export async function useConfirmation(client: Queryable, tokenHash: Buffer): Promise<{ id: string; actorId: string } | null> {
  const { rows } = await client.query<{ id: string; actorId: string }>(
    `with used as (
       delete from email_confirmation
       where token_hash = $1::bytea and expires_at > now()
       returning id, actor_id, email
     ), confirmed as (
       insert into notification_preference (actor_id, email)
       select actor_id, email from used
       on conflict (actor_id) do update set email = excluded.email, updated_at = now()
       returning actor_id
     )
     select used.id, used.actor_id as "actorId" from used join confirmed using (actor_id)`,
    [tokenHash],
  );
  return rows[0] ?? null;
}
