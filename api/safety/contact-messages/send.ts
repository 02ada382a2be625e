import { contactMessageBucket, takeBucketToken } from "../../../lib/buckets.js";
import type { Queryable } from "../../../lib/db.js";
import { EventType } from "../../../lib/events.js";
import type { LatLon } from "../../../lib/geo.js";
import { recordEvent, type EventLog } from "../../../lib/outbox.js";
import { problems } from "../../../lib/problems.js";
import { visibleTo } from "../access.js";
import { lockReport, openLostReportOf, type ReportKind } from "../reports/store.js";
import * as store from "./store.js";

/** Contact messages one report (or one animal's owner) may receive in a rolling 24 hours, whatever the senders' IPs. */
export const CONTACT_MESSAGES_PER_REPORT_PER_DAY = 20;

interface ContactMessageBase {
  message: string;
  fromContact: string;
  /** The sender's client address, for the per-IP limit. */
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
 * Sends a contact message, in the caller's transaction: the per-IP bucket, the
 * target (an open, unmoderated report, or an animal's owner), the daily cap,
 * the message row and its event. Every way to message someone goes through
 * here, so the caps hold whichever door the sender used. Returns the message's
 * id.
 */
export async function sendContactMessage(client: Queryable, contact: ContactMessage, log: EventLog): Promise<string> {
  const wait = await takeBucketToken(client, contactMessageBucket(contact.ip));
  // The detail's wording is what this route's callers have always read.
  if (wait > 0) throw problems.rateLimited(wait, "you can send at most 5 relay messages per hour");
  return contact.kind === "animal" ? sendToAnimal(client, contact, log) : sendToReport(client, contact, log);
}

async function sendToReport(client: Queryable, contact: ReportContactMessage, log: EventLog): Promise<string> {
  const report = visibleTo(await lockReport(client, contact.kind, contact.reportId), null, `${contact.kind} report`);
  if (report.status !== "open") throw problems.conflict(`this report is ${report.status}`);
  const target = contact.kind === "lost" ? { lostReportId: report.id } : { foundReportId: report.id };
  return deliver(client, contact, contact.kind, report.id, report.reporterId, { ...target, animalId: contact.animalId }, log);
}

async function sendToAnimal(client: Queryable, contact: AnimalContactMessage, log: EventLog): Promise<string> {
  const animal = await store.lockAnimalOwner(client, contact.animalId);
  if (!animal) throw problems.notFound("animal");
  const lost = await openLostReportOf(client, animal.id);
  if (lost) return sendToReport(client, { ...contact, kind: "lost", reportId: lost.id, animalId: animal.id }, log);
  return deliver(client, contact, "animal", animal.id, animal.ownerId, { animalId: animal.id }, log);
}

/** The daily cap of the target, the message row and its event. */
async function deliver(
  client: Queryable,
  contact: ContactMessageBase,
  kind: store.ContactTargetKind,
  targetId: string,
  recipientActorId: string,
  ids: { lostReportId?: string; foundReportId?: string; animalId?: string },
  log: EventLog,
): Promise<string> {
  const recent = await store.contactMessagesInLastDay(client, kind, targetId);
  if (recent.count >= CONTACT_MESSAGES_PER_REPORT_PER_DAY) {
    const who = kind === "animal" ? "this animal's owner" : "this report";
    throw problems.rateLimited(recent.secondsUntilSlot, `${who} has received the most messages allowed per day`);
  }
  const messageId = await store.insertContactMessage(client, kind, targetId, contact.message, contact.fromContact);
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
    },
    log,
  );
  return messageId;
}
