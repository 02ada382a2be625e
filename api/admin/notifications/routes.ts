import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { AuditAction, AuditObject, writeAuditEvent } from "../../../lib/audit.js";
import { withTransaction } from "../../../lib/db.js";
import { reasonCategory, tryLockDeliveryInTransaction } from "../../../lib/notifications.js";
import { enqueueDeliveries } from "../../../jobs/queue.js";
import { problems } from "../../../lib/problems.js";
import type { AppDeps } from "../../deps.js";
import { decodeTimeIdCursor, page, toPage } from "../../pagination.js";
import { requireActor } from "../../plugins/auth.js";
import { IdParams, Problem } from "../../schemas.js";
import { FailuresQuery, NotificationFailure, ReplayResult } from "./schemas.js";
import { findLaterSent, listFailures, lockNotification, markPendingForReplay } from "./store.js";

export const adminNotificationRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, { pool }) => {
  app.get(
    "/v1/admin/notifications/failures",
    {
      schema: {
        tags: ["admin", "notifications"],
        summary: "List failed and dead-lettered notifications",
        description:
          "Notifications in status failed (retries remain, a delivery is running) or dead_letter, most recently updated first (updated_at, then id). reasonCategory is derived from lastError: a missing deliverer, a missing address and a provider rejection (SMTP 5xx) are permanent; timeouts, connection errors, SMTP 4xx and anything unrecognised are transient.",
        querystring: FailuresQuery,
        response: { 200: page(NotificationFailure) },
      },
    },
    async (request) => {
      const { limit, cursor, status, channel } = request.query;
      const rows = await listFailures(pool, { status, channel }, limit + 1, decodeTimeIdCursor(cursor));
      return toPage(rows, limit, (r) => ({
        id: r.id,
        recipientActorId: r.recipientActorId,
        channel: r.channel,
        status: r.status,
        attempts: r.attempts,
        lastError: r.lastError,
        reasonCategory: reasonCategory(r.lastError),
        sourceEventId: r.sourceEventId,
        createdAt: r.createdAt.toISOString(),
        updatedAt: r.updatedAt.toISOString(),
      }));
    },
  );

  app.post(
    "/v1/admin/notifications/:id/replay",
    {
      schema: {
        tags: ["admin", "notifications"],
        summary: "Replay a failed notification",
        description: [
          "Queues the notification's delivery job again (the same notification__deliver job, with a fresh round of 3 attempts; `attempts` keeps counting the total); the re-attempt runs on the notifier's worker, so `status` is the state right after queuing (pending). Poll the failures listing or the row for the outcome.",
          "Refused with 409 replay-not-eligible and `reason`:",
          "status: the notification is not failed or dead_letter, or a delivery of it is running right now;",
          "permanent: its reasonCategory is permanent, which a configured delivery provider (or address) fixes, not a resend;",
          "superseded: a later notification to the same recipient about the same thing was already sent. Event ids are unique per notification, so 'the same sourceEventId' is read as the same underlying subject (source_key, for example relay_message:<id>), which a re-emitted event for the same message shares.",
          "Writes the audit event admin.notification.replayed with previousStatus, newStatus (pending), channel and recipientActorId.",
        ].join("\n"),
        params: IdParams,
        response: { 200: ReplayResult, 404: Problem, 409: Problem },
      },
    },
    async (request) => {
      const admin = requireActor(request);
      const { id } = request.params;
      return withTransaction(pool, async (client) => {
        const notification = await lockNotification(client, id);
        if (!notification) throw problems.notFound("notification");
        const previousStatus = notification.status;
        if (previousStatus !== "failed" && previousStatus !== "dead_letter") {
          throw problems.replayNotEligible("status", `only failed or dead_letter notifications can be replayed; this one is ${previousStatus}`);
        }
        if (!(await tryLockDeliveryInTransaction(client, id))) {
          throw problems.replayNotEligible("status", "a delivery of this notification is running; wait for its outcome");
        }
        if (reasonCategory(notification.lastError) === "permanent") {
          throw problems.replayNotEligible(
            "permanent",
            `the failure is permanent (${notification.lastError}): a configured delivery provider is needed, not a resend`,
          );
        }
        const laterId = await findLaterSent(client, id);
        if (laterId) {
          throw problems.replayNotEligible("superseded", `a later notification for the same message (${laterId}) was already sent`);
        }
        await markPendingForReplay(client, id);
        await enqueueDeliveries(client, [{ id, channel: notification.channel }]);
        await writeAuditEvent(client, {
          actorId: admin.id,
          action: AuditAction.NotificationReplayed,
          objectType: AuditObject.Notification,
          objectId: id,
          metadata: {
            previousStatus,
            newStatus: "pending",
            channel: notification.channel,
            recipientActorId: notification.recipientActorId,
          },
        });
        return { id, previousStatus, status: "pending" as const };
      });
    },
  );
};
