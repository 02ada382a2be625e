import { exactTime, type Queryable } from "../../../lib/db.js";
import type { Channel, NotificationStatus } from "../../../lib/notifications.js";
import type { TimeIdCursor } from "../../pagination.js";
import type { FailuresQuery } from "./schemas.js";

/** The failures console and replay: notification SQL on the admin side. */

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
  after: TimeIdCursor | null,
): Promise<FailureRow[]> {
  const { rows } = await client.query<FailureRow>(
    `select id, recipient_actor_id as "recipientActorId", channel, status, attempts, last_error as "lastError",
       source_event_id as "sourceEventId", created_at as "createdAt", updated_at as "updatedAt",
       ${exactTime("updated_at")} as "cursorAt"
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

/**
 * A later notification to the same recipient about the same thing (source_key)
 * that was sent. A row of the same source event on another channel is its
 * sibling, not a later notification: the in-app row of an event is written
 * sent in the same statement as its email row, so without that condition a
 * failed email could be refused as superseded by its own in-app twin.
 */
export async function findLaterSent(client: Queryable, id: string): Promise<string | null> {
  const { rows } = await client.query<{ id: string }>(
    `select later.id
     from notification this
     join notification later
       on later.source_key = this.source_key
      and later.recipient_actor_id = this.recipient_actor_id
      and (later.created_at, later.id) > (this.created_at, this.id)
      and later.source_event_id is distinct from this.source_event_id
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
