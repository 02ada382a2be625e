import { exactTime, type Queryable } from "../../lib/db.js";
import type { Channel, NotificationKind, NotificationStatus } from "../../lib/notifications.js";
import type { TimeIdCursor } from "../pagination.js";
import type { NotificationPreferences } from "./schemas.js";

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
  const { rows } = await client.query<{ email: string | null; emailKinds: NotificationKind[] | null; updatedAt: Date }>(
    `select email, email_kinds as "emailKinds", updated_at as "updatedAt"
     from notification_preference where actor_id = $1::text`,
    [actorId],
  );
  const row = rows[0];
  // Never chosen: in_app only (no address), every kind by email once an address is set.
  if (!row) return { email: null, emailKinds: null, channel: "in_app", updatedAt: null };
  const emails = row.email !== null && (row.emailKinds === null || row.emailKinds.length > 0);
  return { email: row.email, emailKinds: row.emailKinds, channel: emails ? "email" : "in_app", updatedAt: row.updatedAt.toISOString() };
}

/**
 * Upserts the preference. `email` undefined keeps the stored address; null
 * clears it. `emailKinds` null means every kind.
 */
export async function putPreferences(
  client: Queryable,
  actorId: string,
  emailKinds: NotificationKind[] | null,
  email: string | null | undefined,
): Promise<void> {
  await client.query(
    `insert into notification_preference (actor_id, email_kinds, email)
     values ($1::text, $2::text[], $3::text)
     on conflict (actor_id) do update
     set email_kinds = excluded.email_kinds,
       email = case when $4::boolean then excluded.email else notification_preference.email end,
       updated_at = now()`,
    [actorId, emailKinds, email ?? null, email !== undefined],
  );
}
