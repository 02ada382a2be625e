import type { Pool, Queryable } from "../../../lib/db.js";
import { Counter, Gauge, registerSourcedGauge, type Registry } from "../../../lib/metrics.js";
import { shortPath } from "../../../lib/report-lifecycle.js";
import {
  CONTACT_MESSAGE_KIND,
  NO_PHONE,
  PHONE_VERIFICATION_GONE,
  PHONE_VERIFICATION_KIND,
  PROVIDER_REJECTED,
  SMS_BUDGET_EXHAUSTED,
  SMS_REPLY_KIND,
  SMS_STOPPED,
} from "../../../lib/notifications.js";
import { hashPhoneCode, newPhoneCode, PHONE_CODE_TTL_MINUTES } from "../../../lib/sms/codes.js";
import { HOW_TO_STOP, SERVICE_NAME, SILENT_FINDER_TEXTS_PER_DAY } from "../../../lib/sms/keywords.js";
import { phoneInText, type Region } from "../../../lib/sms/phone.js";
import { fitSms, smsSize } from "../../../lib/sms/segments.js";
import { OPTED_OUT_CODE, SMS_STATUSES, type SmsStatus } from "../../../lib/sms/status.js";
import { numberById, numberIdOf, recordSmsSend, stopNumber, upsertNumber, type SmsNumber } from "../../../lib/sms/store.js";
import type { DeliverableNotification } from "../store.js";
import { pushUrl, reportOf, retryAfterMs } from "./push.js";
import * as store from "./sms-store.js";
import { DeliveryError, type Deliverer } from "./types.js";

/**
 * The sms channel (contract part 4, "SMS"): a text through a provider that
 * speaks the Twilio-compatible REST API, `POST {base}/2010-04-01/Accounts/{sid}/Messages.json`,
 * form-encoded To, From, Body and StatusCallback with basic auth, answered 201
 * `{sid, status}`. The call has a total deadline of 10 s, its answer read up to
 * 4 KB.
 *
 * Who gets it: an actor's verified number (notification_preference.phone), or
 * for a code the number it verifies, or for a recipient `phone:<id>` (a
 * finder, or whoever a keyword's answer goes to) that sms_number row. Nothing
 * goes to a number that sent STOP, but the one reply confirming it.
 *
 * Outcomes: 2xx took it; 429 and 5xx (and a timeout or network error) retry
 * like any delivery; 400 with code 21610 (opted out) dead-letters at once and
 * marks the number stopped; 401 and 403 (our credentials) retry, so a fixed
 * token needs no replay; any other answer is the provider refusing this text.
 * Before sending, the text is reserved against its number's daily cap and the
 * service's daily segments (notifier/deliverers/sms-store.ts reserveText);
 * past either it dead-letters with "sms budget exhausted", and the in-app
 * notification stands.
 */

/** The contract's total deadline of a send, response included. */
export const SMS_SEND_TIMEOUT_MS = 10_000;
/** The most of a provider's answer that is read. */
export const SMS_ANSWER_MAX_BYTES = 4 * 1024;

export interface SmsDelivererOptions {
  pool: Pool;
  apiBaseUrl: string;
  accountSid: string;
  authToken: string;
  /** The service's number, E.164. */
  from: string;
  /** The API's public base: the StatusCallback and the links texts end with. */
  publicBaseUrl: string;
  defaultRegion?: Region;
  dailyLimitPerRecipient: number;
  dailySegments: number;
  /** The notifier's registry: sms_segments_total, sms_segments_today and sms_segments_daily_budget. */
  registry?: Registry;
  /** Tests shorten the deadline; the contract's is SMS_SEND_TIMEOUT_MS. */
  timeoutMs?: number;
}

interface Target {
  number: SmsNumber;
  /** A `phone:` recipient, not an actor's own verified number. */
  byNumber: boolean;
  /** A code text's code, made for this delivery. */
  code?: string;
}

/** The UTC day a text counts on, the same for its reservation and any release. */
const utcDay = (at = new Date()) => at.toISOString().slice(0, 10);

interface Answer {
  status: number;
  body: string;
  retryAfter: string | null;
}

/** Reads at most `max` bytes of a body, then stops reading it. */
async function readCapped(body: ReadableStream<Uint8Array> | null, max: number): Promise<string> {
  if (!body) return "";
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (size < max) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.byteLength;
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
  return Buffer.concat(chunks).subarray(0, max).toString("utf8");
}

/** One POST within `timeoutMs`, its answer read up to SMS_ANSWER_MAX_BYTES; no redirect is followed. */
async function post(url: string, authorization: string, form: URLSearchParams, timeoutMs: number): Promise<Answer> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
  try {
    const response = await fetch(url, {
      method: "POST",
      headers: { authorization, "content-type": "application/x-www-form-urlencoded", accept: "application/json" },
      body: form.toString(),
      redirect: "manual",
      signal: controller.signal,
    });
    const body = await readCapped(response.body, SMS_ANSWER_MAX_BYTES);
    return { status: response.status, body, retryAfter: response.headers.get("retry-after") };
  } catch (err) {
    const reason = controller.signal.aborted ? (controller.signal.reason as Error) : (err as Error);
    throw new DeliveryError(`sms provider unreachable: ${reason.message}`);
  } finally {
    clearTimeout(timer);
  }
}

