import { z } from "zod";
import { REPORT_OUTCOMES, SPECIES } from "./animals.js";
import { MATCH_KINDS, MATCH_REASONS } from "./matches.js";
import { CONTENT_STATES, MODERATION_TARGET_TYPES } from "./moderation.js";
import { NOTIFICATION_LANGUAGES } from "./notifications.js";
import { PARTNER_KINDS } from "./partners.js";
import { PHOTO_PARENT_TYPES } from "./photos.js";

/**
 * The event catalogue: every event type (its bus subject) with the zod schema
 * of its payload. The outbox writer (lib/outbox.ts) accepts only a payload
 * that fits its type, at compile time and at run time, and consumers parse
 * with the same schema (parseEventData). The relay publishes every type; the
 * notifier's subject filter follows its handler registry.
 */
export const EventType = {
  AnimalLostReported: "events.animal.lost_reported.v1",
  AnimalFoundReported: "events.animal.found_reported.v1",
  LostReportResolved: "events.safety.lost_report_resolved.v1",
  FoundReportResolved: "events.safety.found_report_resolved.v1",
  LostReportCancelled: "events.safety.lost_report_cancelled.v1",
  SightingReported: "events.safety.sighting_reported.v1",
  /** A contact message was sent. The contract fixes the type's name, which keeps the spec's older word, relay. */
  ContactMessageReceived: "events.safety.relay_message_received.v1",
  ContentModerated: "events.moderation.content_moderated.v1",
  AccountSuspended: "events.account.suspended.v1",
  MatchSuggested: "events.safety.match_suggested.v1",
  MatchConfirmed: "events.safety.match_confirmed.v1",
  TagScanned: "events.animal.tag_scanned.v1",
  ReportUpdated: "events.safety.report_updated.v1",
  ReportRenewed: "events.safety.report_renewed.v1",
  ReportExpiring: "events.safety.report_expiring.v1",
  ReportExpired: "events.safety.report_expired.v1",
  PhotoUploaded: "events.photo.uploaded.v1",
  PhotoReady: "events.photo.ready.v1",
  PhotoFailed: "events.photo.failed.v1",
  PhotoDeleted: "events.photo.deleted.v1",
  /** An address was set: its confirmation email is queued (the API writes it; no handler). */
  EmailConfirmationRequested: "events.account.email_confirmation_requested.v1",
  /** A phone number was set: its code text is queued (the API writes it; no handler). */
  PhoneVerificationRequested: "events.account.phone_verification_requested.v1",
  /** A text reached the service's number: its answers and forwards are queued (the API writes them; no handler). */
  SmsReceived: "events.sms.received.v1",
} as const;

export type EventType = (typeof EventType)[keyof typeof EventType];

/** Subjects of the JetStream stream. Every event type lives under it. */
export const STREAM_SUBJECTS = ["events.>"] as const;

/** Events carry only the public grid-cell centre (lib/geo.ts), read from the stored row. */
export const CoarsePoint = z.object({ lat: z.number().min(-90).max(90), lon: z.number().min(-180).max(180) });
const Instant = z.iso.datetime({ offset: true });
const ActorId = z.string().min(1).max(200);
const Species = z.enum(SPECIES);
/** Lost and found reports share their lifetime and edit events; the kind says which table. */
const ReportKind = z.enum(["lost", "found"]);

/** The two sides of a match and who reported each. */
const MatchPair = z.object({
  matchId: z.uuid(),
  lostReportId: z.uuid(),
  lostReporterId: ActorId,
  kind: z.enum(MATCH_KINDS),
  targetId: z.uuid(),
  targetReporterId: ActorId,
});

/** A shelter partner's public contact: public by design (contract, "Shelter partners"). */
const PartnerContact = z.object({
  name: z.string().min(1).max(200),
  kind: z.enum(PARTNER_KINDS),
  phone: z.string().max(200).optional(),
  email: z.string().max(320).optional(),
  address: z.string().max(500).optional(),
  website: z.string().max(2000).optional(),
  /** The end of the stray hold: until then the partner keeps the animal for its owner (contract part 4). */
  heldUntil: Instant.optional(),
});

/** A shelter near a lost report, as its owner's first-hour guide names it (public by design, as PartnerContact). */
const GuideShelter = PartnerContact.omit({ heldUntil: true }).extend({
  distanceKm: z.number().min(0),
  strayHoldDays: z.number().int().min(0),
});

