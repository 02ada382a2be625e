import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { isUniqueViolation, withTransaction } from "../../lib/db.js";
import { problems } from "../../lib/problems.js";
import type { AppDeps } from "../deps.js";
import { getAnimal } from "../emergency/store.js";
import { decodeTimeIdCursor, page, PageQuery, toPage } from "../pagination.js";
import { requireActor, type Actor } from "../plugins/auth.js";
import { carryAnimalPhotos, readyPhotos } from "../photos/store.js";
import { photoViews } from "../photos/views.js";
import { problemResponses } from "../plugins/openapi.js";
import { createReport } from "../safety/reports/routes.js";
import { LostReportPrivate } from "../safety/reports/schemas.js";
import { getLostReport, insertLostReport } from "../safety/reports/store.js";
import { guideOf } from "../safety/reports/links.js";
import { lostReportPrivate } from "../safety/reports/views.js";
import { nearbySheltersOf } from "../safety/shelters/views.js";
import { coarse } from "../safety/views.js";
import { IdParams } from "../schemas.js";
import { ReportAnimalLostBody, Scan } from "./schemas.js";
import { listScans, SCAN_NOTIFY_MINUTES } from "./scans-store.js";
import { hasOpenLostReport } from "./store.js";

/** The caller's own animal: 404 when unknown, 403 for anyone else (platform admins included). */
async function ownAnimal(pool: AppDeps["pool"], id: string, actor: Actor, action: string) {
  const animal = await getAnimal(pool, id);
  if (!animal) throw problems.notFound("animal");
  if (animal.ownerId !== actor.id) throw problems.forbidden(`only the owner can ${action}`);
  return animal;
}

const alreadyLost = () => problems.conflict("this animal already has an open lost report; resolve it first");

/** The owner's side of a registered animal: mark it lost, and read its tag's scans. */
export const animalRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, { pool, config }) => {
  app.post(
    "/v1/animals/:id/lost",
    {
      config: { auth: "actor" },
      schema: {
        tags: ["animals"],
        summary: "Report a registered animal lost (owner only)",
        description:
          "Makes an open lost report from the animal's name, species, breed and colours, with the given lastSeenAt, " +
          "location and description, and answers 201 with its private view. The animal's ready photos that no " +
          "moderator hid come along as the report's own photos (new photo ids, the same stored images; one still " +
          "processing does not), and are public with it. From then on the animal's tag page says " +
          "it is lost and relays messages to this report. Shares the 5-per-hour report throttle (429), emits " +
          "events.animal.lost_reported.v1 with animalId. An animal with an open lost report already is 409; anyone " +
          "but the owner, platform admins included, 403.",
        params: IdParams,
        body: ReportAnimalLostBody,
        response: { 201: LostReportPrivate, ...problemResponses(400, 401, 403, 404, 409, 429) },
      },
    },
    async (request, reply) => {
      const actor = requireActor(request);
      const animal = await ownAnimal(pool, request.params.id, actor, "report this animal lost");
      if (await hasOpenLostReport(pool, animal.id)) throw alreadyLost();
      const { lastSeenAt, location, description } = request.body;
      const body = {
        animal: { name: animal.name, species: animal.species, breed: animal.breed ?? undefined, colors: animal.colors },
        lastSeenAt,
        location,
        description,
      };
      const options = { ttlDays: config.REPORT_TTL_DAYS, animalId: animal.id };
      const created = await createReport(pool, actor.id, (_pool, id, bucket) =>
        withTransaction(pool, async (client) => {
          const guide = guideOf(request.headers["accept-language"], config.PUBLIC_BASE_URL, id);
          const report = await insertLostReport(client, id, actor.id, body, bucket, request.log, { ...options, guide });
          // With the report, so it is never seen (nor matched) without them.
          if (report) await carryAnimalPhotos(client, animal.id, report.id);
          return report;
        }),
      ).catch((err: unknown) => {
        // Two requests at once: the partial unique index lets one open report per animal through.
        throw isUniqueViolation(err, "safety_lost_report_open_animal_key") ? alreadyLost() : err;
      });
      const row = (await getLostReport(pool, created.id))!;
      const photos = photoViews(await readyPhotos(pool, { lostReportId: row.id }, { includeModerated: true }), config.API_PUBLIC_BASE_URL);
      const shelters = await nearbySheltersOf(pool, row);
      return reply.code(201).header("location", `/v1/safety/lost-reports/${row.id}`).send(lostReportPrivate(row, false, photos, config.PUBLIC_BASE_URL, shelters));
    },
  );

  app.get(
    "/v1/animals/:id/scans",
    {
      config: { auth: "actor" },
      schema: {
        tags: ["animals"],
        summary: "Scans of the animal's tag (owner only)",
        description:
          "Every view of the tag page, newest first (scannedAt, then id), paginated. A scan has a location only when " +
          "the finder shared it, and then only the ~1 km cell. The owner is notified (tag_scanned) at most once per tag " +
          `per ${SCAN_NOTIFY_MINUTES} minutes; every scan is listed here.`,
        params: IdParams,
        querystring: PageQuery,
        response: { 200: page(Scan), ...problemResponses(400, 401, 403, 404) },
      },
    },
    async (request) => {
      const actor = requireActor(request);
      const animal = await ownAnimal(pool, request.params.id, actor, "see this animal's scans");
      const { limit, cursor } = request.query;
      const rows = await listScans(pool, animal.id, decodeTimeIdCursor(cursor), limit + 1);
      return toPage(rows, limit, (row) => ({
        id: row.id,
        scannedAt: row.scannedAt.toISOString(),
        location: row.coarseLat === null || row.coarseLon === null ? null : coarse({ coarseLat: row.coarseLat, coarseLon: row.coarseLon }),
      }));
    },
  );
};