/** The answer's JSON object, or {} when it is none (an HTML error page, or a body cut at 4 KB). */
function answerJson(body: string): Record<string, unknown> {
  try {
    const parsed: unknown = JSON.parse(body);
    return typeof parsed === "object" && parsed !== null ? (parsed as Record<string, unknown>) : {};
  } catch {
    // A success cut at 4 KB still names its sid early on.
    const sid = /"sid"\s*:\s*"([A-Za-z0-9]+)"/.exec(body)?.[1];
    return sid ? { sid } : {};
  }
}

/** The text before its link: what the notification says, in the words a text needs. */
function textOf(notification: DeliverableNotification, target: Target, message: store.ContactMessageForText | null): string {
  if (target.code !== undefined) {
    return `${SERVICE_NAME} code: ${target.code}. It works for ${PHONE_CODE_TTL_MINUTES} minutes. If you did not ask for it, ignore this text.`;
  }
  // The service's answers and the forwarded replies of a conversation are written as texts already (api/sms).
  if (notification.kind === SMS_REPLY_KIND || notification.data.smsConversationId !== undefined) return notification.body;
  // A contact message: its words, never the sender's contact; the reply goes back through the service.
  if (message) {
    return `${SERVICE_NAME}: ${notification.subject}. Reply to this text to answer; your number stays hidden. "${message.message.trim()}"`;
  }
  return `${SERVICE_NAME}: ${notification.subject}. ${notification.body}`;
}

