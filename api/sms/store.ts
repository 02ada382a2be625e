import type { Queryable } from "../../lib/db.js";
import type { EventType } from "../../lib/events.js";
import type { Channel, NotificationKind } from "../../lib/notifications.js";
import { enqueueDeliveries } from "../../jobs/queue.js";
import type { RecordedEvent } from "../../lib/outbox.js";

/** A notification the API writes itself (a code text, a keyword's answer, a forwarded reply), in the request's transaction. */
export interface ServiceNotification {
  /** A new id when left out. */
  id?: string;
  recipientActorId: string;
  channel: Extract<Channel, "in_app" | "sms">;
  kind: NotificationKind;
  sourceKey: string;
  subject: string;
  body: string;
  data: Record<string, string>;
}

/**
 * Writes the notifications of one source event and queues the delivery of
 * each sms one, in the caller's transaction: in_app rows are written sent, as
 * the notifier writes them (notifier/store.ts newRowStatus). Returns the new ids.
 */
export async function insertServiceNotifications(
  client: Queryable,
  event: RecordedEvent & { type: EventType },
  rows: ServiceNotification[],
): Promise<string[]> {
  if (rows.length === 0) return [];
  const { rows: inserted } = await client.query<{ id: string; channel: Channel }>(
    `insert into notification (id, recipient_actor_id, channel, source_event_id, source_occurred_at, source_key, event_type, kind,
                               subject, body, data, status, attempts, round_attempts, sent_at)
     select coalesce(u.id, gen_random_uuid()), u.r, u.c, $1::uuid, $2::timestamptz, u.k, $3::text, u.kind, u.s, u.b, u.d,
       case when u.c = 'in_app' then 'sent' else 'pending' end,
       case when u.c = 'in_app' then 1 else 0 end, case when u.c = 'in_app' then 1 else 0 end,
       case when u.c = 'in_app' then now() end
     from unnest($4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::jsonb[], $11::uuid[])
       as u(r, c, k, kind, s, b, d, id)
     returning id, channel`,
    [
      event.id,
      event.occurredAt,
      event.type,
      rows.map((r) => r.recipientActorId),
      rows.map((r) => r.channel),
      rows.map((r) => r.sourceKey),
      rows.map((r) => r.kind),
      rows.map((r) => r.subject),
      rows.map((r) => r.body),
      rows.map((r) => JSON.stringify(r.data)),
      rows.map((r) => r.id ?? null),
    ],
  );
  await enqueueDeliveries(client, inserted.filter((r) => r.channel !== "in_app"));
  return inserted.map((r) => r.id);
}

export interface Conversation {
  id: string;
  ownerActorId: string;
  ownerPhone: string;
  finderNumberId: string | null;
  lostReportId: string | null;
  foundReportId: string | null;
  animalId: string | null;
  /** Whether the number that wrote is the owner's side of it. */
  fromOwner: boolean;
}

/** The number's most recent conversation whose last text is within `days`, locked; null when none. */
export async function latestConversation(client: Queryable, phone: string, days: number): Promise<Conversation | null> {
  const { rows } = await client.query<Conversation>(
    `select c.id, c.owner_actor_id as "ownerActorId", c.owner_phone as "ownerPhone", c.finder_number_id as "finderNumberId",
       c.lost_report_id as "lostReportId", c.found_report_id as "foundReportId", c.animal_id as "animalId",
       c.owner_phone = $1::text as "fromOwner"
     from sms_conversation c
     left join sms_number f on f.id = c.finder_number_id
     where c.last_at > now() - make_interval(days => $2::int) and (c.owner_phone = $1::text or f.phone = $1::text)
     order by c.last_at desc
     limit 1
     for update of c`,
    [phone, days],
  );
  return rows[0] ?? null;
}

export async function touchConversation(client: Queryable, id: string): Promise<void> {
  await client.query(`update sms_conversation set last_at = now() where id = $1::uuid`, [id]);
}

export type InboundOutcome = "stop" | "start" | "help" | "to_finder" | "to_owner" | "no_finder_phone" | "no_conversation";

/** Records a received text once: null when its MessageSid was recorded before (the provider retried the webhook). */
export async function recordInbound(
  client: Queryable,
  messageSid: string,
  numberId: string,
  outcome: InboundOutcome,
  conversationId: string | null,
): Promise<string | null> {
  const { rows } = await client.query<{ id: string }>(
    `insert into sms_inbound (message_sid, number_id, outcome, conversation_id) values ($1::text, $2::uuid, $3::text, $4::uuid)
     on conflict (message_sid) do nothing
     returning id`,
    [messageSid, numberId, outcome, conversationId],
  );
  return rows[0]?.id ?? null;
}

/** The number wrote to the service: it is no longer a silent finder's (3 texts a day). */
export async function markWrote(client: Queryable, numberId: string): Promise<void> {
  await client.query(`update sms_number set wrote_at = now() where id = $1::uuid`, [numberId]);
}

/** START: texts to the number resume. */
export async function restartNumber(client: Queryable, numberId: string): Promise<void> {
  await client.query(`update sms_number set stopped_at = null where id = $1::uuid`, [numberId]);
}
