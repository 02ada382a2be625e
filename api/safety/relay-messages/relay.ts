import { relayMessageBucket, takeBucketToken } from "../../../lib/buckets.js";
import type { Queryable } from "../../../lib/db.js";
import { EventType } from "../../../lib/events.js";
import type { LatLon } from "../../../lib/geo.js";
import { recordEvent, type EventLog } from "../../../lib/outbox.js";
import { problems } from "../../../lib/problems.js";
import { visibleTo } from "../access.js";
import { lockReport, openLostReportOf, type ReportKind } from "../reports/store.js";
import * as store from "./store.js";

/** Relay messages one report (or one animal's owner) may receive in a rolling 24 hours, whatever the senders' IPs. */
export const RELAY_MESSAGES_PER_REPORT_PER_DAY = 20;

interface RelayBase {
  message: string;
  fromContact: string;
  /** The sender's client address, for the per-IP limit. */
  ip: string;
  /** Where the sender was, already coarsened to its grid-cell centre (the tag page's shared location). */
  location?: LatLon;
}

/** A message to the reporter of a lost or found report. */
export interface ReportRelay extends RelayBase {
  kind: ReportKind;
  reportId: string;
  /** Extra ids for the recipient to follow (the tag page adds the animal). */
  animalId?: string;
}

/**
 * A message from an animal's tag page: to its open lost report when it has
 * one (so the report's cap and moderation apply), else to its owner.
 */
export interface AnimalRelay extends RelayBase {
  kind: "animal";
  animalId: string;
}

export type RelayMessage = ReportRelay | AnimalRelay;

/**
 * The contact relay, in the caller's transaction: the per-IP bucket, the
 * target (an open, unmoderated report, or an animal's owner), the daily cap,
 * the message row and its event. Every way to message someone goes through
 * here, so the caps hold whichever door the sender used. Returns the relay
 * message id.
 */
export async function relayToReporter(client: Queryable, relay: RelayMessage, log: EventLog): Promise<string> {
  const wait = await takeBucketToken(client, relayMessageBucket(relay.ip));
  if (wait > 0) throw problems.rateLimited(wait, "you can send at most 5 relay messages per hour");
  return relay.kind === "animal" ? relayToAnimal(client, relay, log) : relayToReport(client, relay, log);
}

async function relayToReport(client: Queryable, relay: ReportRelay, log: EventLog): Promise<string> {
  const report = visibleTo(await lockReport(client, relay.kind, relay.reportId), null, `${relay.kind} report`);
  if (report.status !== "open") throw problems.conflict(`this report is ${report.status}`);
  const target = relay.kind === "lost" ? { lostReportId: report.id } : { foundReportId: report.id };
  return deliver(client, relay, relay.kind, report.id, report.reporterId, { ...target, animalId: relay.animalId }, log);
}

async function relayToAnimal(client: Queryable, relay: AnimalRelay, log: EventLog): Promise<string> {
  const animal = await store.lockAnimalOwner(client, relay.animalId);
  if (!animal) throw problems.notFound("animal");
  const lost = await openLostReportOf(client, animal.id);
  if (lost) return relayToReport(client, { ...relay, kind: "lost", reportId: lost.id, animalId: animal.id }, log);
  return deliver(client, relay, "animal", animal.id, animal.ownerId, { animalId: animal.id }, log);
}

/** The daily cap of the target, the message row and its event. */
async function deliver(
  client: Queryable,
  relay: RelayBase,
  kind: store.RelayTargetKind,
  targetId: string,
  recipientActorId: string,
  ids: { lostReportId?: string; foundReportId?: string; animalId?: string },
  log: EventLog,
): Promise<string> {
  const recent = await store.relayMessagesInLastDay(client, kind, targetId);
  if (recent.count >= RELAY_MESSAGES_PER_REPORT_PER_DAY) {
    const who = kind === "animal" ? "this animal's owner" : "this report";
    throw problems.rateLimited(recent.secondsUntilSlot, `${who} has received the most messages allowed per day`);
  }
  const relayMessageId = await store.insertRelayMessage(client, kind, targetId, relay.message, relay.fromContact);
  await recordEvent(
    client,
    EventType.RelayMessageReceived,
    {
      recipientActorId,
      ...Object.fromEntries(Object.entries(ids).filter(([, id]) => id !== undefined)),
      relayMessageId,
      message: relay.message,
      fromContact: relay.fromContact,
      ...(relay.location ? { location: relay.location } : {}),
    },
    log,
  );
  return relayMessageId;
}
