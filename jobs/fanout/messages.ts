import { MAX_RADIUS_KM } from "../../lib/alerts.js";
import type { Species } from "../../lib/animals.js";
import type { NotificationDraft } from "../../lib/notification-rows.js";
import { derivedSourceId } from "../../lib/source-id.js";

/**
 * The text of nearby_lost notifications. About the subscriber they carry
 * only the distance from the subscription's point to the report's coarse
 * point, rounded to the kilometre; about the report, its public fields (the
 * species, when it was last seen, the ~1 km cell centre).
 */

export interface AlertReport {
  reportId: string;
  species: Species;
  /** The coarse point (a cell centre). */
  lat: number;
  lon: number;
  lastSeenAt: Date;
}

export interface AlertRecipient {
  actorId: string;
  subscriptionId: string;
  distanceM: number;
}

export const roundedKm = (distanceM: number) => Math.round(distanceM / 1000);

const distanceText = (km: number) => (km === 0 ? "less than 1 km" : `about ${km} km`);
const place = ({ lat, lon }: AlertReport) => `${lat.toFixed(3)}, ${lon.toFixed(3)}`;

export function nearbyLostDraft(report: AlertReport, recipient: AlertRecipient): NotificationDraft {
  const km = roundedKm(recipient.distanceM);
  return {
    recipientActorId: recipient.actorId,
    kind: "nearby_lost",
    sourceKey: `nearby_lost:${report.reportId}`,
    subject: `A ${report.species} was lost near you (${distanceText(km)} away)`,
    body:
      `A lost ${report.species} was last seen at ${report.lastSeenAt.toISOString()} near ${place(report)} ` +
      `(within about 1 km), ${distanceText(km)} from the centre of your alert area. ` +
      "Open the report to see what it looks like, and keep an eye out.",
    data: {
      lostReportId: report.reportId,
      alertSubscriptionId: recipient.subscriptionId,
      distanceKm: String(km),
      lat: String(report.lat),
      lon: String(report.lon),
    },
  };
}

/**
 * The nearby_lost draft of a report for every distance a subscription can be
 * from it in whole km (index = km, up to the largest radius), so that a
 * batch's rows are built in SQL from each recipient's rounded distance
 * (jobs/fanout/store.ts insertNearbyNotifications). Recipient and
 * subscription are left blank: each row sets its own.
 */
export function nearbyLostTexts(report: AlertReport): NotificationDraft[] {
  return Array.from({ length: MAX_RADIUS_KM + 1 }, (_, km) => nearbyLostDraft(report, { actorId: "", subscriptionId: "", distanceM: km * 1000 }));
}

/** The index into nearbyLostTexts for a distance. */
export const textIndex = (distanceM: number) => Math.min(roundedKm(distanceM), MAX_RADIUS_KM);

/** Reports listed in a digest's text and data; the count covers them all. */
const DIGEST_LISTED = 50;

/**
 * The morning digest of one subscriber's alerts past the day's cap: one
 * notification for the day, with the subscriptions it came from (for the
 * unsubscribe link) and the reports still open.
 */
export function digestDraft(actorId: string, day: string, items: Array<AlertReport & { subscriptionId: string; distanceM: number }>): NotificationDraft {
  const listed = items.slice(0, DIGEST_LISTED);
  const lines = listed.map(
    (item) => `- a ${item.species}, ${distanceText(roundedKm(item.distanceM))} away, last seen near ${place(item)}: report ${item.reportId}`,
  );
  const more = items.length - listed.length;
  return {
    recipientActorId: actorId,
    kind: "nearby_lost",
    sourceKey: `nearby_lost_digest:${day}`,
    subject: `${items.length} more lost animal${items.length === 1 ? "" : "s"} near you on ${day}`,
    body:
      `You had reached the day's limit of alerts, so these lost animals near you on ${day} (UTC) are collected here:\n` +
      lines.join("\n") +
      (more > 0 ? `\n…and ${more} more.` : ""),
    data: {
      digestDay: day,
      count: String(items.length),
      alertSubscriptionIds: [...new Set(items.map((i) => i.subscriptionId))].sort().join(","),
      lostReportIds: listed.map((i) => i.reportId).join(","),
    },
  };
}

/**
 * The digest's source id: the same (subscriber, day) always gives the same
 * UUID, so a re-run of the digest (a retried job, a second notifier) finds
 * its notification already written instead of sending another.
 */
export const digestSourceId = (actorId: string, day: string): string => derivedSourceId(`alerts-digest\n${actorId}\n${day}`);
