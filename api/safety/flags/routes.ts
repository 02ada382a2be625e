import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { AuditAction, AuditObject, writeAuditEvent } from "../../../lib/audit.js";
import { withTransaction } from "../../../lib/db.js";
import { problems } from "../../../lib/problems.js";
import type { AppDeps } from "../../deps.js";
import { requireActor } from "../../plugins/auth.js";
import { problemResponses } from "../../plugins/openapi.js";
import { IdParams } from "../../schemas.js";
import { lockVisibleLostReport } from "../access.js";
import { FlagBody } from "./schemas.js";
import * as store from "./store.js";

export const flagRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, { pool }) => {
  app.post(
    "/v1/safety/lost-reports/:id/flag",
    {
      config: { auth: "actor" },
      schema: {
        tags: ["safety"],
        summary: "Flag a lost report",
        description:
          "One flag per actor per report (a second gets 409 already-flagged). The report's flag fields are a single " +
          "slot that the newest flag overwrites; every flag also writes the audit event safety.report_flagged with " +
          "the reason in metadata. Flagging never hides or changes the report's status.",
        params: IdParams,
        body: FlagBody,
        response: { 204: z.null().describe("Flag recorded"), ...problemResponses(400, 401, 403, 404, 409) },
      },
    },
    async (request, reply) => {
      const actor = requireActor(request);
      const { reason } = request.body;
      await withTransaction(pool, async (client) => {
        const report = await lockVisibleLostReport(client, request.params.id, actor);
        if (!(await store.insertFlag(client, report.id, actor.id, reason))) throw problems.alreadyFlagged();
        await store.overwriteFlagSlot(client, report.id, actor.id, reason);
        await writeAuditEvent(client, {
          actorId: actor.id,
          action: AuditAction.ReportFlagged,
          objectType: AuditObject.LostReport,
          objectId: report.id,
          metadata: { reason },
        });
      });
      return reply.code(204).send(null);
    },
  );

};
