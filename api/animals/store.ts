import { exactTime, type Queryable } from "../../lib/db.js";
import type { Species } from "../../lib/animals.js";
import type { TimeIdCursor } from "../pagination.js";

/** An animal's open lost report that public reads may show (not quarantined or removed); null when none. */
export interface MyAnimalRow {
  id: string;
  name: string;
  species: Species;
  breed: string | null;
  colors: string[];
  createdAt: Date;
  cursorAt: string;
  profile: { showName: boolean; issuedAt: string; revokedAt: string | null } | null;
  /** The open lost report made from this animal, moderated or not (the owner sees their own). */
  openLostReportId: string | null;
}

/** The owner's animals, newest first, keyset-paginated on (created_at, id). */
export async function listMyAnimals(client: Queryable, ownerId: string, after: TimeIdCursor | null, limit: number): Promise<MyAnimalRow[]> {
  const { rows } = await client.query<MyAnimalRow>(
    `select a.id, a.name, a.species, a.breed, a.colors, a.created_at as "createdAt", ${exactTime("a.created_at")} as "cursorAt",
       case when p.animal_id is null then null
            else json_build_object('showName', p.show_name, 'issuedAt', p.issued_at, 'revokedAt', p.revoked_at) end as profile,
       (select r.id from safety_lost_report r where r.animal_id = a.id and r.status = 'open' limit 1) as "openLostReportId"
     from animal a left join emergency_profile p on p.animal_id = a.id
     where a.owner_id = $1::text
       and ($2::timestamptz is null or (a.created_at, a.id) < ($2::timestamptz, $3::uuid))
     order by a.created_at desc, a.id desc
     limit $4::int`,
    [ownerId, after?.at ?? null, after?.id ?? null, limit],
  );
  return rows;
}

/** Any open lost report of the animal, moderated or not: one may be open at a time. */
export async function hasOpenLostReport(client: Queryable, animalId: string): Promise<boolean> {
  const { rows } = await client.query(`select 1 from safety_lost_report where animal_id = $1::uuid and status = 'open' limit 1`, [animalId]);
  return rows.length > 0;
}