export function createSmsDeliverer(options: SmsDelivererOptions): Deliverer {
  const { pool, accountSid, from, defaultRegion, timeoutMs = SMS_SEND_TIMEOUT_MS } = options;
  const publicBaseUrl = options.publicBaseUrl.replace(/\/+$/, "");
  const messagesUrl = `${options.apiBaseUrl.replace(/\/+$/, "")}/2010-04-01/Accounts/${encodeURIComponent(accountSid)}/Messages.json`;
  const authorization = `Basic ${Buffer.from(`${accountSid}:${options.authToken}`).toString("base64")}`;
  const statusCallback = `${publicBaseUrl}/v1/sms/status`;
  const segmentsTotal = options.registry
    ? new Counter({ name: "sms_segments_total", help: "SMS segments the provider took, by notification kind", labelNames: ["kind"], registers: [options.registry] })
    : undefined;
  if (options.registry) {
    new Gauge({ name: "sms_segments_daily_budget", help: "SMS_DAILY_SEGMENTS: the segments the service may send in a UTC day", registers: [options.registry] }).set(
      options.dailySegments,
    );
    registerSourcedGauge(options.registry, {
      name: "sms_segments_today",
      help: "SMS segments the whole service has sent this UTC day (every notifier's texts)",
      source: "postgres",
      read: async () => [{ value: await store.segmentsOn(pool, utcDay()) }],
    });
  }

  /** Where the notification goes; throws DeliveryError (permanent) when nowhere. */
  async function targetOf(client: Queryable, notification: DeliverableNotification): Promise<Target> {
    const numberId = numberIdOf(notification.recipientActorId);
    if (numberId) {
      const number = await numberById(client, numberId);
      if (!number) throw new DeliveryError(NO_PHONE);
      return { number, byNumber: true };
    }
    if (notification.kind === PHONE_VERIFICATION_KIND) {
      const id = notification.data.phoneVerificationId ?? "";
      const code = newPhoneCode();
      const phone = /^[0-9a-f-]{36}$/i.test(id)
        ? await store.armPhoneCode(client, id, notification.recipientActorId, hashPhoneCode(id, code), PHONE_CODE_TTL_MINUTES)
        : null;
      if (!phone) throw new DeliveryError(PHONE_VERIFICATION_GONE);
      return { number: await upsertNumber(client, phone), byNumber: false, code };
    }
    const phone = await store.verifiedPhone(client, notification.recipientActorId);
    if (!phone) throw new DeliveryError(NO_PHONE);
    return { number: await upsertNumber(client, phone), byNumber: false };
  }

  /** The contact message a relay_message notification brings the owner, when it is one (not a digest or a forwarded reply). */
  async function contactMessageOf(client: Queryable, notification: DeliverableNotification) {
    const id = notification.data.relayMessageId;
    if (notification.kind !== CONTACT_MESSAGE_KIND || !id || notification.data.smsConversationId !== undefined) return null;
    return store.contactMessage(client, id);
  }

  return {
    async deliver(notification, client = pool) {
      const target = await targetOf(client, notification);
      // STOP's own confirmation is the one text a stopped number gets.
      const confirmsStop = notification.kind === SMS_REPLY_KIND && notification.data.keyword === "stop";
      if (target.number.stopped && !confirmsStop) throw new DeliveryError(SMS_STOPPED);
      const message = await contactMessageOf(client, notification);
      // A finder's number that never wrote back: at most 3 texts a day, and the first says how to stop.
      const silent = target.byNumber && !target.number.wrote;
      const first = silent && !target.number.texted && (await store.claimFirstText(client, target.number.id));
      try {
        await send(client, notification, target, message, { silent, first });
      } catch (err) {
        if (first) await store.unclaimFirstText(client, target.number.id);
        throw err;
      }
    },
  };

  /** Reserves the text against the day's budgets, sends it and records what the provider answered. */
  async function send(
    client: Queryable,
    notification: DeliverableNotification,
    target: Target,
    message: store.ContactMessageForText | null,
    { silent, first }: { silent: boolean; first: boolean },
  ): Promise<void> {
    const text = textOf(notification, target, message);
    const body = fitSms(first ? `${HOW_TO_STOP} ${text}` : text, await linkOf(client, notification));
    const { segments } = smsSize(body);

    const day = utcDay();
    const recipientTexts = silent ? Math.min(SILENT_FINDER_TEXTS_PER_DAY, options.dailyLimitPerRecipient) : options.dailyLimitPerRecipient;
    const reserved = await store.reserveText(client, day, target.number.id, segments, { recipientTexts, serviceSegments: options.dailySegments });
    if (!reserved.ok) {
      await store.releaseText(client, day, target.number.id, segments, reserved.took);
      throw new DeliveryError(
        reserved.full === "recipient"
          ? `${SMS_BUDGET_EXHAUSTED}: ${recipientTexts} texts today to this number`
          : `${SMS_BUDGET_EXHAUSTED}: the service's ${options.dailySegments} segments today`,
      );
    }

    const form = new URLSearchParams({ To: target.number.phone, From: from, Body: body, StatusCallback: statusCallback });
    let answer: Answer;
    try {
      answer = await post(messagesUrl, authorization, form, timeoutMs);
    } catch (err) {
      await store.releaseText(client, day, target.number.id, segments, reserved.took);
      throw err;
    }
    const json = answerJson(answer.body);
    if (answer.status >= 200 && answer.status < 300 && typeof json.sid === "string") {
      const status = SMS_STATUSES.includes(json.status as SmsStatus) ? (json.status as SmsStatus) : "queued";
      await recordSmsSend(client, { sid: json.sid, status, notificationId: notification.id, kind: notification.kind, segments });
      if (message) {
        await store.startConversation(client, {
          relayMessageId: notification.data.relayMessageId!,
          ownerActorId: notification.recipientActorId,
          ownerPhone: target.number.phone,
          finderNumberId: await finderNumberId(client, message.fromContact),
          lostReportId: message.lostReportId,
          foundReportId: message.foundReportId,
          animalId: message.animalId,
        });
      }
      segmentsTotal?.inc({ kind: notification.kind }, segments);
      return;
    }

    await store.releaseText(client, day, target.number.id, segments, reserved.took);
    const code = typeof json.code === "number" ? json.code : Number(json.code);
    if (answer.status === 400 && code === OPTED_OUT_CODE) {
      await stopNumber(client, target.number.phone);
      throw new DeliveryError(`${SMS_STOPPED}: the provider reports the number opted out (${OPTED_OUT_CODE})`);
    }
    if (answer.status >= 200 && answer.status < 300) throw new DeliveryError(`sms provider ${answer.status} without a sid`);
    if (answer.status === 429 || answer.status >= 500 || answer.status === 401 || answer.status === 403) {
      const wait = retryAfterMs(answer.retryAfter);
      throw new DeliveryError(`sms provider ${answer.status}`, wait !== undefined ? { retryAfterMs: wait } : {});
    }
    throw new DeliveryError(`${PROVIDER_REJECTED} the text: ${answer.status}${Number.isFinite(code) ? ` code ${code}` : ""}`);
  }

  /**
   * The link a text ends with: a report's short link (/s/{code}, 301 to its
   * page), 36 characters shorter than the page's own address, which leaves
   * them to the words of a two-segment text; else the push's link.
   */
  async function linkOf(client: Queryable, notification: DeliverableNotification): Promise<string> {
    const report = reportOf(notification.data);
    const code = report && (await store.reportShortCode(client, report.kind, report.id));
    return code ? `${publicBaseUrl}${shortPath(code)}` : pushUrl(notification, publicBaseUrl);
  }

  /** The finder's number, when their fromContact reads as one: the owner's replies go there. */
  async function finderNumberId(client: Queryable, fromContact: string): Promise<string | null> {
    const phone = phoneInText(fromContact, defaultRegion);
    return phone ? (await upsertNumber(client, phone)).id : null;
  }
}
