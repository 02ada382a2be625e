import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { listMyAnimals } from "../animals/store.js";
import type { AppDeps } from "../deps.js";
import { decodeTimeIdCursor, page, PageQuery, toPage } from "../pagination.js";
import { requireActor } from "../plugins/auth.js";
import { problemResponses } from "../plugins/openapi.js";
import { shareLinks } from "../safety/reports/links.js";
import { foundReportPublic, lostReportPublic } from "../safety/reports/views.js";
import { MyAnimal, MyFoundReport, MyLostReport } from "./schemas.js";
import { listMyFoundReports, listMyLostReports } from "./store.js";

const iso = (value: string | Date) => new Date(value).toISOString();

/** GET /v1/me/…: the caller's own reports and animals, newest first, with their moderation state. */
/** Listings carry no photos: the report's own view lists them. */
const withoutPhotos = <T extends { photos?: unknown }>({ photos: _photos, ...rest }: T) => rest;

export const ownerRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, { pool, config }) => {
  app.get(
    "/v1/me/lost-reports",
    {
      config: { auth: "actor" },
      schema: {
        tags: ["owner"],
        summary: "My lost reports",
        description:
          "The caller's lost reports in every status, newest first (createdAt, then id), paginated. Each carries its " +
          "expiresAt and moderationState (null, quarantined or removed). Locations are coarse; the precise point is " +
          "GET /v1/safety/lost-reports/{id}/private.",
        querystring: PageQuery,
        response: { 200: page(MyLostReport), ...problemResponses(400, 401, 403) },
      },
    },
    async (request) => {
      const actor = requireActor(request);
      const { limit, cursor } = request.query;
      const rows = await listMyLostReports(pool, actor.id, decodeTimeIdCursor(cursor), limit + 1);
      return toPage(rows, limit, (row) => ({
        ...withoutPhotos(lostReportPublic(row, [], config.PUBLIC_BASE_URL)),
        flyerUrl: shareLinks(config.PUBLIC_BASE_URL, "lost", row).flyerUrl,
        updatedAt: row.updatedAt.toISOString(),
        animalId: row.animalId,
        moderationState: row.moderationState,
      }));
    },
  );

  app.get(
    "/v1/me/found-reports",
    {
      config: { auth: "actor" },
      schema: {
        tags: ["owner"],
        summary: "My found reports",
        description:
          "The caller's found reports in every status, newest first (createdAt, then id), paginated, with expiresAt and " +
          "moderationState. Locations are coarse.",
        querystring: PageQuery,
        response: { 200: page(MyFoundReport), ...problemResponses(400, 401, 403) },
      },
    },
    async (request) => {
      const actor = requireActor(request);
      const { limit, cursor } = request.query;
      const rows = await listMyFoundReports(pool, actor.id, decodeTimeIdCursor(cursor), limit + 1);
      return toPage(rows, limit, (row) => ({
        ...withoutPhotos(foundReportPublic(row, [], config.PUBLIC_BASE_URL)),
        flyerUrl: shareLinks(config.PUBLIC_BASE_URL, "found", row).flyerUrl,
        updatedAt: row.updatedAt.toISOString(),
        moderationState: row.moderationState,
      }));
    },
  );

  app.get(
    "/v1/me/animals",
    {
      config: { auth: "actor" },
      schema: {
        tags: ["owner"],
        summary: "My animals",
        description:
          "The animals the caller registered, newest first (createdAt, then id), paginated: the tag's profile state and " +
          "the open lost report made from each.",
        querystring: PageQuery,
        response: { 200: page(MyAnimal), ...problemResponses(400, 401, 403) },
      },
    },
    async (request) => {
      const actor = requireActor(request);
      const { limit, cursor } = request.query;
      const rows = await listMyAnimals(pool, actor.id, decodeTimeIdCursor(cursor), limit + 1);
      return toPage(rows, limit, (row) => ({
        id: row.id,
        name: row.name,
        species: row.species,
        breed: row.breed ?? undefined,
        colors: row.colors,
        createdAt: row.createdAt.toISOString(),
        emergencyProfile: row.profile && {
          showName: row.profile.showName,
          issuedAt: iso(row.profile.issuedAt),
          revokedAt: row.profile.revokedAt === null ? null : iso(row.profile.revokedAt),
        },
        openLostReportId: row.openLostReportId,
        moderationState: null,
      }));
    },
  );
};
