import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { MAX_ALERT_RESENDS } from "../../../lib/alerts.js";
import { REPORT_EDITS_PER_HOUR, reportEditBucket, takeBucketToken } from "../../../lib/buckets.js";
import { withTransaction, type Queryable } from "../../../lib/db.js";
import { EventType } from "../../../lib/events.js";
import { recordEvent, type EventLog } from "../../../lib/outbox.js";
import { problems } from "../../../lib/problems.js";
import { renewReport } from "../../../lib/report-lifecycle.js";
import type { AppDeps } from "../../deps.js";
import { requireActor, type Actor } from "../../plugins/auth.js";
import { problemResponses } from "../../plugins/openapi.js";
import { IdParams } from "../../schemas.js";
import { MAX_MOVE_KM, PatchFoundReportBody, PatchLostReportBody, Renewed } from "./owner-schemas.js";
import { distanceFromFiledKm, patchReport, type ReportPatch } from "./owner-store.js";
import { FoundReportPrivate, LostReportPrivate } from "./schemas.js";
import { getFoundReport, getLostReport, lockReport, type FoundReportRow, type LostReportRow, type ReportKind } from "./store.js";
import { nearbySheltersOf } from "../shelters/views.js";
import * as views from "./views.js";
import { readyPhotos } from "../../photos/store.js";
import { photoViews } from "../../photos/views.js";

const names = {
  lost: { path: "lost-reports", what: "lost report" },
  found: { path: "found-reports", what: "found report" },
} as const;

/** The open report the caller reported, locked for the transaction: 404, 403 (admins too) or 409 otherwise. */
async function lockOwnOpenReport(client: Queryable, kind: ReportKind, id: string, actor: Actor, action: string) {
  const report = await lockReport(client, kind, id);
  if (!report) throw problems.notFound(names[kind].what);
  if (report.reporterId !== actor.id) throw problems.forbidden(`only the reporter can ${action} this report`);
  if (report.status !== "open") throw problems.conflict(`this report is ${report.status}; only an open report can be ${action}ed`);
  return report;
}

const hasChange = (patch: ReportPatch) =>
  Object.values(patch.animal ?? {}).some((v) => v !== undefined) ||
  patch.time !== undefined ||
  patch.location !== undefined ||
  patch.description !== undefined;

/**
 * A reporter's correction, in one transaction: the actor's edit token, the
 * checks, the update, and events.safety.report_updated.v1 naming the changed
 * fields (matching re-runs on it). A refused edit rolls back, token included,
 * so only edits that were made count. Returns the updated row.
 */
async function editReport<K extends ReportKind>(
  client: Queryable,
  kind: K,
  id: string,
  actor: Actor,
  patch: ReportPatch,
  log: EventLog,
): Promise<K extends "lost" ? LostReportRow : FoundReportRow> {
  const wait = await takeBucketToken(client, reportEditBucket(actor.id));
  if (wait > 0) throw problems.rateLimited(wait, `you can edit your reports at most ${REPORT_EDITS_PER_HOUR} times per hour`);
  const report = await lockOwnOpenReport(client, kind, id, actor, "edit");
  if (patch.location) {
    // Counted from where the report was filed, not from its last point: corrections cannot add up to a walk.
    const km = (await distanceFromFiledKm(client, kind, report.id, patch.location))!;
    if (km > MAX_MOVE_KM) {
      const message = `is ${Math.round(km)} km from where the report was filed; a correction may move it at most ${MAX_MOVE_KM} km from there`;
      throw problems.validation(`body.location: ${message}`, [{ path: "body.location", message }]);
    }
  }
  const changed = await patchReport(client, kind, report.id, patch);
  const row = (kind === "lost" ? await getLostReport(client, report.id) : await getFoundReport(client, report.id))!;
  await recordEvent(
    client,
    EventType.ReportUpdated,
    {
      reportKind: kind,
      reportId: row.id,
      reporterId: row.reporterId,
      changed,
      species: row.species,
      location: { lat: row.coarseLat, lon: row.coarseLon },
    },
    log,
  );
  return row as K extends "lost" ? LostReportRow : FoundReportRow;
}

function refuseEmpty(patch: ReportPatch): void {
  if (!hasChange(patch)) throw problems.validation("body: names no field to change", [{ path: "body", message: "names no field to change" }]);
}

