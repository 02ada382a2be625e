import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import type { AppDeps } from "../../deps.js";
import { problemResponses } from "../../plugins/openapi.js";
import { decodeTimeIdCursor, toPage } from "../../pagination.js";
import { AuditEventPage, AuditEventsQuery } from "./schemas.js";
import { listAuditEvents } from "./store.js";

export const adminAuditRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, { pool }) => {
  app.get(
    "/v1/admin/audit-events",
    {
      schema: {
        tags: ["admin"],
        summary: "Search the audit log",
        description:
          "Newest first. Filters combine with AND: actorId, action, objectType and objectId match exactly; " +
          "from is inclusive and to exclusive (RFC 3339). The audit log is append-only: there is no route that changes it.",
        querystring: AuditEventsQuery,
        response: { 200: AuditEventPage, ...problemResponses(400, 401, 403) },
      },
    },
    async (request) => {
      const { limit, cursor, ...filter } = request.query;
      const rows = await listAuditEvents(pool, filter, limit, decodeTimeIdCursor(cursor));
      return toPage(rows, limit, ({ cursorAt: _cursorAt, occurredAt, ...row }) => ({
        ...row,
        occurredAt: occurredAt.toISOString(),
      }));
    },
  );
};
