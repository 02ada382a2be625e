import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import type { AppDeps } from "../../deps.js";
import { decodeCursor, page, toPage } from "../../pagination.js";
import { problemResponses } from "../../plugins/openapi.js";
import { Alert, AlertsCursor, AlertsQuery } from "./schemas.js";
import * as store from "./store.js";
import * as views from "./views.js";

export const alertRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, { reads }) => {
  app.get(
    "/v1/safety/alerts",
    {
      config: { auth: "public" },
      schema: {
        tags: ["safety"],
        summary: "Open lost and found reports near a point",
        description:
          "No authentication. Open, unmoderated reports whose coarse (~1 km cell centre) point lies within radiusKm " +
          "(default 10, max 100) of lat/lon, nearest first. distanceKm is measured to the coarse point and rounded " +
          "to 0.1 km, and the radius filter also uses the coarse point, so no query reveals more than the public cell. " +
          "Paginated with ?limit= and an opaque ?cursor=.",
        querystring: AlertsQuery,
        response: { 200: page(Alert), ...problemResponses(400) },
      },
    },
    async (request) => {
      const query = request.query;
      const after = decodeCursor(query.cursor, AlertsCursor);
      // On the read replica while it is within its lag bound (lib/read-replica.ts).
      const rows = await store.findAlerts(reads, query, after, query.limit + 1);
      return toPage(rows, query.limit, views.alert, (last) => ({ d: last.distanceM, id: last.id }));
    },
  );

};
