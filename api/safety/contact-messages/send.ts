import { contactMessageBucket, takeBucketToken } from "../../../lib/buckets.js";
import { clientAddressKey } from "../../../lib/client-address.js";
import type { Queryable } from "../../../lib/db.js";
import { EventType } from "../../../lib/events.js";
import type { LatLon } from "../../../lib/geo.js";
import { recordEvent, type EventLog } from "../../../lib/outbox.js";
import { problems } from "../../../lib/problems.js";
import { visibleTo } from "../access.js";
import { lockReport, openLostReportOf, type ReportKind } from "../reports/store.js";
import * as store from "./store.js";

/**
 * Contact messages one report (or one animal's owner) is told of one by one in
 * a rolling 24 hours, whoever sent them. Past it a message is still taken,
 * but held: the notifier's hourly digest lists it (contact_messages__digest),
 * so a flood delays the owner's reading and silences no sender.
 */
export const CONTACT_MESSAGES_NOTIFIED_PER_DAY = 20;

/**
 * Contact messages one sender (clientAddressKey: an address, or an IPv6 /64)
 * may send one target in a rolling 24 hours. Counted per sender, so no
 * sender's messages refuse another's; the contract keeps the old per-report
 * figure for it.
 */
export const CONTACT_MESSAGES_PER_SENDER_PER_DAY = 20;

interface ContactMessageBase {
  message: string;
  fromContact: string;
  /** The sender's client address (request.ip); the limits key it with clientAddressKey. */
  ip: string;
  /** Where the sender was, already coarsened to its grid-cell centre (the tag page's shared location). */
  location?: LatLon;
}

/** A message to the reporter of a lost or found report. */
export interface ReportContactMessage extends ContactMessageBase {
  kind: ReportKind;
  reportId: string;
  /** Extra ids for the recipient to follow (the tag page adds the animal). */
  animalId?: string;
}

/**
 * A message from an animal's tag page: to its open lost report when it has
 * one (so the report's cap and moderation apply), else to its owner.
 */
export interface AnimalContactMessage extends ContactMessageBase {
  kind: "animal";
  animalId: string;
}

export type ContactMessage = ReportContactMessage | AnimalContactMessage;

/**
 * Sends a contact message, in the caller's transaction: the per-address
 * bucket, the target (an open, unmoderated report, or an animal's owner), the
 * sender's daily cap on that target, the message row (held past the target's
 * daily volume) and its event. Every way to message someone goes through
 * here, so the caps hold whichever door the sender used. Returns the
 * message's id.
 */
export async function sendContactMessage(client: Queryable, contact: ContactMessage, log: EventLog): Promise<string> {
  const sender = clientAddressKey(contact.ip);
  const wait = await takeBucketToken(client, contactMessageBucket(sender));
  // The detail's wording is what this route's callers have always read.
  if (wait > 0) throw problems.rateLimited(wait, "you can send at most 5 relay messages per hour");
  return contact.kind === "animal" ? sendToAnimal(client, contact, sender, log) : sendToReport(client, contact, sender, log);
}

async function sendToReport(client: Queryable, contact: ReportContactMessage, sender: string, log: EventLog): Promise<string> {
  const report = visibleTo(await lockReport(client, contact.kind, contact.reportId), null, `${contact.kind} report`);
  if (report.status !== "open") throw problems.conflict(`this report is ${report.status}`);
  const target = contact.kind === "lost" ? { lostReportId: report.id } : { foundReportId: report.id };
  return deliver(client, contact, sender, { kind: contact.kind, id: report.id }, report.reporterId, { ...target, animalId: contact.animalId }, log);
}

async function sendToAnimal(client: Queryable, contact: AnimalContactMessage, sender: string, log: EventLog): Promise<string> {
  const animal = await store.lockAnimalOwner(client, contact.animalId);
  if (!animal) throw problems.notFound("animal");
  const lost = await openLostReportOf(client, animal.id);
  if (lost) return sendToReport(client, { ...contact, kind: "lost", reportId: lost.id, animalId: animal.id }, sender, log);
  return deliver(client, contact, sender, { kind: "animal", id: animal.id }, animal.ownerId, { animalId: animal.id }, log);
}

/**
 * The sender's cap on the target, the message row and its event. The target's
 * row is locked (lockReport, lockAnimalOwner), so concurrent messages count
 * its daily volume one after another.
 */
async function deliver(
  client: Queryable,
  contact: ContactMessageBase,
  sender: string,
  target: { kind: store.ContactTargetKind; id: string },
  recipientActorId: string,
  ids: { lostReportId?: string; foundReportId?: string; animalId?: string },
  log: EventLog,
): Promise<string> {
  const recent = await store.contactMessagesInLastDay(client, target.kind, target.id, sender);
  if (recent.fromSender >= CONTACT_MESSAGES_PER_SENDER_PER_DAY) {
    const who = target.kind === "animal" ? "this animal's owner" : "this report";
    throw problems.rateLimited(recent.secondsUntilSenderSlot, `you can send ${who} at most ${CONTACT_MESSAGES_PER_SENDER_PER_DAY} messages a day`);
  }
  const held = recent.total >= CONTACT_MESSAGES_NOTIFIED_PER_DAY;
  const messageId = await store.insertContactMessage(client, target.kind, target.id, {
    message: contact.message,
    fromContact: contact.fromContact,
    sender,
    held,
  });
  await recordEvent(
    client,
    EventType.ContactMessageReceived,
    {
      recipientActorId,
      ...Object.fromEntries(Object.entries(ids).filter(([, id]) => id !== undefined)),
      relayMessageId: messageId,
      message: contact.message,
      fromContact: contact.fromContact,
      ...(contact.location ? { location: contact.location } : {}),
      ...(held ? { held: true as const } : {}),
    },
    log,
  );
  return messageId;
}
