import type { Queryable } from "../../../lib/db.js";
import type { ReportKind } from "../reports/store.js";
import { CONTACT_MESSAGE_TABLE } from "./wire-names.js";

/** Who a contact message is for: the reporter of a lost or found report, or (tag page) an animal's owner. */
export type ContactTargetKind = ReportKind | "animal";

const targetColumn: Record<ContactTargetKind, string> = { lost: "lost_report_id", found: "found_report_id", animal: "animal_id" };

/** Messages sent to one target in the last 24 hours, and when the oldest of them leaves that window. */
export async function contactMessagesInLastDay(
  client: Queryable,
  kind: ContactTargetKind,
  targetId: string,
): Promise<{ count: number; secondsUntilSlot: number }> {
  const { rows } = await client.query<{ count: number; secondsUntilSlot: number | null }>(
    `select count(*)::int as count,
       extract(epoch from min(created_at) + interval '1 day' - now())::double precision as "secondsUntilSlot"
     from ${CONTACT_MESSAGE_TABLE}
     where ${targetColumn[kind]} = $1::uuid and created_at > now() - interval '1 day'`,
    [targetId],
  );
  return { count: rows[0]!.count, secondsUntilSlot: rows[0]!.secondsUntilSlot ?? 0 };
}

export async function insertContactMessage(
  client: Queryable,
  kind: ContactTargetKind,
  targetId: string,
  message: string,
  fromContact: string,
): Promise<string> {
  const { rows } = await client.query<{ id: string }>(
    `insert into ${CONTACT_MESSAGE_TABLE} (${targetColumn[kind]}, message, from_contact)
     values ($1::uuid, $2::text, $3::text)
     returning id`,
    [targetId, message, fromContact],
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
