import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { MODERATION_REPORTS_PER_HOUR, moderationReportBucket, takeBucketToken } from "../../lib/buckets.js";
import { withTransaction } from "../../lib/db.js";
import { problems } from "../../lib/problems.js";
import type { AppDeps } from "../deps.js";
import { requireActor } from "../plugins/auth.js";
import { problemResponses } from "../plugins/openapi.js";
import { CreateModerationReportBody, ModerationReportCreated } from "./schemas.js";
import * as store from "./store.js";

export const moderationRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, { pool }) => {
  app.post(
    "/v1/moderation/reports",
    {
      config: { auth: "actor" },
      schema: {
        tags: ["moderation"],
        summary: "Report content to the moderators",
        description:
          "Any authenticated actor. The target must exist (404 otherwise). The report enters the admin moderation " +
          "queue with status open; the content stays visible until an admin quarantines or removes it. " +
          `An actor files at most ${MODERATION_REPORTS_PER_HOUR} moderation reports an hour, the same limit as sightings ` +
          "(a token bucket refilling over the hour): past that 429 rate-limited with Retry-After, and nothing is written. " +
          "A report refused with 404 uses no token.",
        body: CreateModerationReportBody,
        response: { 201: ModerationReportCreated, ...problemResponses(400, 401, 403, 404, 429) },
      },
    },
    async (request, reply) => {
      const actor = requireActor(request);
      const body = request.body;
      const id = await withTransaction(pool, async (client) => {
        const wait = await takeBucketToken(client, moderationReportBucket(actor.id));
        if (wait > 0) throw problems.rateLimited(wait, `you can file at most ${MODERATION_REPORTS_PER_HOUR} moderation reports per hour`);
        // Thrown inside the transaction: the token is given back.
        if (!(await store.targetExists(client, body.targetType, body.targetId))) {
          throw problems.notFound(body.targetType.replace("_", " "));
        }
        return store.insertModerationReport(client, actor.id, body);
      });
      return reply.code(201).send({ id });
    },
  );
};
