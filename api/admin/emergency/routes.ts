import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { AuditAction, AuditObject, writeAuditEvent } from "../../../lib/audit.js";
import { withTransaction, type Pool, type PoolClient } from "../../../lib/db.js";
import { problems } from "../../../lib/problems.js";
import type { AppDeps } from "../../deps.js";
import { requireActor } from "../../plugins/auth.js";
import { problemResponses } from "../../plugins/openapi.js";
import { AnimalIdParams, LiftRevocationBody, RevokeBody } from "./schemas.js";
import { liftRevocation, lockEmergencyProfile, revokeEmergencyProfile, type EmergencyProfileLock } from "./store.js";

/**
 * An admin's change to an animal's emergency profile, on the locked row, and
 * its audit event (with the metadata the change returns) in one transaction;
 * 404 when the animal has no profile.
 */
async function changeProfile(
  pool: Pool,
  audit: { actorId: string; action: AuditAction; animalId: string },
  change: (client: PoolClient, profile: EmergencyProfileLock) => Promise<Record<string, unknown>>,
): Promise<void> {
  await withTransaction(pool, async (client) => {
    const profile = await lockEmergencyProfile(client, audit.animalId);
    if (!profile) throw problems.notFound("emergency profile");
    const metadata = await change(client, profile);
    const { actorId, action, animalId } = audit;
    await writeAuditEvent(client, { actorId, action, objectType: AuditObject.Animal, objectId: animalId, metadata });
  });
}

export const adminEmergencyRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, { pool }) => {
  app.post(
    "/v1/admin/animals/:animalId/emergency-profile/revoke",
    {
      schema: {
        tags: ["admin"],
        summary: "Revoke an animal's public emergency token",
        description:
          "Invalidates the public token only: GET /emergency/{token} answers 404 from then on. The owner's account, the animal and " +
          "the profile's content are untouched. The revocation sticks: the owner's PUT of the profile is 409 until an admin lifts " +
          "it (lift-revocation); a revocation of a profile whose revocation was lifted applies again. 404 when the animal has " +
          "no emergency profile. Revoking an already revoked profile is a 204 no-op that keeps the first revocation's record and is " +
          "still audited (metadata alreadyRevoked). Audited as admin.emergency_profile.revoked in the same transaction.",
        params: AnimalIdParams,
        body: RevokeBody,
        response: { 204: z.null(), ...problemResponses(400, 401, 403, 404) },
      },
    },
    async (request, reply) => {
      const actorId = requireActor(request).id;
      const { animalId } = request.params;
      const { reason } = request.body;
      await changeProfile(pool, { actorId, action: AuditAction.EmergencyProfileRevoked, animalId }, async (client, profile) => {
        // Revoked, not lifted and no token issued since: a lifted revocation, or a token issued after one, is revoked anew.
        const alreadyRevoked = profile.revokedAt !== null && profile.revocationLiftedAt === null && !profile.hasToken;
        if (!alreadyRevoked) await revokeEmergencyProfile(client, animalId, actorId, reason);
        return { reason, ownerId: profile.ownerId, alreadyRevoked };
      });
      return reply.code(204).send(null);
    },
  );

  app.post(
    "/v1/admin/animals/:animalId/emergency-profile/lift-revocation",
    {
      schema: {
        tags: ["admin"],
        summary: "Lift an admin's revocation of an animal's emergency profile",
        description:
          "Lets the owner issue a fresh token again with PUT /v1/animals/{id}/emergency-profile, which an admin's revocation " +
          "refuses (409) until it is lifted. Nothing becomes public here: the revoked token stays dead, and the profile is live " +
          "only under the token the owner's next PUT issues. 404 when the animal has no emergency profile; 409 `conflict` when " +
          "the profile is not revoked, writing nothing. Lifting an already lifted revocation is a 204 no-op, still audited " +
          "(metadata alreadyLifted). Audited as admin.emergency_profile.revocation_lifted in the same transaction, with the " +
          "revocation it lifts.",
        params: AnimalIdParams,
        body: LiftRevocationBody,
        response: { 204: z.null(), ...problemResponses(400, 401, 403, 404, 409) },
      },
    },
    async (request, reply) => {
      const actorId = requireActor(request).id;
      const { animalId } = request.params;
      const { reason } = request.body;
      await changeProfile(pool, { actorId, action: AuditAction.EmergencyProfileRevocationLifted, animalId }, async (client, profile) => {
        if (profile.revokedAt === null) throw problems.conflict("this emergency profile is not revoked");
        const alreadyLifted = profile.revocationLiftedAt !== null;
        if (!alreadyLifted) await liftRevocation(client, animalId);
        const revocation = { revokedAt: profile.revokedAt.toISOString(), revokedBy: profile.revokedBy, reason: profile.revokeReason };
        return { reason, ownerId: profile.ownerId, revocation, alreadyLifted };
      });
      return reply.code(204).send(null);
    },
  );
};
