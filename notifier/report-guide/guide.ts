import type { EventData, EventType } from "../../lib/events.js";
import type { NotificationKind } from "../../lib/notifications.js";
import { GUIDE_SHELTERS } from "../../lib/partners.js";
import { guideCatalogues } from "./messages.js";

/**
 * The first hour (contract part 4): filing a lost report sends its owner one
 * report_guide notification, in the language of the filing request: what to
 * do now for that species, the share page, the flyer, and the shelters near
 * the report with their public contact. Everything comes in the event
 * (events.animal.lost_reported.v1: lang, shareUrl, flyerUrl and shelters,
 * read in the create's statement), so the handler reads nothing. An event
 * without a share page (written before the guide existed) sends none.
 */

type LostReported = EventData<typeof EventType.AnimalLostReported>;

/** The draft, as notifier/handlers.ts takes it. */
export interface GuideDraft {
  recipientActorId: string;
  kind: NotificationKind;
  sourceKey: string;
  subject: string;
  body: string;
  data: Record<string, string>;
}

const fill = (template: string, values: Record<string, string | number>) =>
  template.replace(/\{(\w+)\}/g, (whole, key: string) => (Object.hasOwn(values, key) ? String(values[key]) : whole));

export function reportGuideDrafts(data: LostReported): GuideDraft[] {
  if (!data.shareUrl) return [];
  const lang = data.lang ?? "en";
  const m = guideCatalogues[lang];
  const species = m.species[data.species];
  const steps = [...(data.species === "dog" ? m.steps.dog : data.species === "cat" ? m.steps.cat : m.steps.other), ...m.always];
  const shelters = data.shelters ?? [];
  const shelterLines = shelters.map((s) => {
    const contact = [s.phone, s.email, s.address, s.website].filter(Boolean).join(", ");
    // In whole kilometres: the event measures from the report's coarse point (~1 km cell), so a decimal would claim too much.
    const values = { name: s.name, distance: Math.max(1, Math.round(s.distanceKm)), contact, days: s.strayHoldDays };
    return `- ${fill(contact ? m.shelter : m.shelterBare, values)}`;
  });
  const body = [
    fill(m.intro, { species }),
    steps.map((step, i) => `${i + 1}. ${fill(step, { species })}`).join("\n"),
    [fill(m.share, { url: data.shareUrl }), ...(data.flyerUrl ? [fill(m.flyer, { url: data.flyerUrl })] : [])].join("\n"),
    shelters.length > 0
      ? [fill(m.sheltersHeading, { km: GUIDE_SHELTERS.radiusKm }), ...shelterLines].join("\n")
      : fill(m.noShelters, { km: GUIDE_SHELTERS.radiusKm }),
  ].join("\n\n");
  return [
    {
      recipientActorId: data.reporterId,
      kind: "report_guide",
      sourceKey: `report_guide:${data.reportId}`,
      subject: fill(m.subject, { species }),
      body,
      data: {
        lostReportId: data.reportId,
        shareUrl: data.shareUrl,
        ...(data.flyerUrl ? { flyerUrl: data.flyerUrl } : {}),
        lang,
        shelterCount: String(shelters.length),
      },
    },
  ];
}
