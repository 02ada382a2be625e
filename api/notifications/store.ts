import type { Queryable } from "../../lib/db.js";
import type { Channel, NotificationStatus } from "../../notifier/store.js";
import type { FailuresQuery, NotificationPreferences, TimeCursor } from "./schemas.js";

/** A timestamp as text at full precision, for keyset cursors (a JS Date keeps only milliseconds). */
const cursorText = (column: string) => `to_char(${column} at time zone 'utc', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

export interface MyNotificationRow {
  id: string;
  channel: Channel;
  status: NotificationStatus;
  subject: string;
  body: string;
  eventType: string;
  createdAt: Date;
  sentAt: Date | null;
  cursorAt: string;
}

export async function listMyNotifications(
  client: Queryable,
  actorId: string,
  limit: number,
  after: TimeCursor | null,
): Promise<MyNotificationRow[]> {
  const { rows } = await client.query<MyNotificationRow>(
    `select id, channel, status, subject, body, event_type as "eventType", created_at as "createdAt",
       sent_at as "sentAt", ${cursorText("created_at")} as "cursorAt"
     from notification
     where recipient_actor_id = $1::text
       and ($2::timestamptz is null or (created_at, id) < ($2::timestamptz, $3::uuid))
     order by created_at desc, id desc
     limit $4::int`,
    [actorId, after?.at ?? null, after?.id ?? null, limit],
  );
  return rows;
}

export async function getPreferences(client: Queryable, actorId: string): Promise<NotificationPreferences> {
  const { rows } = await client.query<{ channel: Channel; email: string | null; updatedAt: Date }>(
    `select channel, email, updated_at as "updatedAt" from notification_preference where actor_id = $1::text`,
    [actorId],
  );
  const row = rows[0];
  // Never chosen: the contract's default channel, no address.
  if (!row) return { channel: "email", email: null, updatedAt: null };
  return { channel: row.channel, email: row.email, updatedAt: row.updatedAt.toISOString() };
}

/** Upserts the preference. `email` undefined keeps the stored address; null clears it. */
export async function putPreferences(
  client: Queryable,
  actorId: string,
  channel: Channel,
  email: string | null | undefined,
): Promise<void> {
  await client.query(
    `insert into notification_preference (actor_id, channel, email)
     values ($1::text, $2::text, $3::text)
     on conflict (actor_id) do update
     set channel = excluded.channel,
       email = case when $4::boolean then excluded.email else notification_preference.email end,
       updated_at = now()`,
    [actorId, channel, email ?? null, email !== undefined],
  );
}

export interface FailureRow {
  id: string;
  recipientActorId: string;
  channel: Channel;
  status: "failed" | "dead_letter";
  attempts: number;
  lastError: string | null;
  sourceEventId: string | null;
  createdAt: Date;
  updatedAt: Date;
  cursorAt: string;
}

export async function listFailures(
  client: Queryable,
  filter: Pick<FailuresQuery, "status" | "channel">,
  limit: number,
  after: TimeCursor | null,
): Promise<FailureRow[]> {
  const { rows } = await client.query<FailureRow>(
    `select id, recipient_actor_id as "recipientActorId", channel, status, attempts, last_error as "lastError",
       source_event_id as "sourceEventId", created_at as "createdAt", updated_at as "updatedAt",
       ${cursorText("updated_at")} as "cursorAt"
     from notification
     where status in ('failed', 'dead_letter')
       and ($1::text is null or status = $1::text)
       and ($2::text is null or channel = $2::text)
       and ($3::timestamptz is null or (updated_at, id) < ($3::timestamptz, $4::uuid))
     order by updated_at desc, id desc
     limit $5::int`,
    [filter.status ?? null, filter.channel ?? null, after?.at ?? null, after?.id ?? null, limit],
  );
  return rows;
}

export interface LockedNotification {
  id: string;
  recipientActorId: string;
  channel: Channel;
  status: NotificationStatus;
  lastError: string | null;
}

export async function lockNotification(client: Queryable, id: string): Promise<LockedNotification | null> {
  const { rows } = await client.query<LockedNotification>(
    `select id, recipient_actor_id as "recipientActorId", channel, status, last_error as "lastError"
     from notification where id = $1::uuid
     for update`,
    [id],
  );
  return rows[0] ?? null;
}

/** A later notification to the same recipient about the same thing (source_key) that was sent. */
export async function findLaterSent(client: Queryable, id: string): Promise<string | null> {
  const { rows } = await client.query<{ id: string }>(
    `select later.id
     from notification this
     join notification later
       on later.source_key = this.source_key
      and later.recipient_actor_id = this.recipient_actor_id
      and (later.created_at, later.id) > (this.created_at, this.id)
     where this.id = $1::uuid and later.status = 'sent'
     limit 1`,
    [id],
  );
  return rows[0]?.id ?? null;
}

export async function markPendingForReplay(client: Queryable, id: string): Promise<void> {
  // A replay starts a new round of attempts; `attempts` keeps the lifetime total.
  await client.query(`update notification set status = 'pending', round_attempts = 0, updated_at = now() where id = $1::uuid`, [id]);
}
