import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { withTransaction } from "../../lib/db.js";
import type { AppDeps } from "../deps.js";
import { decodeTimeIdCursor, page, PageQuery, toPage } from "../pagination.js";
import { problems } from "../../lib/problems.js";
import { requireActor } from "../plugins/auth.js";
import { problemResponses } from "../plugins/openapi.js";
import { IdParams } from "../schemas.js";
import { MyNotification, NotificationPreferences, PutNotificationPreferencesBody, ReadResult } from "./schemas.js";
import { getPreferences, listMyNotifications, markRead, putPreferences } from "./store.js";

export const notificationRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, { pool }) => {
  app.get(
    "/v1/me/notifications",
    {
      config: { auth: "actor" },
      schema: {
        tags: ["notifications"],
        summary: "List my notifications",
        description:
          "The caller's notifications on every channel, newest first (created_at, then id). In-app notifications are read here; email ones are listed too, whatever their delivery status, so a message can be read even when email is not configured.",
        querystring: PageQuery,
        response: { 200: page(MyNotification) },
      },
    },
    async (request) => {
      const actor = requireActor(request);
      const { limit, cursor } = request.query;
      const rows = await listMyNotifications(pool, actor.id, limit + 1, decodeTimeIdCursor(cursor));
      return toPage(rows, limit, (r) => ({
        id: r.id,
        channel: r.channel,
        status: r.status,
        kind: r.kind,
        subject: r.subject,
        body: r.body,
        data: r.data,
        eventType: r.eventType,
        createdAt: r.createdAt.toISOString(),
        sentAt: r.sentAt?.toISOString() ?? null,
        readAt: r.readAt?.toISOString() ?? null,
      }));
    },
  );

  app.post(
    "/v1/me/notifications/:id/read",
    {
      config: { auth: "actor" },
      schema: {
        tags: ["notifications"],
        summary: "Mark one of my notifications read",
        description: "Sets readAt (once; a second call keeps the first time). Another actor's notification is 404.",
        params: IdParams,
        response: { 200: ReadResult, ...problemResponses(400, 401, 403, 404) },
      },
    },
    async (request) => {
      const actor = requireActor(request);
      const read = await markRead(pool, actor.id, request.params.id);
      if (!read) throw problems.notFound("notification");
      return { id: request.params.id, readAt: read.readAt.toISOString() };
    },
  );

  app.get(
    "/v1/me/notification-preferences",
    {
      config: { auth: "actor" },
      schema: {
        tags: ["notifications"],
        summary: "Read my notification preferences",
        description:
          "Someone who never chose gets the default: in_app only (no address), emailKinds null (every kind once an address is set), updatedAt null.",
        response: { 200: NotificationPreferences },
      },
    },
    async (request) => getPreferences(pool, requireActor(request).id),
  );

  app.put(
    "/v1/me/notification-preferences",
    {
      config: { auth: "actor" },
      schema: {
        tags: ["notifications"],
        summary: "Choose my email address and which kinds also go by email",
        description:
          "in_app is always written. An email goes out as well when an address is set and the kind is in emailKinds (left out: every kind). email: omit it to keep the stored one, null removes it; the address is not verified. The earlier {channel} stays accepted: in_app means emailKinds [], email means every kind. Applies to notifications created from now on.",
        body: PutNotificationPreferencesBody,
        response: { 200: NotificationPreferences },
      },
    },
    async (request) => {
      const actor = requireActor(request);
      const { channel, email, emailKinds } = request.body;
      const kinds = emailKinds ?? (channel === "in_app" ? [] : null);
      return withTransaction(pool, async (client) => {
        await putPreferences(client, actor.id, kinds, email);
        return getPreferences(client, actor.id);
      });
    },
  );
};
