import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { validateRequest } from "twilio/lib/webhooks/webhooks.js";
import { withTransaction } from "../../lib/db.js";
import { problems } from "../../lib/problems.js";
import { toE164 } from "../../lib/sms/phone.js";
import { OPTED_OUT_CODE } from "../../lib/sms/status.js";
import { recordSmsSend, stopNumber } from "../../lib/sms/store.js";
import type { AppDeps } from "../deps.js";
import { problemResponses } from "../plugins/openapi.js";
import { parseFormBody } from "../tag/form.js";
import { receiveText } from "./inbound.js";
import { SmsInbound, SmsStatusCallback, SmsStatusRecorded, Twiml, TWIML_EMPTY } from "./schemas.js";

export const SIGNATURE_HEADER = "x-twilio-signature";

/**
 * The SMS provider's webhooks (contract part 4, "SMS"). Each must carry a
 * valid X-Twilio-Signature: the HMAC-SHA1, keyed with SMS_AUTH_TOKEN, of the
 * full URL as the provider called it (PUBLIC_BASE_URL + path + query) and the
 * POST parameters sorted by name, checked by the twilio package's
 * validateRequest. The check runs once the form is parsed and before the
 * body's schema, so an unsigned or badly signed request is 403 whatever it
 * holds, and changes nothing.
 */
export const smsRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, { pool, config }) => {
  const publicBase = config.PUBLIC_BASE_URL.replace(/\/+$/, "");
  const formOnly = { consumes: ["application/x-www-form-urlencoded"] };

  app.addContentTypeParser("application/x-www-form-urlencoded", { parseAs: "string" }, (_request, body, done) =>
    done(null, parseFormBody(body as string)),
  );
  // Any other body is no form the provider signed: it reaches the signature check with no parameters, and gets its 403.
  app.addContentTypeParser("*", { parseAs: "string" }, (_request, _body, done) => done(null, {}));
  app.addHook("preValidation", async (request) => {
    const signature = request.headers[SIGNATURE_HEADER];
    const token = config.SMS_AUTH_TOKEN;
    const params = request.body && typeof request.body === "object" ? (request.body as Record<string, string>) : {};
    if (!token || typeof signature !== "string" || !validateRequest(token, signature, `${publicBase}${request.url}`, params)) {
      throw problems.forbidden("the request carries no valid X-Twilio-Signature");
    }
  });

  app.post(
    "/v1/sms/status",
    {
      config: { auth: "public" },
      schema: {
        tags: ["sms"],
        summary: "The SMS provider's delivery status of a text (webhook)",
        description:
          "Records the status of the text with this MessageSid (queued, sent, delivered, undelivered or failed); a status " +
          `never replaces a later one. ErrorCode ${OPTED_OUT_CODE} (the recipient opted out) stops the number, as STOP does. ` +
          "403 without a valid X-Twilio-Signature.",
        ...formOnly,
        body: SmsStatusCallback,
        response: { 200: SmsStatusRecorded, ...problemResponses(400, 403) },
      },
    },
    async (request) => {
      const { MessageSid, MessageStatus, ErrorCode, To } = request.body;
      const errorCode = ErrorCode ? Number(ErrorCode) : null;
      const status = await withTransaction(pool, async (client) => {
        const recorded = await recordSmsSend(client, { sid: MessageSid, status: MessageStatus, errorCode });
        const to = To ? toE164(To) : null;
        if (errorCode === OPTED_OUT_CODE && to) await stopNumber(client, to);
        return recorded;
      });
      if (errorCode !== null && errorCode !== 0) request.log.warn({ sid: MessageSid, status: MessageStatus, errorCode }, "sms: provider reports a failure");
      return { messageSid: MessageSid, status };
    },
  );

  app.post(
    "/v1/sms/inbound",
    {
      config: { auth: "public" },
      schema: {
        tags: ["sms"],
        summary: "A text to the service's number (webhook)",
        description:
          "STOP, STOPALL, UNSUBSCRIBE, CANCEL, END or QUIT (trimmed, any case): no more texts to that number, confirmed by one reply. " +
          "START or UNSTOP: texts resume. HELP: one reply naming the service and how to stop. Any other text belongs to the " +
          "number's most recent text conversation within 7 days: an owner's reply goes to the finder's number from the service's " +
          "number, the finder's back to the owner; neither sees the other's number. With no conversation it gets the HELP reply. " +
          "Every answer is a text of its own, sent by a delivery job; the TwiML answer is empty. A MessageSid seen before changes " +
          "nothing. 403 without a valid X-Twilio-Signature.",
        ...formOnly,
        body: SmsInbound,
        response: { 200: { description: "TwiML", content: { "text/xml": { schema: Twiml } } }, ...problemResponses(400, 403) },
      },
    },
    async (request, reply) => {
      const { MessageSid, From, Body } = request.body;
      // The provider gives E.164; a short code or a sender name is nobody the service can answer.
      const from = toE164(From);
      if (from) {
        await withTransaction(pool, (client) => receiveText(client, { messageSid: MessageSid, from, body: Body }, request.log));
      }
      return reply.code(200).type("text/xml; charset=utf-8").send(TWIML_EMPTY);
    },
  );
};
