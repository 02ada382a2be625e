import type { Species } from "../../lib/animals.js";
import type { Queryable } from "../../lib/db.js";
import { moderationStateOf } from "../safety/sql.js";

export interface TagRow {
  animalId: string;
  ownerId: string;
  /** Always the name: the owner's notification uses it. The page shows it only when showName. */
  animalName: string;
  showName: boolean;
  species: Species;
  breed: string | null;
  colors: string[];
  medicalNotes: string | null;
  instructions: string | null;
  /** The open, unmoderated lost report made from this animal: when it was last seen. */
  lostSince: Date | null;
}

/**
 * The live (not revoked) tag behind a token hash, with the animal's open
 * lost report if public reads may show it. One indexed lookup whatever the
 * token was, so a malformed token costs what an unknown one does.
 */
export async function findTag(client: Queryable, tokenHash: Buffer): Promise<TagRow | null> {
  const { rows } = await client.query<TagRow>({
    name: "tag-find",
    text: `select a.id as "animalId", a.owner_id as "ownerId", a.name as "animalName", p.show_name as "showName",
         a.species, a.breed, a.colors, p.medical_notes as "medicalNotes", p.instructions,
         (select r.last_seen_at from safety_lost_report r
          where r.animal_id = a.id and r.status = 'open' and ${moderationStateOf("lost_report", "r.id")} is null
          order by r.created_at desc limit 1) as "lostSince"
       from emergency_profile p join animal a on a.id = p.animal_id
       where p.token_hash = $1::bytea and p.revoked_at is null`,
    values: [tokenHash],
  });
  return rows[0] ?? null;
}