const patchDescription = (what: string, time: string) =>
  `The reporter corrects an open ${what}: ${time}, location, description and the animal fields; null clears an optional ` +
  `field. Returns the private view (precise location). Emits events.safety.report_updated.v1 with the changed field ` +
  `names and the coarse point, on which matching re-runs. A ${time} in the future, a location more than ${MAX_MOVE_KM} km ` +
  `from where the report was first filed (counted from that point, however many edits moved it), an unknown field or an ` +
  `empty body is 400 validation-failed; anyone but the reporter (platform admins included) 403; a report that is no ` +
  `longer open 409. An actor may edit their reports at most ${REPORT_EDITS_PER_HOUR} times an hour, lost and found ` +
  `together: the next edit is 429 rate-limited with Retry-After, and a refused edit does not count.`;

const lostAlertsNote =
  ` A move or a species change of a lost report alerts (nearby_lost) the subscribers it now reaches who were not alerted ` +
  `for it before; only the first ${MAX_ALERT_RESENDS} such re-sends that reach anyone go out, later ones alert nobody.`;

/** The reporter's side of a report: PATCH (corrections) and renew (lifetime). */
export const reportOwnerRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, { pool, config }) => {
  app.patch(
    "/v1/safety/lost-reports/:id",
    {
      config: { auth: "actor" },
      schema: {
        tags: ["safety"],
        summary: "Correct a lost report (reporter only)",
        description: patchDescription("lost report", "lastSeenAt") + lostAlertsNote,
        params: IdParams,
        body: PatchLostReportBody,
        response: { 200: LostReportPrivate, ...problemResponses(400, 401, 403, 404, 409, 429) },
      },
    },
    async (request) => {
      const actor = requireActor(request);
      const { animal, lastSeenAt, location, description } = request.body;
      const patch: ReportPatch = { animal, time: lastSeenAt, location, description };
      refuseEmpty(patch);
      const row = await withTransaction(pool, (client) => editReport(client, "lost", request.params.id, actor, patch, request.log));
      const photos = photoViews(await readyPhotos(pool, { lostReportId: row.id }, { includeModerated: true }), config.API_PUBLIC_BASE_URL);
      return views.lostReportPrivate(row, false, photos, config.PUBLIC_BASE_URL, await nearbySheltersOf(pool, row));
    },
  );

  app.patch(
    "/v1/safety/found-reports/:id",
    {
      config: { auth: "actor" },
      schema: {
        tags: ["safety"],
        summary: "Correct a found report (reporter only)",
        description: patchDescription("found report", "foundAt"),
        params: IdParams,
        body: PatchFoundReportBody,
        response: { 200: FoundReportPrivate, ...problemResponses(400, 401, 403, 404, 409, 429) },
      },
    },
    async (request) => {
      const actor = requireActor(request);
      const { animal, foundAt, location, description } = request.body;
      const patch: ReportPatch = { animal, time: foundAt, location, description };
      refuseEmpty(patch);
      const row = await withTransaction(pool, (client) => editReport(client, "found", request.params.id, actor, patch, request.log));
      return views.foundReportPrivate(row, photoViews(await readyPhotos(pool, { foundReportId: row.id }, { includeModerated: true }), config.API_PUBLIC_BASE_URL), config.PUBLIC_BASE_URL);
    },
  );

  for (const kind of ["lost", "found"] as const) {
    const { path, what } = names[kind];
    app.post(
      `/v1/safety/${path}/:id/renew`,
      {
        config: { auth: "actor" },
        schema: {
          tags: ["safety"],
          summary: `Renew a ${what} (reporter only)`,
          description:
            `Sets expiresAt to now + REPORT_TTL_DAYS (${config.REPORT_TTL_DAYS} here) on an open ${what}, which also re-arms ` +
            "the report_expiring reminder, and emits events.safety.report_renewed.v1. A closed report (expired included) " +
            "is 409 conflict: report again instead. Anyone but the reporter, platform admins included, is 403.",
          params: IdParams,
          response: { 200: Renewed, ...problemResponses(400, 401, 403, 404, 409) },
        },
      },
      async (request) => {
        const actor = requireActor(request);
        return withTransaction(pool, async (client) => {
          const report = await lockOwnOpenReport(client, kind, request.params.id, actor, "renew");
          return { expiresAt: await renewReport(client, kind, report, config.REPORT_TTL_DAYS, request.log) };
        });
      },
    );
  }
};
