import type { FastifyPluginAsyncZod, ZodTypeProvider } from "fastify-type-provider-zod";
import { AuditAction, AuditObject, writeAuditEvent } from "../../lib/audit.js";
import { withTransaction, type Queryable } from "../../lib/db.js";
import { CONFIRMATION_PATH, CONFIRMATION_TTL_HOURS, CONFIRMATIONS_PER_HOUR } from "../../lib/email-confirmation.js";
import type { EventLog } from "../../lib/outbox.js";
import { hashToken, TOKEN_PATTERN } from "../../lib/secret-token.js";
import type { AppDeps } from "../deps.js";
import { prefersHtml } from "../negotiate.js";
import { decodeTimeIdCursor, page, PageQuery, toPage } from "../pagination.js";
import { problems, ProblemSlug } from "../../lib/problems.js";
import { requireActor } from "../plugins/auth.js";
import { sendProblem, toProblem } from "../plugins/errors.js";
import { problemResponses } from "../plugins/openapi.js";
import { IdParams } from "../schemas.js";
import {
  EmailConfirmed,
  EmailConfirmQuery,
  MyNotification,
  NotificationPreferences,
  PutNotificationPreferencesBody,
  ReadResult,
} from "./schemas.js";
import {
  dropConfirmation,
  getPreferences,
  listMyNotifications,
  lockAddressInUse,
  markRead,
  putPreferences,
  recentConfirmations,
  requestConfirmation,
  useConfirmation,
} from "./store.js";
import { BAD_LINK_PAGE, CONFIRMED_PAGE, FAILED_PAGE, sendPage } from "./views.js";

