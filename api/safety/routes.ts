import { randomUUID } from "node:crypto";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { AuditAction, AuditObject, writeAuditEvent } from "../../lib/audit.js";
import { relayMessageBucket, reportCreationBucket, secondsUntilToken, takeBucketToken, type BucketSpec } from "../../lib/buckets.js";
import { withTransaction, type Pool, type Queryable } from "../../lib/db.js";
import { EventType } from "../../lib/events.js";
import { coarsen } from "../../lib/geo.js";
import { insertOutboxEvent, logEventRecorded, type EventLog } from "../../lib/outbox.js";
import { problems } from "../../lib/problems.js";
import type { AppDeps } from "../app.js";
import { PLATFORM_ADMIN, requireActor, type Actor } from "../plugins/auth.js";
import { problemResponses } from "../plugins/openapi.js";
import { Created, decodeCursor, encodeCursor, IdParams, page, PageQuery } from "../schemas.js";
import {
  Accepted,
  Alert,
  AlertsCursor,
  AlertsQuery,
  CreateFoundReportBody,
  CreateLostReportBody,
  CreateSightingBody,
  FlagBody,
  FoundReportPublic,
  LostReportPrivate,
  LostReportPublic,
  RelayMessageBody,
  Resolved,
  ResolveBody,
  Sighting,
  SightingsCursor,
} from "./schemas.js";
import * as store from "./store.js";
import * as views from "./views.js";

/** Relay messages one report may receive in a rolling 24 hours, whatever the senders' IPs. */
export const RELAY_MESSAGES_PER_REPORT_PER_DAY = 20;

const isAdmin = (actor: Actor) => actor.roles.includes(PLATFORM_ADMIN);

/** Owners and admins see moderated content (marked); everyone else gets 404. */
const canSeeModerated = (actor: Actor | null, ownerId: string) => actor !== null && (actor.id === ownerId || isAdmin(actor));

/**
 * A report creation: the shared per-actor throttle, the insert and its outbox
 * row, in one statement (see createThrottled in store.ts). The id is chosen
 * here so the event can carry it.
 */
async function createReport(
  pool: Pool,
  actorId: string,
  insert: (client: Queryable, id: string, bucket: BucketSpec, event: store.ReportEvent) => Promise<store.CreatedReport | null>,
  event: (id: string) => store.ReportEvent,
  log: EventLog,
): Promise<{ id: string; createdAt: string }> {
  const id = randomUUID();
  const bucket = reportCreationBucket(actorId);
  const reportEvent = event(id);
  const created = await insert(pool, id, bucket, reportEvent);
  if (!created) throw problems.rateLimited(await secondsUntilToken(pool, bucket), "you can create at most 5 reports per hour");
  logEventRecorded(log, created.eventId, reportEvent.type);
  return { id: created.id, createdAt: created.createdAt.toISOString() };
}

/** The report if the caller may see it: 404 when missing, or moderated and the caller is neither reporter nor admin. */
function visibleTo<T extends { reporterId: string; moderationState: string | null }>(
  report: T | null,
  actor: Actor | null,
  what: string,
): T {
  if (!report || (report.moderationState && !canSeeModerated(actor, report.reporterId))) throw problems.notFound(what);
  return report;
}

/** A lost report the caller may act on publicly: 404 when missing or hidden by moderation. */
async function lockVisibleLostReport(client: Queryable, id: string, actor: Actor | null) {
  return visibleTo(await store.lockReport(client, "lost", id), actor, "lost report");
}

/** What differs between resolving a lost and a found report: the route, the wording and the event. */
const resolvable: Record<store.ReportKind, { path: string; what: string; event: EventType; idField: string }> = {
  lost: { path: "lost-reports", what: "lost report", event: EventType.LostReportResolved, idField: "lostReportId" },
  found: { path: "found-reports", what: "found report", event: EventType.FoundReportResolved, idField: "foundReportId" },
};

