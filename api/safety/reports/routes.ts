import { randomUUID } from "node:crypto";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { AuditAction, AuditObject, writeAuditEvent } from "../../../lib/audit.js";
import { reportCreationBucket, secondsUntilToken, type BucketSpec } from "../../../lib/buckets.js";
import { withTransaction, type Pool, type Queryable } from "../../../lib/db.js";
import { EventType } from "../../../lib/events.js";
import { problems } from "../../../lib/problems.js";
import { resolveReport } from "../../../lib/report-lifecycle.js";
import type { AppDeps } from "../../deps.js";
import { requireActor } from "../../plugins/auth.js";
import { problemResponses } from "../../plugins/openapi.js";
import { Created, IdParams } from "../../schemas.js";
import { readyPhotos } from "../../photos/store.js";
import { photoViews } from "../../photos/views.js";
import { canSeeModerated, isAdmin, visibleTo } from "../access.js";
import {
  CreateFoundReportBody,
  CreateLostReportBody,
  FoundReportPublic,
  LostReportPrivate,
  LostReportPublic,
  Resolved,
  ResolveBody,
} from "./schemas.js";
import { guideOf } from "./links.js";
import * as store from "./store.js";
import { nearbySheltersOf } from "../shelters/views.js";
import * as views from "./views.js";

/**
 * A report creation: the shared per-actor throttle, the insert and its outbox
 * row, in one statement (store.ts). The id is chosen here so the event can
 * carry it. The statement also refuses a suspended reporter; that refusal
 * leaves here as a 429 and the error handler turns it into 403
 * account-suspended (api/plugins/auth.ts suspensionBeforeRefusal).
 */
export async function createReport(
  pool: Pool,
  actorId: string,
  insert: (client: Queryable, id: string, bucket: BucketSpec) => Promise<store.CreatedReport | null>,
): Promise<{ id: string; createdAt: string }> {
  const bucket = reportCreationBucket(actorId);
  const created = await insert(pool, randomUUID(), bucket);
  if (!created) throw problems.rateLimited(await secondsUntilToken(pool, bucket), "you can create at most 5 reports per hour");
  return { id: created.id, createdAt: created.createdAt.toISOString() };
}

/** What differs between resolving a lost and a found report: the route, the wording and the event. */
const resolvable = {
  lost: { path: "lost-reports", what: "lost report", event: EventType.LostReportResolved, idField: "lostReportId" },
  found: { path: "found-reports", what: "found report", event: EventType.FoundReportResolved, idField: "foundReportId" },
} as const;