export const notificationRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, { pool, config }) => {
  /**
   * The address in use a PUT writes (undefined keeps it; null clears it). With
   * EMAIL_VERIFICATION=off, the address as sent. Otherwise an address other
   * than the one in use, new or the waiting one sent again, starts a
   * confirmation and leaves no address in use until its link is followed; a
   * PUT that would send a fourth confirmation email in an hour is refused
   * whole, and writes nothing.
   */
  async function addressToUse(client: Queryable, actorId: string, email: string | null | undefined, log: EventLog) {
    if (email === undefined) return undefined;
    if (email === null || config.EMAIL_VERIFICATION === "off") {
      await dropConfirmation(client, actorId);
      return email;
    }
    if ((await lockAddressInUse(client, actorId)) === email) {
      // The address in use, chosen again: any other address waiting is given up.
      await dropConfirmation(client, actorId);
      return undefined;
    }
    const recent = await recentConfirmations(client, actorId);
    if (recent.count >= CONFIRMATIONS_PER_HOUR) {
      throw problems.rateLimited(
        recent.secondsUntilSlot,
        `at most ${CONFIRMATIONS_PER_HOUR} confirmation emails an hour; nothing was changed`,
      );
    }
    await requestConfirmation(client, actorId, email, log);
    return null;
  }

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
          "Someone who never chose gets the default: in_app only (no address, emailStatus none), emailKinds null (every kind " +
          "once an address is confirmed), updatedAt null. email is the address last set; emailStatus says whether it gets " +
          "email yet: pending until the link of its confirmation email is followed, then confirmed.",
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
          "in_app is always written. An email goes out as well when a confirmed address is set and the kind is in emailKinds " +
          "(left out: every kind). email: omit it to keep the stored one, null removes it. " +
          `Email goes only to a confirmed address: setting an address (or sending the waiting one again) sends one confirmation email with a link, ` +
          `GET ${CONFIRMATION_PATH}?token=…, which works once, for ${CONFIRMATION_TTL_HOURS} hours after the email went out. ` +
          "Until it is followed emailStatus is pending and no other email goes anywhere: the previous address, if any, is no longer used. " +
          "Setting another address starts over, and the earlier link stops working. " +
          `At most ${CONFIRMATIONS_PER_HOUR} confirmation emails an hour per actor: a PUT that would send another is refused with 429 ` +
          "and Retry-After, and changes nothing. With EMAIL_VERIFICATION=off (the default in development) an address is confirmed " +
          "as soon as it is set, and no confirmation email is sent. " +
          "The earlier {channel} stays accepted: in_app means emailKinds [], email means every kind. Applies to notifications created from now on. " +
          "pushKinds: the kinds also pushed to your push subscriptions (null: every kind; left out: unchanged). " +
          "smsKinds: the kinds also texted to your verified phone (PUT /v1/me/phone; null: match, relay_message and tag_scanned; " +
          "left out: unchanged). phoneStatus and phoneEnding show the phone, never its number.",
        body: PutNotificationPreferencesBody,
        response: { 200: NotificationPreferences, ...problemResponses(400, 401, 429) },
      },
    },
    async (request) => {
      const actor = requireActor(request);
      const { channel, email, emailKinds, pushKinds, smsKinds } = request.body;
      const onlyPush = emailKinds === undefined && channel === undefined && email === undefined;
      const kinds = onlyPush ? undefined : (emailKinds ?? (channel === "in_app" ? [] : null));
      return withTransaction(pool, async (client) => {
        await putPreferences(client, actor.id, kinds, await addressToUse(client, actor.id, email, request.log), pushKinds, smsKinds);
        return getPreferences(client, actor.id);
      });
    },
  );

  // The link of a confirmation email, opened in a browser: it gets a page, an API client JSON. Every bad link gets the
  // same 404, the page or the problem, so nothing tells a used link from an expired or an unknown one.
  await app.register(async (scope) => {
    const links = scope.withTypeProvider<ZodTypeProvider>();
    links.setErrorHandler((err, request, reply) => {
      const refusal = toProblem(err, config.API_BODY_LIMIT_BYTES);
      const problem = refusal.slug === ProblemSlug.ValidationFailed ? problems.notFound("email confirmation") : refusal;
      if (problem.status >= 500) request.log.error({ err }, "request failed");
      if (!prefersHtml(request.headers.accept)) return sendProblem(reply, config.PROBLEM_BASE_URL, problem);
      return sendPage(reply.headers(problem.headers), problem.status, problem.status === 404 ? BAD_LINK_PAGE : FAILED_PAGE);
    });

    links.get(
      CONFIRMATION_PATH,
      {
        // A HEAD (a link preview that only probes) must not use up the link.
        exposeHeadRoute: false,
        config: { auth: "public" },
        schema: {
          tags: ["notifications"],
          summary: "Confirm my email address (the link of the confirmation email)",
          description:
            "No login: the token is the key. A token that is waiting and not expired makes its address the one in use " +
            "(emailStatus confirmed), is used up, and writes the audit event account.email_confirmed. " +
            `Tokens are 256-bit random, sent only in the email, stored as SHA-256 only, and expire ${CONFIRMATION_TTL_HOURS} hours ` +
            "after the email went out. Unknown, malformed, used, expired and replaced tokens all get the same 404. " +
            "A browser (Accept preferring text/html) gets an HTML page with the same status; other clients JSON or problem+json.",
          querystring: EmailConfirmQuery,
          response: { 200: EmailConfirmed, ...problemResponses(404) },
        },
      },
      async (request, reply) => {
        const token = request.query.token ?? "";
        await withTransaction(pool, async (client) => {
          // Looked up before its shape is checked: a malformed token costs the query an unknown one does.
          const used = await useConfirmation(client, hashToken(token));
          if (!used || !TOKEN_PATTERN.test(token)) throw problems.notFound("email confirmation");
          await writeAuditEvent(client, {
            actorId: used.actorId,
            action: AuditAction.EmailConfirmed,
            objectType: AuditObject.Account,
            objectId: used.actorId,
            metadata: { emailConfirmationId: used.id },
          });
        });
        if (prefersHtml(request.headers.accept)) return sendPage(reply, 200, CONFIRMED_PAGE);
        return reply.header("cache-control", "no-store").send({ emailStatus: "confirmed" as const });
      },
    );
  });
};
