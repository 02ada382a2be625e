import type { Queryable } from "../../../lib/db.js";
import type { ReportKind } from "../reports/store.js";
import { CONTACT_MESSAGE_TABLE } from "./wire-names.js";

/** Who a contact message is for: the reporter of a lost or found report, or (tag page) an animal's owner. */
export type ContactTargetKind = ReportKind | "animal";

const targetColumn: Record<ContactTargetKind, string> = { lost: "lost_report_id", found: "found_report_id", animal: "animal_id" };

/**
 * One target's messages of the last 24 hours, held ones included: all of
 * them (its daily volume) and one sender's, with when the oldest of the
 * sender's leaves that window.
 */
export async function contactMessagesInLastDay(
  client: Queryable,
  kind: ContactTargetKind,
  targetId: string,
  senderKey: string,
): Promise<{ total: number; fromSender: number; secondsUntilSenderSlot: number }> {
  const { rows } = await client.query<{ total: number; fromSender: number; secondsUntilSenderSlot: number | null }>(
    `select count(*)::int as total,
       count(*) filter (where sender_key = $2::text)::int as "fromSender",
       extract(epoch from min(created_at) filter (where sender_key = $2::text) + interval '1 day' - now())::double precision
         as "secondsUntilSenderSlot"
     from ${CONTACT_MESSAGE_TABLE}
     where ${targetColumn[kind]} = $1::uuid and created_at > now() - interval '1 day'`,
    [targetId, senderKey],
  );
  const row = rows[0]!;
  return { total: row.total, fromSender: row.fromSender, secondsUntilSenderSlot: Math.max(1, row.secondsUntilSenderSlot ?? 0) };
}

export interface StoredContactMessage {
  message: string;
  fromContact: string;
  /** clientAddressKey of the sender, for the sender's daily cap; the digest job clears it after a day. */
  sender: string;
  /** Past the target's daily volume: waits for the notifier's digest (digested_at). */
  held: boolean;
}

export async function insertContactMessage(client: Queryable, kind: ContactTargetKind, targetId: string, row: StoredContactMessage): Promise<string> {
  const { rows } = await client.query<{ id: string }>(
    `insert into ${CONTACT_MESSAGE_TABLE} (${targetColumn[kind]}, message, from_contact, sender_key, held)
     values ($1::uuid, $2::text, $3::text, $4::text, $5::boolean)
     returning id`,
    [targetId, row.message, row.fromContact, row.sender, row.held],
  );
  return rows[0]!.id;
}

/** Locks the animal row, which serialises messages counted against its daily cap; null when unknown. */
export async function lockAnimalOwner(client: Queryable, animalId: string): Promise<{ id: string; ownerId: string } | null> {
  const { rows } = await client.query<{ id: string; ownerId: string }>(
    `select id, owner_id as "ownerId" from animal where id = $1::uuid for update`,
    [animalId],
  );
  return rows[0] ?? null;
}
