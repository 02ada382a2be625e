import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { problems } from "../../../lib/problems.js";
import type { AppDeps } from "../../deps.js";
import { problemResponses } from "../../plugins/openapi.js";
import { IdParams } from "../../schemas.js";
import { ReportAlerts } from "./schemas.js";
import { reportAlerts } from "./store.js";

export const adminAlertRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, { pool }) => {
  app.get(
    "/v1/admin/lost-reports/:id/alerts",
    {
      schema: {
        tags: ["admin", "alerts"],
        summary: "A lost report's neighbourhood alerts: subscriptions in range and fan-out progress",
        description:
          "How many subscriptions cover the report's coarse point now, every subscriber it reached by state (notified, deferred " +
          "to the next morning's digest, digested, still pending, skipped), and each fan-out with its batches done and pending " +
          "and its queued job (attempts, last error). Counts only: no subscriber and no subscription point.",
        params: IdParams,
        response: { 200: ReportAlerts, ...problemResponses(400, 401, 403, 404) },
      },
    },
    async (request) => {
      const alerts = await reportAlerts(pool, request.params.id);
      if (!alerts) throw problems.notFound("lost report");
      return alerts;
    },
  );
};
