import { EventType, parseEventData, type EventEnvelope } from "../lib/events.js";
import { describeMatch, matchesPath } from "../lib/matches.js";
import { CONTACT_MESSAGE_TARGET_TYPE } from "../lib/moderation.js";
import { CONTACT_MESSAGE_KIND, type NotificationKind } from "../lib/notifications.js";
import type { FoundReportPartner } from "../lib/partners.js";
import type { NotificationData, NotificationDraft, NotificationGroup } from "../lib/notification-rows.js";
import { holdEndText } from "../lib/hold-text.js";
import { reportGuideDrafts } from "./report-guide/guide.js";

export type EventHandler<T extends EventType> = (event: EventEnvelope<T>) => NotificationDraft[];
export type HandlerRegistry = { [T in EventType]?: EventHandler<T> };

/** Drops unset ids, so `data` holds only ids to follow. */
const ids = (fields: Record<string, string | null | undefined>): Record<string, string> =>
  Object.fromEntries(Object.entries(fields).filter((entry): entry is [string, string] => typeof entry[1] === "string"));

/** A grid-cell centre in words: the same ~1 km precision every public read has. */
const near = (point: { lat: number; lon: number }) => `near ${point.lat.toFixed(3)}, ${point.lon.toFixed(3)} (within about 1 km)`;

/** A held message (past its target's daily volume) tells no one now: the hourly digest lists it (jobs/scheduled/contact-messages-digest.ts). */
const contactMessageReceived: EventHandler<typeof EventType.ContactMessageReceived> = ({ data }) =>
  data.held
    ? []
    : [
        {
          recipientActorId: data.recipientActorId,
          kind: CONTACT_MESSAGE_KIND,
          sourceKey: `${CONTACT_MESSAGE_KIND}:${data.relayMessageId}`,
          subject: data.foundReportId
            ? "Someone sent a message about the animal you found"
            : data.lostReportId
              ? "Someone sent a message about your lost animal"
              : "Someone sent a message from your animal's tag",
          // fromContact is whatever the sender typed; the text says so, because we never verified it.
          body:
            `${data.message}\n\nReply to (given by the sender, not verified): ${data.fromContact}` +
            (data.location ? `\nThe sender shared their location: ${near(data.location)}.` : ""),
          // The contact again as data, so a client offers a way to answer without reading it out of the text.
          data: ids({
            lostReportId: data.lostReportId,
            foundReportId: data.foundReportId,
            animalId: data.animalId,
            relayMessageId: data.relayMessageId,
            fromContact: data.fromContact,
          }),
        },
      ];

/** An owner hears of a report's sightings at most once per this many seconds; the later ones are counted into that notification. */
export const SIGHTING_GROUP_WINDOW_SECONDS = 600;

/**
 * A sighting on my lost report; an unlinked sighting, or one the reporter made
 * on their own report, tells no one. Grouped per report: the sightings within
 * 10 minutes of the first are counted into its notification, in the app and in
 * its email while unsent, and send nothing new.
 */
const sightingReported: EventHandler<typeof EventType.SightingReported> = ({ data }) => {
  if (!data.recipientActorId || !data.lostReportId || data.recipientActorId === data.reporterId) return [];
  const seen = `seen at ${data.seenAt} ${near(data.location)}`;
  const about = ids({ lostReportId: data.lostReportId, sightingId: data.sightingId });
  const minutes = SIGHTING_GROUP_WINDOW_SECONDS / 60;
  return [
    {
      recipientActorId: data.recipientActorId,
      kind: "sighting",
      sourceKey: `sighting:${data.sightingId}`,
      subject: "Someone saw an animal that may be yours",
      body: `A sighting was reported on your lost report, ${seen}. Open the report to see all sightings.`,
      data: about,
      group: {
        key: `sighting:${data.lostReportId}`,
        windowSeconds: SIGHTING_GROUP_WINDOW_SECONDS,
        summary: (count) => ({
          subject: `${count} sightings of an animal that may be yours`,
          body:
            `${count} sightings were reported on your lost report within ${minutes} minutes; the latest was ${seen}. ` +
            "Open the report to see all sightings.",
          data: { ...about, sightingCount: String(count) },
        }),
      },
    },
  ];
};

const contentNames: Record<string, string> = {
  lost_report: "lost report",
  found_report: "found report",
  sighting: "sighting",
  [CONTACT_MESSAGE_TARGET_TYPE]: "message",
  photo: "photo",
};

