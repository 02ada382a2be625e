import { timingSafeEqual } from "node:crypto";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { withTransaction } from "../../lib/db.js";
import { PHONE_VERIFICATION_KIND } from "../../lib/notifications.js";
import { ProblemError, problems, ProblemSlug } from "../../lib/problems.js";
import { hashPhoneCode, PHONE_CODE_TRIES, PHONE_CODE_TTL_MINUTES, PHONE_CODES_PER_HOUR } from "../../lib/sms/codes.js";
import { toE164, type Region } from "../../lib/sms/phone.js";
import type { AppDeps } from "../deps.js";
import { recentOfKind } from "../notifications/store.js";
import { requireActor } from "../plugins/auth.js";
import { problemResponses } from "../plugins/openapi.js";
import { PhoneState, PutPhoneBody, VerifyPhoneBody } from "./schemas.js";
import * as store from "./store.js";

/**
 * An actor's phone number for texts (contract part 4, "SMS"): set it, and
 * verify it with the 6-digit code texted to it. No response carries the
 * number: only its status and last two digits (phoneEnding).
 */
export const phoneRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, { pool, config }) => {
  const region = config.SMS_DEFAULT_REGION as Region | undefined;
  /** The API takes numbers only when it can check the provider's webhooks, that is with the sms channel on. */
  const smsOn = () => {
    if (!config.SMS_AUTH_TOKEN) throw problems.conflict("this service sends no text messages (SMS is not configured)");
  };

  app.put(
    "/v1/me/phone",
    {
      config: { auth: "actor" },
      schema: {
        tags: ["notifications"],
        summary: "Set the phone number I get texts on",
        description:
          "Reads any format libphonenumber reads; a number without its country code is read in SMS_DEFAULT_REGION's region. " +
          `Texts a 6-digit code to the number: the code works for ${PHONE_CODE_TTL_MINUTES} minutes after the text went out and allows ` +
          `${PHONE_CODE_TRIES} tries (POST /v1/me/phone/verify). Until it is entered phoneStatus is pending, nothing but the code goes to ` +
          "the number, and the number verified before, if any, gets nothing. The verified number sent again changes nothing and " +
          `sends no code. At most ${PHONE_CODES_PER_HOUR} codes an hour per actor: another is 429 with Retry-After and changes nothing. ` +
          "A number that sent STOP is 409 until it sends START. null removes the number. 409 when the service sends no texts.",
        body: PutPhoneBody,
        response: { 200: PhoneState, ...problemResponses(400, 401, 409, 429) },
      },
    },
    async (request) => {
      const actor = requireActor(request);
      smsOn();
      const { phone: given } = request.body;
      const phone = given === null ? null : toE164(given, region);
      if (given !== null && phone === null) {
        const message = region ? `not a phone number of ${region} or with its country code` : "not a phone number with its country code (+…)";
        throw problems.validation(`body.phone: ${message}`, [{ path: "body.phone", message }]);
      }
      return withTransaction(pool, async (client) => {
        const inUse = await store.lockPhoneInUse(client, actor.id);
        if (phone === null) {
          await store.dropVerification(client, actor.id);
          await store.setVerifiedPhone(client, actor.id, null);
        } else if (phone === inUse) {
          // The number in use, chosen again: any other number waiting is given up.
          await store.dropVerification(client, actor.id);
        } else {
          if (await store.isStopped(client, phone)) {
            throw problems.conflict("this number sent STOP: text START to the service's number, then set it again");
          }
          const recent = await recentOfKind(client, actor.id, PHONE_VERIFICATION_KIND);
          if (recent.count >= PHONE_CODES_PER_HOUR) {
            throw problems.rateLimited(recent.secondsUntilSlot, `at most ${PHONE_CODES_PER_HOUR} codes an hour; nothing was changed`);
          }
          await store.setVerifiedPhone(client, actor.id, null);
          await store.requestVerification(client, actor.id, phone, request.log);
        }
        return store.phoneState(client, actor.id);
      });
    },
  );

  app.post(
    "/v1/me/phone/verify",
    {
      config: { auth: "actor" },
      schema: {
        tags: ["notifications"],
        summary: "Verify my phone number with the code texted to it",
        description:
          "The right code makes the number the one texts go to (phoneStatus verified). A wrong one is 400 and uses one of the " +
          `${PHONE_CODE_TRIES} tries (triesLeft). No code waiting, one not sent yet, expired or out of tries: 409; ask for a new one ` +
          "with PUT /v1/me/phone.",
        body: VerifyPhoneBody,
        response: { 200: PhoneState, ...problemResponses(400, 401, 409) },
      },
    },
    async (request) => {
      const actor = requireActor(request);
      const outcome = await withTransaction(pool, async (client) => {
        const waiting = await store.lockVerification(client, actor.id);
        if (!waiting || waiting.codeHash === null || waiting.expired) {
          throw problems.conflict("no code is waiting: ask for a new one with PUT /v1/me/phone");
        }
        if (waiting.tries >= PHONE_CODE_TRIES) {
          throw problems.conflict(`the code was entered wrong ${PHONE_CODE_TRIES} times: ask for a new one with PUT /v1/me/phone`);
        }
        if (!timingSafeEqual(hashPhoneCode(waiting.id, request.body.code), waiting.codeHash)) {
          // The try counts, so this transaction commits; the refusal is thrown after it.
          return { triesLeft: PHONE_CODE_TRIES - (await store.countTry(client, waiting.id)) };
        }
        await store.dropVerification(client, actor.id);
        await store.setVerifiedPhone(client, actor.id, waiting.phone);
        return { state: await store.phoneState(client, actor.id) };
      });
      if ("state" in outcome) return outcome.state;
      const message = `the code is wrong; ${outcome.triesLeft} ${outcome.triesLeft === 1 ? "try" : "tries"} left`;
      throw new ProblemError(ProblemSlug.ValidationFailed, 400, `body.code: ${message}`, {
        errors: [{ path: "body.code", message }],
        triesLeft: outcome.triesLeft,
      });
    },
  );
};
