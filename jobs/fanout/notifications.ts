import type { Queryable } from "../../lib/db.js";
import type { Channel } from "../../lib/notifications.js";
import type { NotificationDraft } from "../../lib/notification-rows.js";
import { AWAITING_DELIVERY, newRowStatus } from "../../lib/notification-rows.js";
import type { PendingDelivery } from "../queue.js";

/** The nearby_lost notification rows of the fan-out, written thousands at a time. */

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
 * texts. In-app rows are written sent, as in insertNotifications; a row
 * that exists already (a replay) is left alone. Returns the ids of the new
 * rows that need a delivery job (the email ones).
 */
export async function insertNearbyNotifications(
  client: Queryable,
  source: { eventId: string; eventType: string },
  texts: NotificationDraft[],
  rows: NearbyRow[],
): Promise<PendingDelivery[]> {
  if (rows.length === 0) return [];
  const { rows: inserted } = await client.query<PendingDelivery>(
    `with inserted as (
       insert into notification (recipient_actor_id, channel, source_event_id, source_key, event_type, kind, subject, body, data,
                                 source_occurred_at, status, attempts, round_attempts, sent_at)
       select u.r, u.c, $5::uuid, $6::text, $7::text, $8::text, ($9::text[])[u.km + 1], ($10::text[])[u.km + 1],
         ($11::jsonb[])[u.km + 1] || jsonb_build_object('alertSubscriptionId', u.s::text),
         -- The fan-out's own time, fixed when it was recorded: every batch and replay of it gives the same
         -- value, which the idempotency key contains (migration 000022).
         coalesce((select f.created_at from alert_fanout f where f.event_id = $5::uuid), now()),
         ${newRowStatus("u.c")}
       from unnest($1::text[], $2::text[], $3::uuid[], $4::int[]) as u(r, c, s, km)
       on conflict (source_event_id, source_occurred_at, recipient_actor_id, channel) do nothing
       returning id, channel, status
     )
     select id, channel from inserted where status = '${AWAITING_DELIVERY}'`,
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
  return inserted;
}