const contentModerated: EventHandler<typeof EventType.ContentModerated> = ({ data }) => [
  {
    recipientActorId: data.authorId,
    kind: "content_moderated",
    sourceKey: `moderation:${data.targetType}:${data.targetId}`,
    subject: `Your ${contentNames[data.targetType] ?? "content"} was ${data.state} by a moderator`,
    body:
      data.state === "quarantined"
        ? "A moderator has hidden it from public view while it is reviewed. You can still see it yourself."
        : "A moderator has removed it from public view because it broke the rules. You can still see it yourself.",
    data: ids({
      targetType: data.targetType,
      targetId: data.targetId,
      ...(data.targetType === "lost_report" ? { lostReportId: data.targetId } : {}),
      ...(data.targetType === "found_report" ? { foundReportId: data.targetId } : {}),
      ...(data.targetType === "sighting" ? { sightingId: data.targetId } : {}),
      ...(data.targetType === "photo" ? { photoId: data.targetId } : {}),
    }),
  },
];

/** A view of the animal's tag page (the throttle of one per tag per 10 minutes is the API's). */
const tagScanned: EventHandler<typeof EventType.TagScanned> = ({ data }) => [
  {
    recipientActorId: data.recipientActorId,
    kind: "tag_scanned",
    sourceKey: `tag_scanned:${data.scanId}`,
    subject: `${data.animalName}'s tag was scanned`,
    body:
      `Someone opened the page of ${data.animalName}'s tag at ${data.scannedAt}` +
      (data.location ? `, ${near(data.location)}.` : ".") +
      " If they send a message, you will get it here. If your animal is missing, report it lost so the page says so.",
    data: ids({ animalId: data.animalId, scanId: data.scanId }),
  },
];

const reportNames = { lost: "lost report", found: "found report" } as const;

/** The lifetime job's reminder, a few days before an open report closes on its own. */
const reportExpiring: EventHandler<typeof EventType.ReportExpiring> = ({ data }) => {
  const what = reportNames[data.reportKind];
  const about = data.animalName ? ` for ${data.animalName}` : "";
  const path = data.reportKind === "lost" ? "lost-reports" : "found-reports";
  return [
    {
      recipientActorId: data.reporterId,
      kind: "report_expiring",
      // One reminder per expiry: a renewal's later expiry is a new one.
      sourceKey: `report_expiring:${data.reportId}:${data.expiresAt}`,
      subject: `Your ${what}${about} expires soon`,
      body:
        `Your ${what}${about} closes on its own at ${data.expiresAt} and then leaves alerts and matching. ` +
        `If you still need it, renew it (POST /v1/safety/${path}/${data.reportId}/renew).`,
      data: ids(data.reportKind === "lost" ? { lostReportId: data.reportId } : { foundReportId: data.reportId }),
    },
  ];
};

const accountSuspended: EventHandler<typeof EventType.AccountSuspended> = ({ id, data }) => [
  {
    recipientActorId: data.userId,
    kind: "account_suspended",
    sourceKey: `account_suspended:${id}`,
    subject: "Your account has been suspended",
    body:
      `Your account was suspended (reason: ${data.reasonCode})` +
      (data.expiresAt ? ` until ${data.expiresAt}.` : " until a moderator restores it.") +
      " While it is suspended the service refuses your requests.",
    data: {},
  },
];

const matchIds = (data: { matchId: string; lostReportId: string; kind: string; targetId: string }) =>
  ids({
    matchId: data.matchId,
    lostReportId: data.lostReportId,
    [data.kind === "sighting" ? "sightingId" : "foundReportId"]: data.targetId,
  });

/** Where a shelter's animal is, with the shelter's public contact (public by design: contract, "Shelter partners"), and until when it is held. */
function atPartner(partner: FoundReportPartner & { heldUntil?: string }): string {
  const contact = [partner.phone, partner.email, partner.address, partner.website].filter(Boolean).join(", ");
  return `The animal is at ${partner.name}${contact ? ` (${contact})` : ""}${partner.heldUntil ? ` until ${holdEndText(partner.heldUntil)}` : ""}.`;
}

/** An owner hears of the suggestions that do not alert at once at most once per this many seconds per lost report. */
export const MATCH_DIGEST_WINDOW_SECONDS = 86_400;

/**
 * The lost report's owner: at once, in words (describeMatch), when the
 * suggestion stands clearly ahead of that report's other candidates or the
 * chips are equal (`ownerAlert`, jobs/matching/score.ts alertsOwner);
 * otherwise one "N possible matches" a day per lost report, grouped
 * (notifier/grouping.ts), pointing to the listing.
 */
