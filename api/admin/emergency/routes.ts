import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { AuditAction, AuditObject, writeAuditEvent } from "../../../lib/audit.js";
import { withTransaction } from "../../../lib/db.js";
import { problems } from "../../../lib/problems.js";
import type { AppDeps } from "../../deps.js";
import { requireActor } from "../../plugins/auth.js";
import { problemResponses } from "../../plugins/openapi.js";
import { AnimalIdParams, RevokeBody } from "./schemas.js";
import { lockEmergencyProfile, revokeEmergencyProfile } from "./store.js";

export const adminEmergencyRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, { pool }) => {
  app.post(
    "/v1/admin/animals/:animalId/emergency-profile/revoke",
    {
      schema: {
        tags: ["admin"],
        summary: "Revoke an animal's public emergency token",
        description:
          "Invalidates the public token only: GET /emergency/{token} answers 404 from then on. The owner's account, the animal and " +
          "the profile's content are untouched; the owner's next PUT of the profile issues a fresh token. 404 when the animal has " +
          "no emergency profile. Revoking an already revoked profile is a 204 no-op that keeps the first revocation's record and is " +
          "still audited (metadata alreadyRevoked). Audited as admin.emergency_profile.revoked in the same transaction.",
        params: AnimalIdParams,
        body: RevokeBody,
        response: { 204: z.null(), ...problemResponses(400, 401, 403, 404) },
      },
    },
    async (request, reply) => {
      const actor = requireActor(request);
      const { animalId } = request.params;
      const { reason } = request.body;
      await withTransaction(pool, async (client) => {
        const profile = await lockEmergencyProfile(client, animalId);
        if (!profile) throw problems.notFound("emergency profile");
        // A token issued after an earlier revocation is live again: only a profile with neither is already revoked.
        const alreadyRevoked = profile.revokedAt !== null && !profile.hasToken;
        if (!alreadyRevoked) await revokeEmergencyProfile(client, animalId, actor.id, reason);
        await writeAuditEvent(client, {
          actorId: actor.id,
          action: AuditAction.EmergencyProfileRevoked,
          objectType: AuditObject.Animal,
          objectId: animalId,
          metadata: { reason, ownerId: profile.ownerId, alreadyRevoked },
        });
      });
      return reply.code(204).send(null);
    },
  );
};
