import type { FastifyPluginAsyncZod, ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { verifyUnsubscribeToken } from "../../lib/alert-unsubscribe.js";
import { MAX_RADIUS_KM, MAX_SUBSCRIPTIONS_PER_ACTOR, MIN_RADIUS_KM, DAILY_ALERT_CAP } from "../../lib/alerts.js";
import { takeBucketToken } from "../../lib/buckets.js";
import { withTransaction } from "../../lib/db.js";
import { problems } from "../../lib/problems.js";
import type { AppDeps } from "../deps.js";
import { decodeTimeIdCursor, page, PageQuery, toPage } from "../pagination.js";
import { requireActor } from "../plugins/auth.js";
import { problemResponses } from "../plugins/openapi.js";
import { Created, IdParams } from "../schemas.js";
import { AlertSubscription, CreateAlertSubscriptionBody, Unsubscribed, UnsubscribeQuery } from "./schemas.js";
import * as store from "./store.js";

/** Neighbourhood alert subscriptions (contract part 2): the owner's CRUD and the emails' one-click unsubscribe. */
export const alertSubscriptionRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, { pool, config }) => {
  app.post(
    "/v1/me/alert-subscriptions",
    {
      config: { auth: "actor" },
      schema: {
        tags: ["alerts"],
        summary: "Subscribe to lost-animal alerts around a point",
        description:
          `A new open lost report whose coarse point lies within radiusKm (${MIN_RADIUS_KM}..${MAX_RADIUS_KM}) of the point ` +
          `notifies you (kind nearby_lost), at most once per report and ${DAILY_ALERT_CAP} a day; the rest of a day comes ` +
          "as one digest the next morning. The point is stored precisely and shown only to you. At most " +
          `${MAX_SUBSCRIPTIONS_PER_ACTOR} subscriptions at once (409 conflict); creation is limited to 10 an hour (429).`,
        body: CreateAlertSubscriptionBody,
        response: { 201: Created, ...problemResponses(400, 401, 403, 409, 429) },
      },
    },
    async (request, reply) => {
      const actor = requireActor(request);
      const bucket = store.subscriptionCreationBucket(actor.id);
      const created = await withTransaction(pool, async (client) => {
        const wait = await takeBucketToken(client, bucket);
        if (wait > 0) throw problems.rateLimited(wait, "you can create at most 10 alert subscriptions per hour");
        const row = await store.insertSubscription(client, actor.id, request.body);
        // Thrown inside the transaction: the creation token is given back.
        if (!row) throw problems.conflict(`you already have ${MAX_SUBSCRIPTIONS_PER_ACTOR} alert subscriptions; delete one first`);
        return row;
      });
      return reply
        .code(201)
        .header("location", `/v1/me/alert-subscriptions/${created.id}`)
        .send({ id: created.id, createdAt: created.createdAt.toISOString() });
    },
  );

  app.get(
    "/v1/me/alert-subscriptions",
    {
      config: { auth: "actor" },
      schema: {
        tags: ["alerts"],
        summary: "List my alert subscriptions",
        description: "Newest first, with the precise points: this listing is the only place they appear.",
        querystring: PageQuery,
        response: { 200: page(AlertSubscription) },
      },
    },
    async (request) => {
      const actor = requireActor(request);
      const { limit, cursor } = request.query;
      const rows = await store.listSubscriptions(pool, actor.id, limit + 1, decodeTimeIdCursor(cursor));
      return toPage(rows, limit, (r) => ({
        id: r.id,
        location: { lat: r.lat, lon: r.lon },
        radiusKm: r.radiusM / 1000,
        species: r.species,
        createdAt: r.createdAt.toISOString(),
      }));
    },
  );

  app.delete(
    "/v1/me/alert-subscriptions/:id",
    {
      config: { auth: "actor" },
      schema: {
        tags: ["alerts"],
        summary: "Delete one of my alert subscriptions",
        description: "Another actor's subscription is 404: its existence is not revealed.",
        params: IdParams,
        response: { 204: z.null(), ...problemResponses(400, 401, 403, 404) },
      },
    },
    async (request, reply) => {
      const actor = requireActor(request);
      if (!(await store.deleteOwnSubscription(pool, actor.id, request.params.id))) throw problems.notFound("alert subscription");
      return reply.code(204).send(null);
    },
  );

  // RFC 8058: mail providers POST `List-Unsubscribe=One-Click` as a form; the body carries nothing we need.
  await app.register(async (scope) => {
    const oneClick = scope.withTypeProvider<ZodTypeProvider>();
    oneClick.addContentTypeParser(
      ["application/x-www-form-urlencoded", "multipart/form-data"],
      { parseAs: "string", bodyLimit: 4_096 },
      (_request, _body, done) => done(null, null),
    );
    oneClick.post(
      "/v1/alert-subscriptions/unsubscribe",
      {
        config: { auth: "public" },
        schema: {
          tags: ["alerts"],
          summary: "One-click unsubscribe from an alert email (RFC 8058)",
          description:
            "The List-Unsubscribe link of every nearby_lost email. No login: the signed token names the subscriptions the email " +
            "was about and deletes exactly those. 200 even when they are already gone; a token that is malformed or not signed " +
            "by this service is 400. The RFC 8058 body (List-Unsubscribe=One-Click, form-encoded) is accepted and not needed.",
          querystring: UnsubscribeQuery,
          response: { 200: Unsubscribed, ...problemResponses(400) },
        },
      },
      async (request) => {
        const ids = verifyUnsubscribeToken(config.ALERT_UNSUBSCRIBE_SECRET, request.query.token);
        if (!ids) throw problems.validation("query.token: is not an unsubscribe token this service issued", [
          { path: "query.token", message: "is not an unsubscribe token this service issued" },
        ]);
        await store.deleteSubscriptions(pool, ids);
        return { unsubscribed: true as const };
      },
    );
  });
};
