import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { withTransaction } from "../../../lib/db.js";
import { EventType } from "../../../lib/events.js";
import { recordEvent } from "../../../lib/outbox.js";
import { partnerIdOf } from "../../../lib/partners.js";
import { problems } from "../../../lib/problems.js";
import type { AppDeps } from "../../deps.js";
import { decodeCursor, page, toPage } from "../../pagination.js";
import { requireActor, type Actor } from "../../plugins/auth.js";
import { problemResponses } from "../../plugins/openapi.js";
import { IdParams } from "../../schemas.js";
import { isAdmin } from "../access.js";
import { shareUrlOf } from "../reports/links.js";
import { getFoundReport, getLostReport } from "../reports/store.js";
import { FinderMatch, Match, MatchCursor, MatchesQuery } from "./schemas.js";
import * as store from "./store.js";
import * as views from "./views.js";

/** The report's reporter, or a platform admin (the console shows matches beside moderation): else 403; unknown 404. */
function mayList(report: { reporterId: string } | null, actor: Actor, what: string): asserts report {
  if (!report) throw problems.notFound(what);
  if (report.reporterId !== actor.id && !isAdmin(actor)) throw problems.forbidden(`only the reporter can see this ${what}'s matches`);
}

const scoreKey = (row: store.MatchRow) => ({ s: row.score, id: row.id });

export const matchRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, { pool, config }) => {
  app.get(
    "/v1/safety/lost-reports/:id/matches",
    {
      config: { auth: "actor" },
      schema: {
        tags: ["safety"],
        summary: "Found reports and sightings that may be this lost animal (reporter or platform_admin)",
        description:
          "Suggestions of the matcher, best first (score, then id), with the reasons that gave each score. Matching runs " +
          "as jobs after a report or sighting is recorded or changed, so a new suggestion appears within seconds. A pair is " +
          "suggested from score 0.5 up when it is also within one log-odds of the best lost report for its found report or " +
          "sighting: a clearly better candidate nearby outranks the weak ones. Confirmed and dismissed matches stay listed with their status; a quarantined or removed found report or sighting is left out.",
        params: IdParams,
        querystring: MatchesQuery,
        response: { 200: page(Match), ...problemResponses(400, 401, 403, 404) },
      },
    },
    async (request) => {
      const actor = requireActor(request);
      const report = await getLostReport(pool, request.params.id);
      mayList(report, actor, "lost report");
      const { limit, cursor } = request.query;
      const rows = await store.listForLostReport(pool, report.id, decodeCursor(cursor, MatchCursor), limit + 1);
      return toPage(rows, limit, views.match, scoreKey);
    },
  );

  app.get(
    "/v1/safety/found-reports/:id/matches",
    {
      config: { auth: "actor" },
      schema: {
        tags: ["safety"],
        summary: "Lost reports that may be the animal you found (reporter or platform_admin)",
        description:
          "Best first. Each item shows only the lost report's public fields: the coarse point, never its reporter, " +
          "contact or verification detail. Reach the owner through the lost report's relay-message. The reasons never " +
          "include microchip: an equal or near chip is the owner's to see, or a finder could edit their report's chip " +
          "and learn the owner's number a character at a time.",
        params: IdParams,
        querystring: MatchesQuery,
        response: { 200: page(FinderMatch), ...problemResponses(400, 401, 403, 404) },
      },
    },
    async (request) => {
      const actor = requireActor(request);
      const report = await getFoundReport(pool, request.params.id);
      mayList(report, actor, "found report");
      const { limit, cursor } = request.query;
      const rows = await store.listForFoundReport(pool, report.id, decodeCursor(cursor, MatchCursor), limit + 1);
      return toPage(rows, limit, views.finderMatch, scoreKey);
    },
  );

  for (const decision of ["confirm", "dismiss"] as const) {
    app.post(
      `/v1/safety/matches/:id/${decision}`,
      {
        config: { auth: "actor" },
        schema: {
          tags: ["safety"],
          summary: decision === "confirm" ? "Confirm a match: it is my animal" : "Dismiss a match: not my animal",
          description:
            decision === "confirm"
              ? "The lost report's reporter only (403 otherwise, admins included). Emits events.safety.match_confirmed.v1, " +
                "which tells the finder or the neighbour who reported the sighting. Confirming again is a no-op."
              : "The lost report's reporter only. A dismissed pair is never suggested again, whatever later changes. " +
                "Dismissing again is a no-op.",
          params: IdParams,
          response: { 200: Match, ...problemResponses(400, 401, 403, 404) },
        },
      },
      async (request) => {
        const actor = requireActor(request);
        return withTransaction(pool, async (client) => {
          const current = await store.lockMatch(client, request.params.id);
          if (!current) throw problems.notFound("match");
          if (current.lostReporterId !== actor.id) throw problems.forbidden("only the lost report's reporter can decide on its matches");
          const status = decision === "confirm" ? "confirmed" : "dismissed";
          if (current.status === status) return views.match(current);
          const decided = await store.decide(client, current.id, status);
          if (status === "confirmed") {
            const { id: matchId, lostReportId, kind, targetId, lostReporterId, targetReporterId } = current;
            // A shelter holding the animal is given the owner's page: it has no other view of the lost report.
            const lostReportShareUrl = partnerIdOf(targetReporterId) ? shareUrlOf(config.PUBLIC_BASE_URL, "lost", lostReportId) : undefined;
            const data = { matchId, lostReportId, kind, targetId, lostReporterId, targetReporterId, ...(lostReportShareUrl ? { lostReportShareUrl } : {}) };
            await recordEvent(client, EventType.MatchConfirmed, data, request.log);
          }
          return views.match(decided);
        });
      },
    );
  }
};
