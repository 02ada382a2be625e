import type { Queryable } from "../../lib/db.js";
import { EventType } from "../../lib/events.js";
import { CONTACT_MESSAGE_KIND, SMS_REPLY_KIND } from "../../lib/notifications.js";
import { recordEvent, type EventLog } from "../../lib/outbox.js";
import { CONVERSATION_DAYS, keywordOf, SERVICE_NAME, SMS_REPLIES, type Keyword } from "../../lib/sms/keywords.js";
import { phoneRecipient, stopNumber, upsertNumber, type SmsNumber } from "../../lib/sms/store.js";
import * as store from "./store.js";

/** What a conversation is about, as ids to follow: the links texts end with come from them. */
function aboutIds(c: store.Conversation): Record<string, string> {
  const ids: Record<string, string | null> = { lostReportId: c.lostReportId, foundReportId: c.foundReportId, animalId: c.animalId };
  return { smsConversationId: c.id, ...Object.fromEntries(Object.entries(ids).filter((e): e is [string, string] => e[1] !== null)) };
}

const what = (c: store.Conversation) => (c.lostReportId ? "the lost animal" : c.foundReportId ? "the found animal" : "the animal");

interface Plan {
  outcome: store.InboundOutcome;
  conversation: store.Conversation | null;
  /** STOP: the number is stopped in this transaction. START: it resumes. */
  keyword: Keyword | null;
}

async function planFor(client: Queryable, number: SmsNumber, text: string): Promise<Plan> {
  const keyword = keywordOf(text);
  if (keyword) return { outcome: keyword, conversation: null, keyword };
  const conversation = await store.latestConversation(client, number.phone, CONVERSATION_DAYS);
  if (!conversation) return { outcome: "no_conversation", conversation, keyword };
  if (!conversation.fromOwner) return { outcome: "to_owner", conversation, keyword };
  return { outcome: conversation.finderNumberId ? "to_finder" : "no_finder_phone", conversation, keyword };
}

/** The service's answer to the number that wrote. */
const reply = (number: SmsNumber, key: keyof typeof SMS_REPLIES, keyword?: Keyword): store.ServiceNotification => ({
  recipientActorId: phoneRecipient(number.id),
  channel: "sms",
  kind: SMS_REPLY_KIND,
  sourceKey: `${SMS_REPLY_KIND}:${number.id}`,
  subject: `${SERVICE_NAME}: ${key}`,
  body: SMS_REPLIES[key],
  data: keyword ? { keyword } : {},
});

/**
 * A text that reached the service's number (POST /v1/sms/inbound), in one
 * transaction: the received row (once per MessageSid), STOP or START on the
 * number, and the texts it causes as notifications with their delivery jobs,
 * under one events.sms.received.v1. Nothing is sent here: every answer and
 * forward goes out through a delivery job, after the commit.
 *
 * - STOP and its synonyms stop the number and are confirmed once; START
 *   resumes it; HELP gets the HELP text.
 * - Any other text belongs to the number's most recent conversation within 7
 *   days: the owner's goes to the finder's number (or, with none, the owner
 *   is told it could not be passed on), the finder's to the owner, in the app
 *   and by text. With no conversation it gets the HELP text.
 * - A stopped number gets nothing, not even HELP, but STOP's confirmation.
 *
 * Returns false for a text received before.
 */
export async function receiveText(client: Queryable, text: { messageSid: string; from: string; body: string }, log: EventLog): Promise<boolean> {
  const number = await upsertNumber(client, text.from);
  const plan = await planFor(client, number, text.body);
  const inboundId = await store.recordInbound(client, text.messageSid, number.id, plan.outcome, plan.conversation?.id ?? null);
  if (!inboundId) return false;
  await store.markWrote(client, number.id);

  const rows: store.ServiceNotification[] = [];
  const words = text.body.trim();
  const c = plan.conversation;
  switch (plan.outcome) {
    case "stop":
      // Confirmed once: a STOP from a number already stopped gets no second text.
      if (await stopNumber(client, number.phone)) rows.push(reply(number, "stop", "stop"));
      break;
    case "start":
      await store.restartNumber(client, number.id);
      rows.push(reply(number, "start", "start"));
      break;
    case "help":
    case "no_conversation":
      if (!number.stopped) rows.push(reply(number, "help", plan.keyword ?? undefined));
      break;
    case "no_finder_phone":
      await store.touchConversation(client, c!.id);
      if (!number.stopped) rows.push({ ...reply(number, "noFinderPhone"), data: aboutIds(c!) });
      break;
    case "to_finder":
      await store.touchConversation(client, c!.id);
      rows.push({
        recipientActorId: phoneRecipient(c!.finderNumberId!),
        channel: "sms",
        kind: CONTACT_MESSAGE_KIND,
        sourceKey: `sms_conversation:${c!.id}`,
        subject: "A reply to your message",
        body: `${SERVICE_NAME}: a reply to your message about ${what(c!)}: "${words}" Reply to this text to answer.`,
        data: aboutIds(c!),
      });
      break;
    case "to_owner": {
      await store.touchConversation(client, c!.id);
      const forward: Omit<store.ServiceNotification, "channel"> = {
        recipientActorId: c!.ownerActorId,
        kind: CONTACT_MESSAGE_KIND,
        sourceKey: `sms_conversation:${c!.id}`,
        subject: `A reply by text about ${what(c!)}`,
        body: `${SERVICE_NAME}: a reply about ${what(c!)}: "${words}" Reply to this text to answer; your number stays hidden.`,
        data: aboutIds(c!),
      };
      rows.push({ ...forward, channel: "in_app" }, { ...forward, channel: "sms" });
      break;
    }
  }
  const event = await recordEvent(client, EventType.SmsReceived, { smsInboundId: inboundId }, log);
  await store.insertServiceNotifications(client, { ...event, type: EventType.SmsReceived }, rows);
  return true;
}
