import { z } from "zod";
import { CLOSED_REASONS } from "../../../lib/report-lifecycle.js";
import { REPORT_OUTCOMES } from "../../../lib/animals.js";
import { PhotoList } from "../../photos/schemas.js";
import { FoundReportPartner, Point } from "../../schemas.js";
import { NearbyShelter } from "../shelters/schemas.js";
import { AnimalDescription, CoarseLocation, ModerationState, PastTimestamp, PublicAnimal, ReportStatus, text } from "../schemas.js";

/** The longest description a report holds. */
export const REPORT_DESCRIPTION_MAX = 5000;

export const CreateLostReportBody = z
  .object({
    animal: AnimalDescription,
    lastSeenAt: PastTimestamp,
    location: Point,
    description: text(REPORT_DESCRIPTION_MAX).optional(),
    verificationDetail: text(500).optional(),
  })
  .meta({ id: "CreateLostReport" });
export type CreateLostReportBody = z.output<typeof CreateLostReportBody>;

export const CreateFoundReportBody = z
  .object({
    animal: AnimalDescription.omit({ name: true }),
    foundAt: PastTimestamp,
    location: Point,
    description: text(REPORT_DESCRIPTION_MAX).optional(),
  })
  .meta({ id: "CreateFoundReport" });
export type CreateFoundReportBody = z.output<typeof CreateFoundReportBody>;

/** Where the report is shared (api/safety/reports/links.ts): absolute URLs under PUBLIC_BASE_URL. */
export const shareUrls = () => ({
  shareUrl: z.string().describe("The report's public share page (GET /lost/{id} or /found/{id}), in the reader's language."),
  shortUrl: z.string().describe("The short link (GET /s/{code}, 301 to the share page), as printed on the flyer."),
});
export const flyerUrl = () => ({
  flyerUrl: z.string().describe("The printable one-page flyer (PDF, `?size=a4|letter`, `?lang=`)."),
});

/** A found animal in a shelter partner's custody is held this long as a stray (contract part 4). */
const heldUntil = () => ({
  heldUntil: z
    .string()
    .optional()
    .describe(
      "While a shelter partner holds the animal: the end of its stray hold, the end of the day (UTC) intakeDate + the partner's " +
        "strayHoldDays. After it the animal may be rehomed.",
    ),
});

/** Every report view carries its lifetime (contract: "Report views carry expiresAt"). */
const Lifetime = {
  expiresAt: z
    .string()
    .nullable()
    .describe("When an open report closes on its own unless renewed (REPORT_TTL_DAYS after creation or the last renewal). Null only for a report closed before reports had a lifetime."),
  closedReason: z
    .enum(CLOSED_REASONS)
    .nullable()
    .describe("expired: closed by the lifetime job, not by its reporter. left_custody: a shelter partner's animal that left its custody."),
};

export const LostReportPublic = z
  .object({
    id: z.uuid(),
    status: ReportStatus,
    animal: PublicAnimal,
    lastSeenAt: z.string(),
    location: CoarseLocation,
    description: z.string().optional(),
    createdAt: z.string(),
    resolvedAt: z.string().nullable(),
    ...Lifetime,
    moderationState: ModerationState.optional(),
    photos: PhotoList,
    ...shareUrls(),
  })
  .meta({ id: "LostReportPublic" });

export const FoundReportPublic = z
  .object({
    id: z.uuid(),
    status: ReportStatus,
    animal: PublicAnimal.omit({ name: true }),
    foundAt: z.string(),
    location: CoarseLocation,
    description: z.string().optional(),
    createdAt: z.string(),
    resolvedAt: z.string().nullable(),
    ...Lifetime,
    moderationState: ModerationState.optional(),
    photos: PhotoList,
    ...shareUrls(),
    partner: FoundReportPartner.optional().describe(
      "While the animal is in a shelter partner's custody: the partner and its public contact (public by design).",
    ),
    ...heldUntil(),
  })
  .meta({ id: "FoundReportPublic" });

export const LostReportPrivate = z
  .object({
    id: z.uuid(),
    reporterId: z.string(),
    status: ReportStatus,
    animal: PublicAnimal.extend({ microchipId: z.string().optional() }),
    lastSeenAt: z.string(),
    location: Point,
    coarseLocation: CoarseLocation,
    description: z.string().optional(),
    verificationDetail: z.string().optional(),
    flag: z
      .object({ reason: z.string(), flaggedAt: z.string(), flaggedBy: z.string().optional() })
      .nullable()
      .describe("The latest flag (a single slot). flaggedBy is shown to platform admins only."),
    createdAt: z.string(),
    updatedAt: z.string(),
    resolvedAt: z.string().nullable(),
    ...Lifetime,
    animalId: z.uuid().nullable().describe("The registered animal this report was made from (POST /v1/animals/{id}/lost)."),
    moderationState: ModerationState.nullable(),
    photos: PhotoList,
    ...shareUrls(),
    ...flyerUrl(),
    nearbyShelters: z
      .array(NearbyShelter)
      .describe("The shelters to call: the first 5 partners within 25 km of where the animal was last seen, nearest first (as GET /v1/safety/shelters)."),
  })
  .meta({ id: "LostReportPrivate" });

export const FoundReportPrivate = z
  .object({
    id: z.uuid(),
    reporterId: z.string(),
    status: ReportStatus,
    animal: PublicAnimal.omit({ name: true }).extend({ microchipId: z.string().optional() }),
    foundAt: z.string(),
    location: Point,
    coarseLocation: CoarseLocation,
    description: z.string().optional(),
    createdAt: z.string(),
    updatedAt: z.string(),
    resolvedAt: z.string().nullable(),
    ...Lifetime,
    moderationState: ModerationState.nullable(),
    photos: PhotoList,
    ...shareUrls(),
    ...flyerUrl(),
    ...heldUntil(),
  })
  .meta({ id: "FoundReportPrivate" });

export const ResolveBody = z.object({ outcome: z.enum(REPORT_OUTCOMES) }).meta({ id: "ResolveReport" });
export const Resolved = z.object({ id: z.uuid(), status: ReportStatus, resolvedAt: z.string() });
