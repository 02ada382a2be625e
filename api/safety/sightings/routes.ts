import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { SIGHTINGS_PER_HOUR, sightingBucket, takeBucketToken } from "../../../lib/buckets.js";
import { withTransaction } from "../../../lib/db.js";
import { EventType } from "../../../lib/events.js";
import { recordEvent } from "../../../lib/outbox.js";
import { problems } from "../../../lib/problems.js";
import type { AppDeps } from "../../deps.js";
import { decodeTimeIdCursor, page, PageQuery, toPage } from "../../pagination.js";
import { requireActor } from "../../plugins/auth.js";
import { problemResponses } from "../../plugins/openapi.js";
import { Created, IdParams } from "../../schemas.js";
import { isAdmin, lockVisibleLostReport, visibleTo } from "../access.js";
import { getLostReport } from "../reports/store.js";
import { CreateSightingBody, Sighting } from "./schemas.js";
import * as store from "./store.js";
import * as views from "./views.js";

export const sightingRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, { pool, reads }) => {
  app.post(
    "/v1/safety/sightings",
    {
      config: { auth: "actor" },
      schema: {
        tags: ["safety"],
        summary: "Report a sighting",
        description:
          "Optionally linked to a lost report, which must exist and be open (409 otherwise; 404 when moderated). " +
          "Emits events.safety.sighting_reported.v1 with the report owner as recipientActorId and the coarse point only. " +
          `An actor makes at most ${SIGHTINGS_PER_HOUR} sightings an hour (a token bucket refilling over the hour): ` +
          "past that 429 rate-limited with Retry-After, and nothing is written. A refused sighting (404, 409) uses no token. " +
          "The report's owner gets at most one sighting notification per report per 10 minutes: the sightings after " +
          "the first in that window are counted into it, in the app and in its email, and send nothing new.",
        body: CreateSightingBody,
        response: { 201: Created, ...problemResponses(400, 401, 403, 404, 409, 429) },
      },
    },
    async (request, reply) => {
      const actor = requireActor(request);
      const body = request.body;
      const created = await withTransaction(pool, async (client) => {
        // First, so a refused actor locks no report; a later refusal rolls the token back.
        const wait = await takeBucketToken(client, sightingBucket(actor.id));
        if (wait > 0) throw problems.rateLimited(wait, `you can report at most ${SIGHTINGS_PER_HOUR} sightings per hour`);
        const report = body.lostReportId ? await lockVisibleLostReport(client, body.lostReportId, actor) : null;
        if (report && report.status !== "open") throw problems.conflict(`this report is ${report.status}`);
        const sighting = await store.insertSighting(client, actor.id, body);
        await recordEvent(
          client,
          EventType.SightingReported,
          {
            sightingId: sighting.id,
            lostReportId: report?.id ?? null,
            recipientActorId: report?.reporterId ?? null,
            reporterId: actor.id,
            location: { lat: sighting.coarseLat, lon: sighting.coarseLon },
            seenAt: body.seenAt,
          },
          request.log,
        );
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
          "moderationState. A moderated report is 404 except to its reporter and admins. " +
          "A sighting's note is shown only once the report's owner or a moderator (a platform admin) has seen it: " +
          "their GET of this list marks the sightings it returns as seen (a HEAD marks nothing). Until then the note is " +
          "left out, except for the owner, moderators, the sighting's own reporter, and a sighting the owner made. " +
          "The rule is seen-by-owner-or-moderator only: the service keeps no account creation time for the identity " +
          "provider's actors, so an account's age plays no part.",
        params: IdParams,
        querystring: PageQuery,
        response: { 200: page(Sighting), ...problemResponses(400, 404) },
      },
    },
    async (request) => {
      const { limit, cursor } = request.query;
      const after = decodeTimeIdCursor(cursor);
      const report = visibleTo(await reads.lookup((db) => getLostReport(db, request.params.id)), request.actor, "lost report");
      const admin = request.actor ? isAdmin(request.actor) : false;
      const viewer = { actorId: request.actor?.id ?? null, isAdmin: admin, reviews: admin || request.actor?.id === report.reporterId };
      // The owner's or a moderator's read marks what it returns as seen: read then written, so on the primary.
      const rows = await store.listSightings(viewer.reviews ? pool : reads, report, viewer, after, limit + 1);
      if (viewer.reviews && request.method === "GET") await store.markReviewed(pool, rows.slice(0, limit).map((r) => r.id));
      return toPage(rows, limit, views.sighting);
    },
  );
};
