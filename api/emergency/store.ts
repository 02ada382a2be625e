import type { Queryable } from "../../lib/db.js";
import type { EmergencyProfileBody, RegisterAnimalBody } from "./schemas.js";

type Species = RegisterAnimalBody["species"];

export async function insertAnimal(client: Queryable, ownerId: string, body: RegisterAnimalBody): Promise<string> {
  const { rows } = await client.query<{ id: string }>(
    `insert into animal (owner_id, name, species, breed, colors)
     values ($1::text, $2::text, $3::text, $4::text, $5::text[])
     returning id`,
    [ownerId, body.name, body.species, body.breed ?? null, body.colors ?? []],
  );
  return rows[0]!.id;
}

export interface AnimalRow {
  id: string;
  ownerId: string;
  name: string;
  species: Species;
  breed: string | null;
  colors: string[];
  createdAt: Date;
  profile: {
    showName: boolean;
    medicalNotes: string | null;
    instructions: string | null;
    issuedAt: string;
    revokedAt: string | null;
  } | null;
}

export async function getAnimal(client: Queryable, id: string): Promise<AnimalRow | null> {
  const { rows } = await client.query<AnimalRow>(
    `select a.id, a.owner_id as "ownerId", a.name, a.species, a.breed, a.colors, a.created_at as "createdAt",
       case when p.animal_id is null then null else json_build_object(
         'showName', p.show_name, 'medicalNotes', p.medical_notes, 'instructions', p.instructions,
         'issuedAt', p.issued_at, 'revokedAt', p.revoked_at) end as profile
     from animal a left join emergency_profile p on p.animal_id = a.id
     where a.id = $1::uuid`,
    [id],
  );
  return rows[0] ?? null;
}

/**
 * Stores the profile with a new token hash. The old hash is replaced, so the
 * previous token stops working in the same commit. A profile an admin revoked
 * is live again under the new token only once an admin has lifted the
 * revocation: until then nothing is written and this returns false. The
 * condition is read on the locked row (on conflict), so a revocation that
 * commits meanwhile is never overwritten.
 */
export async function upsertEmergencyProfile(
  client: Queryable,
  animalId: string,
  tokenHash: Buffer,
  body: EmergencyProfileBody,
): Promise<boolean> {
  const { rowCount } = await client.query(
    `insert into emergency_profile (animal_id, token_hash, medical_notes, instructions, show_name)
     values ($1::uuid, $2::bytea, $3::text, $4::text, $5::boolean)
     on conflict (animal_id) do update
       set token_hash = excluded.token_hash, medical_notes = excluded.medical_notes,
           instructions = excluded.instructions, show_name = excluded.show_name,
           issued_at = now(), revoked_at = null, revoked_by = null, revoke_reason = null,
           revocation_lifted_at = null, updated_at = now()
       where emergency_profile.revoked_at is null or emergency_profile.revocation_lifted_at is not null`,
    [animalId, tokenHash, body.medicalNotes ?? null, body.instructions ?? null, body.showName],
  );
  return rowCount === 1;
}

export interface PublicProfileRow {
  /** For the photo listing only; never shown. */
  animalId: string;
  name: string | null;
  species: Species;
  breed: string | null;
  colors: string[];
  medicalNotes: string | null;
  instructions: string | null;
}

/** The live (not revoked) profile behind a token hash. */
export async function findProfileByTokenHash(client: Queryable, tokenHash: Buffer): Promise<PublicProfileRow | null> {
  const { rows } = await client.query<PublicProfileRow>(
    `select a.id as "animalId", case when p.show_name then a.name end as name, a.species, a.breed, a.colors,
       p.medical_notes as "medicalNotes", p.instructions
     from emergency_profile p join animal a on a.id = p.animal_id
     where p.token_hash = $1::bytea and p.revoked_at is null`,
    [tokenHash],
  );
  return rows[0] ?? null;
}
