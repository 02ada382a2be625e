import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
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
          "queue with status open; the content stays visible until an admin quarantines or removes it.",
        body: CreateModerationReportBody,
        response: { 201: ModerationReportCreated, ...problemResponses(400, 401, 403, 404) },
      },
    },
    async (request, reply) => {
      const actor = requireActor(request);
      const body = request.body;
      const id = await withTransaction(pool, async (client) => {
        if (!(await store.targetExists(client, body.targetType, body.targetId))) {
          throw problems.notFound(body.targetType.replace("_", " "));
        }
        return store.insertModerationReport(client, actor.id, body);
      });
      return reply.code(201).send({ id });
    },
  );
};
