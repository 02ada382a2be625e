import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { AuditAction, AuditObject, writeAuditEvent } from "../../../lib/audit.js";
import { withTransaction } from "../../../lib/db.js";
import { EventType } from "../../../lib/events.js";
import { recordEvent } from "../../../lib/outbox.js";
import { problems } from "../../../lib/problems.js";
import type { AppDeps } from "../../deps.js";
import { requireActor } from "../../plugins/auth.js";
import { problemResponses } from "../../plugins/openapi.js";
import { IdParams } from "../../schemas.js";
import { decodeTimeIdCursor, toPage } from "../../pagination.js";
import { ActionBody, ModerationItem, ModerationQueuePage, QueueQuery } from "./schemas.js";
import {
  applyContentState,
  contentAuthor,
  claimReport,
  escalateReport,
  getReport,
  listQueue,
  lockReport,
  resolveReport,
  type ContentState,
  type ModerationRow,
} from "./store.js";

const contentStateFor: Partial<Record<string, ContentState>> = { quarantine: "quarantined", remove: "removed" };

function toItem({ cursorAt: _cursorAt, claimedAt, resolvedAt, createdAt, ...row }: ModerationRow): ModerationItem {
  return {
    ...row,
    claimedAt: claimedAt?.toISOString() ?? null,
    resolvedAt: resolvedAt?.toISOString() ?? null,
    createdAt: createdAt.toISOString(),
  };
}

async function mustGet(client: Parameters<typeof getReport>[0], id: string): Promise<ModerationRow> {
  const report = await getReport(client, id);
  if (!report) throw problems.notFound("moderation item");
  return report;
}

/** The item, row-locked for the rest of the transaction: 404 when missing, 409 conflict once resolved. */
async function lockUnresolved(client: Parameters<typeof lockReport>[0], id: string): Promise<ModerationRow> {
  const report = await lockReport(client, id);
  if (!report) throw problems.notFound("moderation item");
  if (report.status === "resolved") throw problems.conflict("this moderation item is already resolved");
  return report;
}

export const adminModerationRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, { pool }) => {
  app.get(
    "/v1/admin/moderation/queue",
    {
      schema: {
        tags: ["admin"],
        summary: "List the moderation queue",
        description:
          "Unresolved moderation items, oldest first. Without status it lists open, claimed and escalated items together. " +
          "contentState shows whether the target is already quarantined or removed.",
        querystring: QueueQuery,
        response: { 200: ModerationQueuePage, ...problemResponses(400, 401, 403) },
      },
    },
    async (request) => {
      const { status, limit, cursor } = request.query;
      const statuses = status ? [status] : (["open", "claimed", "escalated"] as const);
      const rows = await listQueue(pool, [...statuses], limit, decodeTimeIdCursor(cursor));
      return toPage(rows, limit, toItem);
    },
  );

  app.post(
    "/v1/admin/moderation/:id/claim",
    {
      schema: {
        tags: ["admin"],
        summary: "Claim a moderation item",
        description:
          "Atomic: of two admins claiming at once, one gets 200 and the other 409 moderation-claimed. " +
          "Claiming an item you already hold is a 200 no-op that keeps claimedAt and writes no audit event. Open and " +
          "escalated items can be claimed; a resolved item gets 409 conflict. A claim is audited as admin.moderation.claimed " +
          "in the same transaction.",
        params: IdParams,
        response: { 200: ModerationItem, ...problemResponses(400, 401, 403, 404, 409) },
      },
    },
    async (request) => {
      const actor = requireActor(request);
      const { id } = request.params;
      const report = await withTransaction(pool, async (client) => {
        // The row lock decides a race: the second claimant waits, then sees the first one's claim.
        const current = await lockUnresolved(client, id);
        if (current.claimedBy === actor.id) return current;
        if (current.claimedBy !== null) throw problems.moderationClaimed();
        await claimReport(client, id, actor.id);
        await writeAuditEvent(client, {
          actorId: actor.id,
          action: AuditAction.ModerationClaimed,
          objectType: AuditObject.ModerationReport,
          objectId: id,
          metadata: { targetType: current.targetType, targetId: current.targetId },
        });
        return mustGet(client, id);
      });
      return toItem(report);
    },
  );

  app.post(
    "/v1/admin/moderation/:id/action",
    {
      schema: {
        tags: ["admin"],
        summary: "Act on a claimed moderation item",
        description:
          "Only the admin holding the claim may act: an unclaimed item gets 409 conflict (claim it first), an item another admin holds " +
          "gets 409 moderation-claimed, a resolved one 409 conflict. dismiss and warn resolve the item; warn records the decision only " +
          "(the service has no channel to the author). quarantine and remove also set the target's moderation_content_state " +
          "(the latest decision wins), which hides it from every public read path. escalate returns the item to the queue as " +
          "escalated and releases the claim. Audited as admin.moderation.actioned in the same transaction.",
        params: IdParams,
        body: ActionBody,
        response: { 200: ModerationItem, ...problemResponses(400, 401, 403, 404, 409) },
      },
    },
    async (request) => {
      const actor = requireActor(request);
      const { id } = request.params;
      const { action, note = null } = request.body;
      const report = await withTransaction(pool, async (client) => {
        const current = await lockUnresolved(client, id);
        if (current.status !== "claimed") throw problems.conflict("claim this moderation item before acting on it");
        if (current.claimedBy !== actor.id) throw problems.moderationClaimed();

        const contentState = contentStateFor[action];
        if (contentState) {
          await applyContentState(client, current, contentState, id, actor.id);
          const authorId = await contentAuthor(client, current);
          if (authorId) {
            const { targetType, targetId } = current;
            const data = { authorId, targetType, targetId, state: contentState, moderationReportId: id };
            await recordEvent(client, EventType.ContentModerated, data, request.log);
          }
        }
        if (action === "escalate") await escalateReport(client, id, note);
        else await resolveReport(client, id, actor.id, action, note);

        await writeAuditEvent(client, {
          actorId: actor.id,
          action: AuditAction.ModerationActioned,
          objectType: AuditObject.ModerationReport,
          objectId: id,
          metadata: { action, note, targetType: current.targetType, targetId: current.targetId, contentState: contentState ?? null },
        });
        return mustGet(client, id);
      });
      return toItem(report);
    },
  );
};
