import { randomUUID } from "node:crypto";
import type { Queryable } from "../../lib/db.js";
import { EventType } from "../../lib/events.js";
import { PHONE_VERIFICATION_KIND } from "../../lib/notifications.js";
import { recordEvent, type EventLog } from "../../lib/outbox.js";
import { SERVICE_NAME } from "../../lib/sms/keywords.js";
import { phoneEnding } from "../../lib/sms/phone.js";
import { insertServiceNotifications } from "../sms/store.js";
import type { PhoneState, PhoneStatus } from "./schemas.js";

/**
 * Takes the actor's phone lock for the transaction, then reads their verified
 * number: two PUTs at once would otherwise both pass the hourly count, or
 * both replace the waiting verification. The read is a statement of its own,
 * so its snapshot is taken after the lock.
 */
export async function lockPhoneInUse(client: Queryable, actorId: string): Promise<string | null> {
  await client.query(`select pg_advisory_xact_lock(hashtextextended($1::text, 0))`, [`phone-verification:${actorId}`]);
  const { rows } = await client.query<{ phone: string | null }>(`select phone from notification_preference where actor_id = $1::text`, [actorId]);
  return rows[0]?.phone ?? null;
}

/** True when the number sent STOP (or the provider reported it opted out). */
export async function isStopped(client: Queryable, phone: string): Promise<boolean> {
  const { rows } = await client.query(`select 1 from sms_number where phone = $1::text and stopped_at is not null`, [phone]);
  return rows.length > 0;
}

/** Sets the verified number in use: null clears it. */
export async function setVerifiedPhone(client: Queryable, actorId: string, phone: string | null): Promise<void> {
  await client.query(
    `insert into notification_preference (actor_id, phone) values ($1::text, $2::text)
     on conflict (actor_id) do update set phone = excluded.phone, updated_at = now()`,
    [actorId, phone],
  );
}

export async function dropVerification(client: Queryable, actorId: string): Promise<void> {
  await client.query(`delete from phone_verification where actor_id = $1::text`, [actorId]);
}

const CODE_SUBJECT = `Your ${SERVICE_NAME} code`;
const CODE_BODY = "A code to confirm your phone number went to it by text. It is shown only there.";

/**
 * Starts a verification of `phone`: it replaces the actor's waiting one (a new
 * id, no code yet, so an earlier code dies), records
 * events.account.phone_verification_requested.v1 and writes the code text's
 * notification with its delivery job, all in the caller's transaction. The
 * code is made when the text is sent (notifier/deliverers/sms.ts).
 */
export async function requestVerification(client: Queryable, actorId: string, phone: string, log: EventLog): Promise<void> {
  const { rows } = await client.query<{ id: string }>(
    `insert into phone_verification (actor_id, phone) values ($1::text, $2::text)
     on conflict (actor_id) do update
     set id = gen_random_uuid(), phone = excluded.phone, code_hash = null, expires_at = null, tries = 0, requested_at = now()
     returning id`,
    [actorId, phone],
  );
  const phoneVerificationId = rows[0]!.id;
  const notificationId = randomUUID();
  const type = EventType.PhoneVerificationRequested;
  const event = await recordEvent(client, type, { actorId, phoneVerificationId, notificationId }, log);
  await insertServiceNotifications(client, { ...event, type }, [
    {
      // The event names the notification, so the row is written with that id.
      id: notificationId,
      recipientActorId: actorId,
      channel: "sms",
      kind: PHONE_VERIFICATION_KIND,
      // A later code supersedes this one for an admin replay.
      sourceKey: `${PHONE_VERIFICATION_KIND}:${actorId}`,
      subject: CODE_SUBJECT,
      body: CODE_BODY,
      data: { phoneVerificationId },
    },
  ]);
}

export interface WaitingVerification {
  id: string;
  phone: string;
  codeHash: Buffer | null;
  expired: boolean;
  tries: number;
}

/** The actor's waiting verification, locked; null when none. */
export async function lockVerification(client: Queryable, actorId: string): Promise<WaitingVerification | null> {
  const { rows } = await client.query<WaitingVerification>(
    `select id, phone, code_hash as "codeHash", expires_at is null or expires_at <= now() as expired, tries
     from phone_verification where actor_id = $1::text for update`,
    [actorId],
  );
  return rows[0] ?? null;
}

/** A wrong code: one try fewer left. */
export async function countTry(client: Queryable, id: string): Promise<number> {
  const { rows } = await client.query<{ tries: number }>(`update phone_verification set tries = tries + 1 where id = $1::uuid returning tries`, [id]);
  return rows[0]!.tries;
}

/** What the actor's preferences show of their number: its status and last two digits, never the number. */
export async function phoneState(client: Queryable, actorId: string): Promise<PhoneState> {
  const { rows } = await client.query<{ verified: string | null; pending: string | null; stopped: boolean }>(
    `select p.phone as verified, v.phone as pending,
       exists (select 1 from sms_number n where n.phone = p.phone and n.stopped_at is not null) as stopped
     from (select $1::text as actor_id) a
     left join notification_preference p on p.actor_id = a.actor_id
     left join phone_verification v on v.actor_id = a.actor_id`,
    [actorId],
  );
  const row = rows[0]!;
  const status: PhoneStatus = row.pending !== null ? "pending" : row.verified === null ? "none" : row.stopped ? "stopped" : "verified";
  const shown = row.pending ?? row.verified;
  return { phoneStatus: status, phoneEnding: shown === null ? null : phoneEnding(shown) };
}