/** Lost and found reports: create, the public and private views, resolve. */
export const reportRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, { pool, reads, config }) => {
  const lifetime = { ttlDays: config.REPORT_TTL_DAYS };
  /** A report's ready photos; its reporter and admins also see those a moderator hid, marked. */
  const photosOf = async (client: Queryable, parent: { lostReportId: string } | { foundReportId: string }, includeModerated: boolean) =>
    photoViews(await readyPhotos(client, parent, { includeModerated }), config.API_PUBLIC_BASE_URL);

  app.post(
    "/v1/safety/lost-reports",
    {
      config: { auth: "actor", suspension: "in-statement" },
      schema: {
        tags: ["safety"],
        summary: "Report a lost animal",
        description:
          "Creates an open lost report and emits events.animal.lost_reported.v1 (with the coarse point only). " +
          "Shares a 5-per-hour throttle per actor with found reports, kept in Postgres. " +
          "lastSeenAt may not be more than 5 minutes in the future. The report expires REPORT_TTL_DAYS (30) days later " +
          "unless renewed.",
        body: CreateLostReportBody,
        response: { 201: Created, ...problemResponses(400, 401, 403, 429) },
      },
    },
    async (request, reply) => {
      const actor = requireActor(request);
      const body = request.body;
      const report = await createReport(pool, actor.id, (client, id, bucket) =>
        store.insertLostReport(client, id, actor.id, body, bucket, request.log, {
          ...lifetime,
          guide: guideOf(request.headers["accept-language"], config.PUBLIC_BASE_URL, id),
        }),
      );
      return reply.code(201).header("location", `/v1/safety/lost-reports/${report.id}`).send(report);
    },
  );

  app.post(
    "/v1/safety/found-reports",
    {
      config: { auth: "actor", suspension: "in-statement" },
      schema: {
        tags: ["safety"],
        summary: "Report a found animal",
        description:
          "Creates an open found report and emits events.animal.found_reported.v1 (with the coarse point only). " +
          "Shares the 5-per-hour per-actor throttle with lost reports. The report expires REPORT_TTL_DAYS (30) days " +
          "later unless renewed.",
        body: CreateFoundReportBody,
        response: { 201: Created, ...problemResponses(400, 401, 403, 429) },
      },
    },
    async (request, reply) => {
      const actor = requireActor(request);
      const body = request.body;
      const report = await createReport(pool, actor.id, (client, id, bucket) =>
        store.insertFoundReport(client, id, actor.id, body, bucket, request.log, lifetime),
      );
      return reply.code(201).header("location", `/v1/safety/found-reports/${report.id}`).send(report);
    },
  );

  app.get(
    "/v1/safety/lost-reports/:id",
    {
      config: { auth: "public" },
      schema: {
        tags: ["safety"],
        summary: "Public view of a lost report",
        description:
          "Location is the centre of a ~1 km grid cell. No reporter identity, microchip id or verificationDetail. " +
          "Quarantined or removed reports are 404, except to their reporter and platform admins, who see moderationState.",
        params: IdParams,
        response: { 200: LostReportPublic, ...problemResponses(400, 404) },
      },
    },
    async (request) => {
      // The public reads: a report missing on the replica (created a moment ago) is looked up again on the primary.
      const report = visibleTo(await reads.lookup((db) => store.getLostReport(db, request.params.id)), request.actor, "lost report");
      const photos = await photosOf(reads, { lostReportId: report.id }, canSeeModerated(request.actor, report.reporterId));
      return views.lostReportPublic(report, photos, config.PUBLIC_BASE_URL);
    },
  );

  app.get(
    "/v1/safety/found-reports/:id",
    {
      config: { auth: "public" },
      schema: {
        tags: ["safety"],
        summary: "Public view of a found report",
        description:
          "Location is the centre of a ~1 km grid cell; no reporter identity or microchip id. Moderated reports are 404 " +
          "except to their reporter and platform admins.",
        params: IdParams,
        response: { 200: FoundReportPublic, ...problemResponses(400, 404) },
      },
    },
    async (request) => {
      const report = visibleTo(await reads.lookup((db) => store.getFoundReport(db, request.params.id)), request.actor, "found report");
      const photos = await photosOf(reads, { foundReportId: report.id }, canSeeModerated(request.actor, report.reporterId));
      return views.foundReportPublic(report, photos, config.PUBLIC_BASE_URL);
    },
  );

  app.get(
    "/v1/safety/lost-reports/:id/private",
    {
      config: { auth: "actor" },
      schema: {
        tags: ["safety"],
        summary: "Private view of a lost report (reporter or platform_admin)",
        description:
          "Precise location and every field. Each read writes the audit event safety.precise_location_viewed in the " +
          "same transaction. The flag's author (flaggedBy) is shown to platform admins only.",
        params: IdParams,
        response: { 200: LostReportPrivate, ...problemResponses(400, 401, 403, 404) },
      },
    },
    async (request) => {
      const actor = requireActor(request);
      return withTransaction(pool, async (client) => {
        const report = await store.getLostReport(client, request.params.id);
        if (!report) throw problems.notFound("lost report");
        const admin = isAdmin(actor);
        if (report.reporterId !== actor.id && !admin) {
          throw problems.forbidden("only the reporter or a platform admin can see the precise location");
        }
        await writeAuditEvent(client, {
          actorId: actor.id,
          action: AuditAction.PreciseLocationViewed,
          objectType: AuditObject.LostReport,
          objectId: report.id,
          metadata: { viewerRole: report.reporterId === actor.id ? "reporter" : "platform_admin" },
        });
        const photos = await photosOf(client, { lostReportId: report.id }, true);
        return views.lostReportPrivate(report, admin, photos, config.PUBLIC_BASE_URL, await nearbySheltersOf(client, report));
      });
    },
  );

  for (const kind of ["lost", "found"] as const) {
    const { path, what, event, idField } = resolvable[kind];
    app.post(
      `/v1/safety/${path}/:id/resolve`,
      {
        config: { auth: "actor" },
        schema: {
          tags: ["safety"],
          summary: `Resolve a ${what} (reporter only)`,
          description:
            `Moves an open ${what} to reunited or closed and emits ${event} through the outbox in the same transaction; ` +
            `from then on it no longer appears in GET /v1/safety/alerts. Only the reporter may resolve it (403 forbidden ` +
            `for anyone else, platform admins included); an unknown id is 404. A report that is no longer open gets ` +
            `409 conflict. The event carries {${idField}, reporterId, outcome, resolvedAt}.`,
          params: IdParams,
          body: ResolveBody,
          response: { 200: Resolved, ...problemResponses(400, 401, 403, 404, 409) },
        },
      },
      async (request) => {
        const actor = requireActor(request);
        const { outcome } = request.body;
        return withTransaction(pool, async (client) => {
          const report = await store.lockReport(client, kind, request.params.id);
          if (!report) throw problems.notFound(what);
          if (report.reporterId !== actor.id) throw problems.forbidden("only the reporter can resolve this report");
          if (report.status !== "open") throw problems.conflict(`this report is already ${report.status}`);
          const { resolvedAt } = await resolveReport(client, kind, report, outcome, request.log);
          return { id: report.id, status: outcome, resolvedAt };
        });
      },
    );
  }

};
