import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { withTransaction } from "../../lib/db.js";
import { problems } from "../../lib/problems.js";
import { endpointProblem, keysProblem, MAX_PUSH_SUBSCRIPTIONS_PER_ACTOR, vapidPublicKey } from "../../lib/push.js";
import type { AppDeps } from "../deps.js";
import { requireActor } from "../plugins/auth.js";
import { problemResponses } from "../plugins/openapi.js";
import { IdParams } from "../schemas.js";
import { CreatePushSubscriptionBody, PushPublicKey, PushSubscriptionCreated, PushSubscriptionList } from "./schemas.js";
import { SERVICE_WORKER_JS } from "./service-worker.js";
import * as store from "./store.js";

const ENDPOINT_TAKEN = "this push endpoint is subscribed by another account; that account must delete it first";

/** Web Push (contract part 3, "Push to phones"): the public key, an actor's subscriptions, and the service worker. */
export const pushRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, { pool, config }) => {
  app.get(
    "/v1/push/public-key",
    {
      config: { auth: "public" },
      schema: {
        tags: ["push"],
        summary: "The VAPID public key browsers subscribe with",
        description: "Pass it as applicationServerKey to PushManager.subscribe; then POST the subscription to /v1/me/push-subscriptions.",
        response: { 200: PushPublicKey },
      },
    },
    async (_request, reply) => {
      reply.header("cache-control", "public, max-age=3600");
      return { publicKey: vapidPublicKey(config.VAPID_PUBLIC_KEY) };
    },
  );

  app.post(
    "/v1/me/push-subscriptions",
    {
      config: { auth: "actor" },
      schema: {
        tags: ["push"],
        summary: "Get my notifications on this browser or phone (Web Push)",
        description:
          "The body is the browser's PushSubscription.toJSON(). 201 with the new id; the same endpoint again is 200 with the same id " +
          "(its keys updated). An endpoint belongs to one actor: posted by another, it is 409 until its owner deletes it. The endpoint must be https and not on a loopback, private or link-local address; p256dh must be a " +
          `65-byte uncompressed P-256 point and auth 16 bytes, both base64url (400 otherwise). At most ${MAX_PUSH_SUBSCRIPTIONS_PER_ACTOR} ` +
          "per actor (409). Notifications of the kinds in pushKinds (notification preferences; left out: every kind) are pushed to " +
          "every subscription; one the push service says is gone (404, 410) is deleted.",
        body: CreatePushSubscriptionBody,
        response: { 200: PushSubscriptionCreated, 201: PushSubscriptionCreated, ...problemResponses(400, 401, 403, 409) },
      },
    },
    async (request, reply) => {
      const actor = requireActor(request);
      const { endpoint, keys } = request.body;
      const badKeys = keysProblem(keys);
      if (badKeys) throw problems.validation(`${badKeys.path}: ${badKeys.message}`, [badKeys]);
      const badEndpoint = await endpointProblem(endpoint, {
        allowHosts: config.PUSH_ENDPOINT_ALLOW,
        resolveNames: config.API_ENV !== "development",
      });
      if (badEndpoint) throw problems.validation(`body.endpoint: ${badEndpoint}`, [{ path: "body.endpoint", message: badEndpoint }]);
      const result = await withTransaction(pool, async (client) => {
        await store.lockActorSubscriptions(client, actor.id);
        const existing = await store.findByEndpoint(client, endpoint);
        if (existing?.actorId === actor.id) {
          await store.refreshKeys(client, existing.id, keys);
          return { id: existing.id, created: false };
        }
        // Another actor's: whoever knows an endpoint URL must not move it, and its pushes, to their account.
        if (existing) throw problems.conflict(ENDPOINT_TAKEN);
        const row = await store.insertSubscription(client, actor.id, request.body);
        if (row === "taken") throw problems.conflict(ENDPOINT_TAKEN);
        if (!row) throw problems.conflict(`you already have ${MAX_PUSH_SUBSCRIPTIONS_PER_ACTOR} push subscriptions; delete one first`);
        return { id: row.id, created: true };
      });
      return reply
        .code(result.created ? 201 : 200)
        .header("location", `/v1/me/push-subscriptions/${result.id}`)
        .send({ id: result.id });
    },
  );

  app.get(
    "/v1/me/push-subscriptions",
    {
      config: { auth: "actor" },
      schema: {
        tags: ["push"],
        summary: "List my push subscriptions",
        description: `Newest first; at most ${MAX_PUSH_SUBSCRIPTIONS_PER_ACTOR}. The keys are not shown.`,
        response: { 200: PushSubscriptionList, ...problemResponses(401, 403) },
      },
    },
    async (request) => {
      const rows = await store.listSubscriptions(pool, requireActor(request).id);
      return { items: rows.map((r) => ({ id: r.id, endpoint: r.endpoint, createdAt: r.createdAt.toISOString() })) };
    },
  );

  app.delete(
    "/v1/me/push-subscriptions/:id",
    {
      config: { auth: "actor" },
      schema: {
        tags: ["push"],
        summary: "Delete one of my push subscriptions",
        description: "Another actor's subscription is 404: its existence is not revealed.",
        params: IdParams,
        response: { 204: z.null(), ...problemResponses(400, 401, 403, 404) },
      },
    },
    async (request, reply) => {
      const actor = requireActor(request);
      if (!(await store.deleteOwnSubscription(pool, actor.id, request.params.id))) throw problems.notFound("push subscription");
      return reply.code(204).send(null);
    },
  );

  app.get(
    "/sw.js",
    {
      config: { auth: "public" },
      schema: {
        // An asset of the pages, like /t/assets: not API.
        hide: true,
        tags: ["push"],
        summary: "The service worker that shows push notifications",
        description:
          "Registered by the share and tag pages' script at scope /. It shows each push as a notification (its subject and body) " +
          "and opens the push's url when the notification is clicked.",
      },
    },
    async (_request, reply) =>
      reply
        .header("content-type", "application/javascript; charset=utf-8")
        .header("service-worker-allowed", "/")
        // Short: browsers check a service worker for updates anyway, and a deploy's new worker should arrive soon.
        .header("cache-control", "public, max-age=300")
        .send(SERVICE_WORKER_JS),
  );
};
