import type { Queryable } from "../../../lib/db.js";

export interface EmergencyProfileLock {
  ownerId: string;
  revokedAt: Date | null;
  revokedBy: string | null;
  revokeReason: string | null;
  /** Set when an admin lifted the revocation: the owner may issue a fresh token. */
  revocationLiftedAt: Date | null;
  hasToken: boolean;
}

export async function lockEmergencyProfile(client: Queryable, animalId: string): Promise<EmergencyProfileLock | null> {
  const { rows } = await client.query<EmergencyProfileLock>(
    `select a.owner_id as "ownerId", p.revoked_at as "revokedAt", p.revoked_by as "revokedBy",
            p.revoke_reason as "revokeReason", p.revocation_lifted_at as "revocationLiftedAt",
            p.token_hash is not null as "hasToken"
     from emergency_profile p join animal a on a.id = p.animal_id
     where p.animal_id = $1::uuid
     for update of p`,
    [animalId],
  );
  return rows[0] ?? null;
}

/**
 * Drops the token hash, so no token can ever match again; the profile's
 * content and the owner stay as they are. An earlier lift is cleared: the
 * owner may not issue a token again until an admin lifts this revocation.
 */
export async function revokeEmergencyProfile(
  client: Queryable,
  animalId: string,
  revokedBy: string,
  reason: string,
): Promise<void> {
  await client.query(
    `update emergency_profile set
       token_hash = null, revoked_at = now(), revoked_by = $2::text, revoke_reason = $3::text,
       revocation_lifted_at = null, updated_at = now()
     where animal_id = $1::uuid`,
    [animalId, revokedBy, reason],
  );
}

/** Lets the owner issue a fresh token; the profile stays revoked (no token) until they do. */
export async function liftRevocation(client: Queryable, animalId: string): Promise<void> {
  await client.query(`update emergency_profile set revocation_lifted_at = now(), updated_at = now() where animal_id = $1::uuid`, [
    animalId,
  ]);
}