function ownerMatchDraft(data: EventEnvelope<typeof EventType.MatchSuggested>["data"]): NotificationDraft {
  if (data.ownerAlert !== false) {
    return {
      recipientActorId: data.lostReporterId,
      kind: "match",
      sourceKey: `match:${data.matchId}`,
      subject: data.kind === "sighting" ? "A sighting may be your animal" : "A found animal may be yours",
      body:
        `A ${data.kind === "sighting" ? "sighting" : "found report"} may be your animal: ${describeMatch(data)}. ` +
        (data.partner ? `${atPartner(data.partner)} ` : "") +
        "Open your report's matches to see it, then confirm or dismiss it.",
      data: data.partner ? { ...matchIds(data), partner: data.partner } : matchIds(data),
    };
  }
  const possible = (count: number) => (count === 1 ? "1 possible match" : `${count} possible matches`);
  const digest = (count: number) => ({
    subject: `${possible(count)} for your lost report`,
    body:
      `${count === 1 ? "An animal was" : `${count} animals were`} reported that could be yours, none of them clearly ahead of the others. ` +
      "Open your report's matches to look at them, best first, then confirm or dismiss each.",
    data: { lostReportId: data.lostReportId, matchesPath: matchesPath(data.lostReportId), matchCount: String(count) },
  });
  return {
    recipientActorId: data.lostReporterId,
    kind: "match",
    sourceKey: `match:${data.matchId}`,
    ...digest(1),
    group: { key: `match-digest:${data.lostReportId}`, windowSeconds: MATCH_DIGEST_WINDOW_SECONDS, summary: digest },
  };
}

/** A new suggestion tells the lost report's owner and, for a found report, its finder; never someone about their own report. */
const matchSuggested: EventHandler<typeof EventType.MatchSuggested> = ({ data }) => {
  if (data.lostReporterId === data.targetReporterId) return [];
  const sourceKey = `match:${data.matchId}`;
  const owner = ownerMatchDraft(data);
  if (data.kind === "sighting") return [owner];
  const finder: NotificationDraft = {
    recipientActorId: data.targetReporterId,
    kind: "match",
    sourceKey,
    subject: "The animal you found may have an owner looking for it",
    body: "A lost report may match the animal you found. Open your found report's matches; its owner has been told too.",
    data: matchIds(data),
  };
  return [owner, finder];
};

/** Confirming tells the finder (or the neighbour whose sighting it was). */
const matchConfirmed: EventHandler<typeof EventType.MatchConfirmed> = ({ data }) =>
  data.lostReporterId === data.targetReporterId
    ? []
    : [
        {
          recipientActorId: data.targetReporterId,
          kind: "match",
          sourceKey: `match:${data.matchId}:confirmed`,
          subject: "The owner confirmed: it is their animal",
          body:
            data.kind === "sighting"
              ? "The owner confirmed that your sighting was their animal. Thank you for looking out."
              : "The owner confirmed that the animal you found is theirs. They can reach you through the message relay." +
                (data.lostReportShareUrl ? ` The owner's lost report: ${data.lostReportShareUrl}` : ""),
          data: data.lostReportShareUrl ? { ...matchIds(data), lostReportShareUrl: data.lostReportShareUrl } : matchIds(data),
        },
      ];

/**
 * Every event type the notifier turns into notifications. The consumer's
 * subject filter is derived from these keys, so a new entry here is all it
 * takes to consume a new type.
 */
export const notificationHandlers: HandlerRegistry = {
  [EventType.ContactMessageReceived]: contactMessageReceived,
  [EventType.SightingReported]: sightingReported,
  [EventType.ContentModerated]: contentModerated,
  [EventType.AccountSuspended]: accountSuspended,
  [EventType.MatchSuggested]: matchSuggested,
  [EventType.MatchConfirmed]: matchConfirmed,
  [EventType.TagScanned]: tagScanned,
  [EventType.ReportExpiring]: reportExpiring,
  // The owner's first-hour guide (notifier/report-guide/).
  [EventType.AnimalLostReported]: ({ data }) => reportGuideDrafts(data),
};

export function handledSubjects(registry: HandlerRegistry): string[] {
  return Object.keys(registry).sort();
}

/**
 * The drafts for one raw event, or null when no handler takes its type. The
 * data is parsed with the catalogue's schema first: InvalidEventError
 * (lib/events.ts) when it does not fit, so the message can never succeed.
 */
export function draftNotifications(registry: HandlerRegistry, event: { id: string; type: string; occurredAt: string; data: unknown }): NotificationDraft[] | null {
  const handler = registry[event.type as EventType] as EventHandler<EventType> | undefined;
  if (!handler) return null;
  const type = event.type as EventType;
  return handler({ id: event.id, type, occurredAt: event.occurredAt, data: parseEventData(type, event.data, event.id) });
}
