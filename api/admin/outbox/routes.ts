import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { AuditAction, AuditObject, writeAuditEvent } from "../../../lib/audit.js";
import { publishOutboxRow } from "../../../lib/bus.js";
import { withTransaction } from "../../../lib/db.js";
import {
  incrementRequeueCount,
  listStuckEvents,
  lockOutboxEvent,
  markPublished,
  REQUEUE_LIMIT,
} from "../../../lib/outbox.js";
import { problems } from "../../../lib/problems.js";
import type { AppDeps } from "../../deps.js";
import { requireActor } from "../../plugins/auth.js";
import { problemResponses } from "../../plugins/openapi.js";
import { IdParams } from "../../schemas.js";
import { decodeTimeIdCursor, toPage } from "../../pagination.js";
import { maskPayload } from "./mask.js";
import { RequeueResult, StuckEventPage, StuckQuery } from "./schemas.js";

// The relay's publish timeout default: a requeue waits for the stream's ack exactly as the relay would.
const REQUEUE_PUBLISH_TIMEOUT_MS = 5000;

export const adminOutboxRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, { pool, js }) => {
  app.get(
    "/v1/admin/outbox/stuck",
    {
      schema: {
        tags: ["admin"],
        summary: "List stuck (unpublished) outbox events",
        description:
          "Unpublished outbox rows older than olderThan (90s, 5m, 1h, 2d; default 5m, at most 30d), oldest first. " +
          "Payload fields whose key names personal or secret data (email, phone, contact, location, lat/lon, address, token, message, " +
          "verificationDetail and similar) are masked as *** at any depth; there is no unmasked view.",
        querystring: StuckQuery,
        response: { 200: StuckEventPage, ...problemResponses(400, 401, 403) },
      },
    },
    async (request) => {
      const { olderThan, limit, cursor } = request.query;
      const after = decodeTimeIdCursor(cursor);
      // One row more than the page: it only tells toPage that another page exists.
      const rows = await listStuckEvents(pool, olderThan, limit + 1, after && { occurredAt: after.at, id: after.id });
      return toPage(rows, limit, (row) => ({
        id: row.id,
        type: row.type,
        occurredAt: row.occurredAt.toISOString(),
        ageSeconds: row.ageSeconds,
        requeueCount: row.requeueCount,
        payload: maskPayload(row.payload) as Record<string, unknown>,
      }));
    },
  );

  app.post(
    "/v1/admin/outbox/:id/requeue",
    {
      schema: {
        tags: ["admin"],
        summary: "Re-publish a stuck outbox event",
        description:
          `Publishes the row through the relay's own code path (Nats-Msg-Id = outbox id, waiting for the stream's ack) and marks it published when acked. ` +
          `Every attempt counts, acked or not: published says whether the stream acked this one. ` +
          `At most ${REQUEUE_LIMIT} requeues per event; the next one is refused with 409 requeue-limit-reached and changes nothing. ` +
          `An event that is already published is refused with 409 conflict: the relay delivered it, and a re-publish after the stream's ` +
          `duplicate window would deliver it twice. Audited as admin.outbox.requeued with eventType, requeueCount, published and ` +
          `flagged (true from the 2nd requeue), in the same transaction as the count.`,
        params: IdParams,
        response: { 200: RequeueResult, ...problemResponses(400, 401, 403, 404, 409) },
      },
    },
    async (request) => {
      const actor = requireActor(request);
      const { id } = request.params;
      return withTransaction(pool, async (client) => {
        const row = await lockOutboxEvent(client, id);
        if (!row) throw problems.notFound("outbox event");
        if (row.requeueCount >= REQUEUE_LIMIT) throw problems.requeueLimitReached(REQUEUE_LIMIT);
        if (row.publishedAt) throw problems.conflict("this event is already published");
        const requeueCount = await incrementRequeueCount(client, id);
        let published = false;
        try {
          await publishOutboxRow(js, row, REQUEUE_PUBLISH_TIMEOUT_MS);
          published = true;
        } catch (err) {
          request.log.warn({ outboxId: id, err: { message: (err as Error).message } }, "admin: requeue publish failed");
        }
        if (published) await markPublished(client, [id]);
        await writeAuditEvent(client, {
          actorId: actor.id,
          action: AuditAction.OutboxRequeued,
          objectType: AuditObject.OutboxEvent,
          objectId: id,
          metadata: { eventType: row.type, requeueCount, published, flagged: requeueCount >= 2 },
        });
        return { id, published, requeueCount };
      });
    },
  );
};
