import type { Queryable } from "../../../lib/db.js";
import { reportTable, type ReportKind } from "../../../lib/report-lifecycle.js";

/**
 * The sms deliverer's SQL. Each function is one statement: the delivery's
 * client is shared by the sends of a batch delivery (notifier/delivery.ts
 * createBatchDelivery), so a deliverer never opens a transaction on it.
 */

/** The actor's verified number: the only one texted for them, but for a code. */
export async function verifiedPhone(client: Queryable, actorId: string): Promise<string | null> {
  const { rows } = await client.query<{ phone: string | null }>(`select phone from notification_preference where actor_id = $1::text`, [actorId]);
  return rows[0]?.phone ?? null;
}

/**
 * Gives a waiting phone verification the hash of a new code, an expiry
 * counted from now and its tries back, for the delivery about to text that
 * code; the number it verifies, or null when it is gone (replaced, removed or
 * verified), which also makes any earlier code of it stop working.
 */
export async function armPhoneCode(
  client: Queryable,
  verificationId: string,
  actorId: string,
  codeHash: Buffer,
  ttlMinutes: number,
): Promise<string | null> {
  const { rows } = await client.query<{ phone: string }>(
    `update phone_verification set code_hash = $3::bytea, expires_at = now() + make_interval(mins => $4::int), tries = 0
     where id = $1::uuid and actor_id = $2::text
     returning phone`,
    [verificationId, actorId, codeHash, ttlMinutes],
  );
  return rows[0]?.phone ?? null;
}

export interface ContactMessageForText {
  message: string;
  fromContact: string;
  lostReportId: string | null;
  foundReportId: string | null;
  animalId: string | null;
}

/** The contact message a relay_message notification is about. */
export async function contactMessage(client: Queryable, id: string): Promise<ContactMessageForText | null> {
  const { rows } = await client.query<ContactMessageForText>(
    `select message, from_contact as "fromContact", lost_report_id as "lostReportId", found_report_id as "foundReportId",
       animal_id as "animalId"
     from safety_relay_message where id = $1::uuid`,
    [id],
  );
  return rows[0] ?? null;
}

/** The report's short code (its printed link, GET /s/{code}); null when the report is gone. */
export async function reportShortCode(client: Queryable, kind: ReportKind, id: string): Promise<string | null> {
  const { rows } = await client.query<{ shortCode: string }>(`select short_code as "shortCode" from ${reportTable[kind]} where id = $1::uuid`, [id]);
  return rows[0]?.shortCode ?? null;
}

/** Which rows a reservation took: both, or it gives back the one it took. */
export interface Reservation {
  recipient: boolean;
  service: boolean;
}

/**
 * Reserves one text of `segments` on `day` (UTC) against the number's daily
 * cap and the service's daily segments, both or neither. The upserts check
 * their limit against the row they lock, so concurrent deliveries never go
 * past one; when only one upsert took (another delivery won the other row at
 * that moment), the caller gives it back with releaseText.
 */
export async function reserveText(
  client: Queryable,
  day: string,
  numberId: string,
  segments: number,
  caps: { recipientTexts: number; serviceSegments: number },
): Promise<{ ok: true; took: Reservation } | { ok: false; full: "recipient" | "service"; took: Reservation }> {
  const { rows } = await client.query<{ recipient: boolean; service: boolean; tookRecipient: boolean; tookService: boolean }>(
    `with room as (
       select coalesce((select texts from sms_daily_usage where day = $1::date and number_id = $2::uuid), 0) + 1 <= $4::int as recipient,
              coalesce((select segments from sms_daily_segments where day = $1::date), 0) + $3::int <= $5::int as service
     ), one as (
       insert into sms_daily_usage (day, number_id, texts, segments)
       select $1::date, $2::uuid, 1, $3::int from room where recipient and service
       on conflict (day, number_id) do update set texts = sms_daily_usage.texts + 1, segments = sms_daily_usage.segments + excluded.segments
         where sms_daily_usage.texts + 1 <= $4::int
       returning 1
     ), total as (
       insert into sms_daily_segments (day, segments)
       select $1::date, $3::int from room where recipient and service
       on conflict (day) do update set segments = sms_daily_segments.segments + excluded.segments
         where sms_daily_segments.segments + excluded.segments <= $5::int
       returning 1
     )
     select room.recipient, room.service, exists (select 1 from one) as "tookRecipient", exists (select 1 from total) as "tookService"
     from room`,
    [day, numberId, segments, caps.recipientTexts, caps.serviceSegments],
  );
  const row = rows[0]!;
  const took = { recipient: row.tookRecipient, service: row.tookService };
  if (took.recipient && took.service) return { ok: true, took };
  // The service's budget first: past it, no number's cap matters.
  const full = !row.service || (row.recipient && !took.service) ? "service" : "recipient";
  return { ok: false, full, took };
}

/** Gives back what reserveText took: the provider did not take the text. */
export async function releaseText(client: Queryable, day: string, numberId: string, segments: number, took: Reservation): Promise<void> {
  await client.query(
    `with one as (
       update sms_daily_usage set texts = texts - 1, segments = segments - $3::int
       where $4::boolean and day = $1::date and number_id = $2::uuid
     )
     update sms_daily_segments set segments = segments - $3::int where $5::boolean and day = $1::date`,
    [day, numberId, segments, took.recipient, took.service],
  );
}

/**
 * Claims the number's first text, which says how to stop: true for the one
 * delivery that claims it, whatever others run at once. A claim whose text the
 * provider did not take is given back (unclaimFirstText).
 */
export async function claimFirstText(client: Queryable, numberId: string): Promise<boolean> {
  const { rowCount } = await client.query(`update sms_number set texted_at = now() where id = $1::uuid and texted_at is null`, [numberId]);
  return rowCount === 1;
}

export async function unclaimFirstText(client: Queryable, numberId: string): Promise<void> {
  await client.query(`update sms_number set texted_at = null where id = $1::uuid`, [numberId]);
}

export interface ConversationStart {
  relayMessageId: string;
  ownerActorId: string;
  ownerPhone: string;
  finderNumberId: string | null;
  lostReportId: string | null;
  foundReportId: string | null;
  animalId: string | null;
}

/** The contact message reached the owner's phone: replies from it now belong to this conversation. */
export async function startConversation(client: Queryable, c: ConversationStart): Promise<void> {
  await client.query(
    `insert into sms_conversation (relay_message_id, owner_actor_id, owner_phone, finder_number_id, lost_report_id, found_report_id, animal_id)
     values ($1::uuid, $2::text, $3::text, $4::uuid, $5::uuid, $6::uuid, $7::uuid)
     on conflict (relay_message_id) do update set owner_phone = excluded.owner_phone, last_at = now()`,
    [c.relayMessageId, c.ownerActorId, c.ownerPhone, c.finderNumberId, c.lostReportId, c.foundReportId, c.animalId],
  );
}

/** Segments the service has sent on `day` (UTC): the sms_segments_today gauge. */
export async function segmentsOn(client: Queryable, day: string): Promise<number> {
  const { rows } = await client.query<{ segments: number }>(`select segments from sms_daily_segments where day = $1::date`, [day]);
  return rows[0]?.segments ?? 0;
}