export const safetyRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, { pool }) => {
  app.post(
    "/v1/safety/lost-reports",
    {
      config: { auth: "actor" },
      schema: {
        tags: ["safety"],
        summary: "Report a lost animal",
        description:
          "Creates an open lost report and emits events.animal.lost_reported.v1 (with the coarse point only). " +
          "Shares a 5-per-hour throttle per actor with found reports, kept in Postgres. " +
          "lastSeenAt may not be more than 5 minutes in the future.",
        body: CreateLostReportBody,
        response: { 201: Created, ...problemResponses(400, 401, 403, 429) },
      },
    },
    async (request, reply) => {
      const actor = requireActor(request);
      const body = request.body;
      const report = await createReport(
        pool,
        actor.id,
        (client, id, bucket, event) => store.insertLostReport(client, id, actor.id, body, bucket, event),
        (id) => ({
          type: EventType.AnimalLostReported,
          data: {
            reportId: id,
            reporterId: actor.id,
            species: body.animal.species,
            location: coarsen(body.location),
            lastSeenAt: body.lastSeenAt,
          },
        }),
        request.log,
      );
      return reply.code(201).header("location", `/v1/safety/lost-reports/${report.id}`).send(report);
    },
  );

  app.post(
    "/v1/safety/found-reports",
    {
      config: { auth: "actor" },
      schema: {
        tags: ["safety"],
        summary: "Report a found animal",
        description:
          "Creates an open found report and emits events.animal.found_reported.v1 (with the coarse point only). " +
          "Shares the 5-per-hour per-actor throttle with lost reports.",
        body: CreateFoundReportBody,
        response: { 201: Created, ...problemResponses(400, 401, 403, 429) },
      },
    },
    async (request, reply) => {
      const actor = requireActor(request);
      const body = request.body;
      const report = await createReport(
        pool,
        actor.id,
        (client, id, bucket, event) => store.insertFoundReport(client, id, actor.id, body, bucket, event),
        (id) => ({
          type: EventType.AnimalFoundReported,
          data: {
            reportId: id,
            reporterId: actor.id,
            species: body.animal.species,
            location: coarsen(body.location),
            foundAt: body.foundAt,
          },
        }),
        request.log,
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
      const report = visibleTo(await store.getLostReport(pool, request.params.id), request.actor, "lost report");
      return views.lostReportPublic(report);
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
      const report = visibleTo(await store.getFoundReport(pool, request.params.id), request.actor, "found report");
      return views.foundReportPublic(report);
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
        return views.lostReportPrivate(report, admin);
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
          const resolved = await store.resolveReport(client, kind, report.id, outcome);
          const resolvedAt = resolved.resolvedAt.toISOString();
          await insertOutboxEvent(client, event, { [idField]: report.id, reporterId: report.reporterId, outcome, resolvedAt }, request.log);
          return { id: report.id, status: outcome, resolvedAt };
        });
      },
    );
  }

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

  app.post(
    "/v1/safety/lost-reports/:id/relay-message",
    {
      config: { auth: "public" },
      schema: {
        tags: ["safety"],
        summary: "Send a message to a lost report's owner (contact relay)",
        description:
          "No authentication. fromContact is caller-supplied and unverified. Limited to 5 per hour per client IP " +
          "(the connection's address, or X-Forwarded-For only from a proxy listed in API_TRUSTED_PROXY_CIDRS) and " +
          `to ${RELAY_MESSAGES_PER_REPORT_PER_DAY} messages per report per rolling 24 hours; both answer 429 with Retry-After. ` +
          "The owner is never exposed: the message reaches them through events.safety.relay_message_received.v1. " +
          "A report that is not open gets 409 conflict; a moderated one 404.",
        params: IdParams,
        body: RelayMessageBody,
        response: { 202: Accepted, ...problemResponses(400, 404, 409, 429) },
      },
    },
    async (request, reply) => {
      const { message, fromContact } = request.body;
      const id = await withTransaction(pool, async (client) => {
        const wait = await takeBucketToken(client, relayMessageBucket(request.ip));
        if (wait > 0) throw problems.rateLimited(wait, "you can send at most 5 relay messages per hour");
        const report = await lockVisibleLostReport(client, request.params.id, null);
        if (report.status !== "open") throw problems.conflict(`this report is ${report.status}`);
        const recent = await store.relayMessagesInLastDay(client, report.id);
        if (recent.count >= RELAY_MESSAGES_PER_REPORT_PER_DAY) {
          throw problems.rateLimited(recent.secondsUntilSlot, "this report has received the most messages allowed per day");
        }
        const relayMessageId = await store.insertRelayMessage(client, report.id, message, fromContact);
        await insertOutboxEvent(client, EventType.RelayMessageReceived, {
          recipientActorId: report.reporterId,
          lostReportId: report.id,
          relayMessageId,
          message,
          fromContact,
        }, request.log);
        return relayMessageId;
      });
      return reply.code(202).send({ id });
    },
  );

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
      const rows = await store.findAlerts(pool, query, after, query.limit + 1);
      const items = rows.slice(0, query.limit);
      const last = items.at(-1);
      return {
        items: items.map(views.alert),
        nextCursor: rows.length > query.limit && last ? encodeCursor({ d: last.distanceM, id: last.id }) : null,
      };
    },
  );

  app.post(
    "/v1/safety/sightings",
    {
      config: { auth: "actor" },
      schema: {
        tags: ["safety"],
        summary: "Report a sighting",
        description:
          "Optionally linked to a lost report, which must exist and be open (409 otherwise; 404 when moderated). " +
          "Emits events.safety.sighting_reported.v1 with the report owner as recipientActorId and the coarse point only.",
        body: CreateSightingBody,
        response: { 201: Created, ...problemResponses(400, 401, 403, 404, 409) },
      },
    },
    async (request, reply) => {
      const actor = requireActor(request);
      const body = request.body;
      const created = await withTransaction(pool, async (client) => {
        const report = body.lostReportId ? await lockVisibleLostReport(client, body.lostReportId, actor) : null;
        if (report && report.status !== "open") throw problems.conflict(`this report is ${report.status}`);
        const sighting = await store.insertSighting(client, actor.id, body);
        await insertOutboxEvent(client, EventType.SightingReported, {
          sightingId: sighting.id,
          lostReportId: report?.id ?? null,
          recipientActorId: report?.reporterId ?? null,
          reporterId: actor.id,
          location: coarsen(body.location),
          seenAt: body.seenAt,
        }, request.log);
        return sighting;
      });
      return reply.code(201).send({ id: created.id, createdAt: created.createdAt.toISOString() });
    },
  );

  app.get(
    "/v1/safety/lost-reports/:id/sightings",
    {
      config: { auth: "public" },
      schema: {
        tags: ["safety"],
        summary: "Sightings of a lost report",
        description:
          "No authentication. Newest first, paginated; coarse points only. Sightings with a moderation_content_state " +
          "row are left out, except for platform admins and the sighting's own reporter, who see them with " +
          "moderationState. A moderated report is 404 except to its reporter and admins.",
        params: IdParams,
        querystring: PageQuery,
        response: { 200: page(Sighting), ...problemResponses(400, 404) },
      },
    },
    async (request) => {
      const { limit, cursor } = request.query;
      const after = decodeCursor(cursor, SightingsCursor);
      const report = visibleTo(await store.getLostReport(pool, request.params.id), request.actor, "lost report");
      const viewer = { actorId: request.actor?.id ?? null, isAdmin: request.actor ? isAdmin(request.actor) : false };
      const rows = await store.listSightings(pool, report.id, viewer, after, limit + 1);
      const items = rows.slice(0, limit);
      const last = items.at(-1);
      return {
        items: items.map(views.sighting),
        nextCursor: rows.length > limit && last ? encodeCursor({ at: last.cursorAt, id: last.id }) : null,
      };
    },
  );
};