/** A photo and what it belongs to (lib/photos.ts). */
const PhotoRef = z.object({
  photoId: z.uuid(),
  uploaderId: ActorId,
  parentType: z.enum(PHOTO_PARENT_TYPES),
  parentId: z.uuid(),
});

export const eventCatalogue = {
  [EventType.AnimalLostReported]: z.object({
    reportId: z.uuid(),
    reporterId: ActorId,
    species: Species,
    location: CoarsePoint,
    lastSeenAt: Instant,
    /** Made from a registered animal (POST /v1/animals/{id}/lost). */
    animalId: z.uuid().optional(),
    /** The language the filing request negotiated: the owner's first-hour guide is written in it. */
    lang: z.enum(NOTIFICATION_LANGUAGES).optional(),
    /** The report's share page and flyer (PUBLIC_BASE_URL), which the guide links. */
    shareUrl: z.url().max(2000).optional(),
    flyerUrl: z.url().max(2000).optional(),
    /** The partners the guide names: the first 5 within 25 km of the coarse point, nearest first, with their public contact. */
    shelters: z.array(GuideShelter).max(5).optional(),
  }),
  [EventType.AnimalFoundReported]: z.object({
    reportId: z.uuid(),
    reporterId: ActorId,
    species: Species,
    location: CoarsePoint,
    foundAt: Instant,
  }),
  [EventType.LostReportResolved]: z.object({
    lostReportId: z.uuid(),
    reporterId: ActorId,
    outcome: z.enum(REPORT_OUTCOMES),
    resolvedAt: Instant,
  }),
  [EventType.FoundReportResolved]: z.object({
    foundReportId: z.uuid(),
    reporterId: ActorId,
    outcome: z.enum(REPORT_OUTCOMES),
    resolvedAt: Instant,
  }),
  [EventType.LostReportCancelled]: z.object({
    reportId: z.uuid(),
    previousStatus: z.string(),
  }),
  [EventType.SightingReported]: z.object({
    sightingId: z.uuid(),
    lostReportId: z.uuid().nullable(),
    /** The lost report's reporter, who is told; null for an unlinked sighting. */
    recipientActorId: ActorId.nullable(),
    reporterId: ActorId,
    location: CoarsePoint,
    seenAt: Instant,
  }),
  [EventType.ContactMessageReceived]: z.object({
    recipientActorId: ActorId,
    /** The report the message is about: a lost report, or (part 2) a found report. */
    lostReportId: z.uuid().optional(),
    foundReportId: z.uuid().optional(),
    /** Sent from the animal's tag page. */
    animalId: z.uuid().optional(),
    /** The contact message's id; consumers and the notification's data read it by this name. */
    relayMessageId: z.uuid(),
    message: z.string().min(1).max(2000),
    fromContact: z.string().min(1).max(200),
    /** The grid-cell centre of where the sender was, when they shared it (tag page). */
    location: CoarsePoint.optional(),
    /** Past the target's daily volume: no notification of its own; the hourly digest lists it. */
    held: z.literal(true).optional(),
  }),
  [EventType.ContentModerated]: z.object({
    /** Only content with an author account is announced (a contact message has none). */
    authorId: ActorId,
    targetType: z.enum(MODERATION_TARGET_TYPES),
    targetId: z.uuid(),
    state: z.enum(CONTENT_STATES),
    moderationReportId: z.uuid(),
  }),
  [EventType.AccountSuspended]: z.object({
    userId: ActorId,
    reasonCode: z.string().min(1).max(100),
    expiresAt: Instant.nullable(),
  }),
  [EventType.MatchSuggested]: MatchPair.extend({
    score: z.number().min(0).max(1),
    /** What gave the score, strongest first; absent on events recorded before it was carried. */
    reasons: z.array(z.enum(MATCH_REASONS)).optional(),
    /** Metres between the two coarse points. */
    distanceM: z.number().int().min(0).optional(),
    /** Hours from the lost report's lastSeenAt to the found report's or sighting's time (0 when before it). */
    gapHours: z.number().min(0).optional(),
    /**
     * Whether the lost report's owner is told at once: the suggestion stands clearly ahead of
     * that report's other candidates, or the chips are equal. Otherwise it joins the owner's
     * daily "N possible matches". Absent on events recorded before it was carried: those alert.
     */
    ownerAlert: z.boolean().optional(),
    /** With the microchip reason: whether the chips are equal or one keystroke apart (the owner is told which). */
    microchip: z.enum(["equal", "near"]).optional(),
    /** A found report in a shelter partner's custody: that partner's public contact (lib/partners.ts), told to the owner. */
    partner: PartnerContact.optional(),
  }),
  [EventType.MatchConfirmed]: MatchPair.extend({
    /** The lost report's share page, given to a shelter partner holding the animal; absent on events recorded before it was carried. */
    lostReportShareUrl: z.url().max(2000).optional(),
  }),
  [EventType.TagScanned]: z.object({
    animalId: z.uuid(),
    /** The animal's owner, who is told (at most once per tag per 10 minutes). */
    recipientActorId: ActorId,
    animalName: z.string().min(1).max(100),
    scanId: z.uuid(),
    scannedAt: Instant,
    /** Only when the finder shared their location, and only its grid-cell centre. */
    location: CoarsePoint.nullable(),
  }),
  [EventType.ReportUpdated]: z.object({
    reportKind: ReportKind,
    reportId: z.uuid(),
    reporterId: ActorId,
    /** The body fields the PATCH set (`animal.breed`, `location`, …). */
    changed: z.array(z.string().min(1).max(40)).min(1),
    species: Species,
    location: CoarsePoint,
  }),
  [EventType.ReportRenewed]: z.object({
    reportKind: ReportKind,
    reportId: z.uuid(),
    reporterId: ActorId,
    expiresAt: Instant,
  }),
  [EventType.ReportExpiring]: z.object({
    reportKind: ReportKind,
    reportId: z.uuid(),
    reporterId: ActorId,
    species: Species,
    animalName: z.string().nullable(),
    expiresAt: Instant,
  }),
  [EventType.ReportExpired]: z.object({
    reportKind: ReportKind,
    reportId: z.uuid(),
    reporterId: ActorId,
    expiredAt: Instant,
  }),
  [EventType.PhotoUploaded]: PhotoRef,
  /** The variants exist: the photo is listed and, for a report, matching re-runs with its hash. */
  [EventType.PhotoReady]: PhotoRef.extend({ width: z.number().int().positive(), height: z.number().int().positive() }),
  /** Processing gave up; `reason` is what the owner and admins see. */
  [EventType.PhotoFailed]: PhotoRef.extend({ reason: z.string().min(1).max(500) }),
  [EventType.PhotoDeleted]: PhotoRef.extend({ deletedBy: ActorId }),
  /** Ids only: neither the address nor the link's token, which is made when the email is sent. */
  [EventType.EmailConfirmationRequested]: z.object({
    actorId: ActorId,
    emailConfirmationId: z.uuid(),
    notificationId: z.uuid(),
  }),
  /** Ids only: neither the number nor the code, which is made when the text is sent. */
  [EventType.PhoneVerificationRequested]: z.object({
    actorId: ActorId,
    phoneVerificationId: z.uuid(),
    notificationId: z.uuid(),
  }),
  /** Ids only: neither number nor text. */
  [EventType.SmsReceived]: z.object({
    smsInboundId: z.uuid(),
  }),
} as const satisfies Record<EventType, z.ZodObject>;

export type EventData<T extends EventType> = z.output<(typeof eventCatalogue)[T]>;

/** The body of every bus message (contract: `{id, type, occurredAt, data}`). */
export interface EventEnvelope<T extends EventType = EventType> {
  id: string;
  type: T;
  occurredAt: string;
  data: EventData<T>;
}

export function isEventType(type: string): type is EventType {
  return Object.hasOwn(eventCatalogue, type);
}

/** An event's data does not fit its type's schema. */
export class InvalidEventError extends Error {
  override name = "InvalidEventError";
}

/** Parses an event's data with its type's schema; throws InvalidEventError naming the first bad field. */
export function parseEventData<T extends EventType>(type: T, data: unknown, eventId = "(new)"): EventData<T> {
  const parsed = eventCatalogue[type].safeParse(data);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new InvalidEventError(`${type} ${eventId}: data.${issue.path.join(".")}: ${issue.message}`);
  }
  return parsed.data as EventData<T>;
}
