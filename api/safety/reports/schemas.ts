import { z } from "zod";
import { REPORT_OUTCOMES } from "../../../lib/animals.js";
import { PhotoList } from "../../photos/schemas.js";
import { Point } from "../../schemas.js";
import { AnimalDescription, CoarseLocation, ModerationState, PastTimestamp, PublicAnimal, ReportStatus, text } from "../schemas.js";

export const CreateLostReportBody = z
  .object({
    animal: AnimalDescription,
    lastSeenAt: PastTimestamp,
    location: Point,
    description: text(5000).optional(),
    verificationDetail: text(500).optional(),
  })
  .meta({ id: "CreateLostReport" });
export type CreateLostReportBody = z.output<typeof CreateLostReportBody>;

export const CreateFoundReportBody = z
  .object({
    animal: AnimalDescription.omit({ name: true }),
    foundAt: PastTimestamp,
    location: Point,
    description: text(5000).optional(),
  })
  .meta({ id: "CreateFoundReport" });
export type CreateFoundReportBody = z.output<typeof CreateFoundReportBody>;

/** Every report view carries its lifetime (contract: "Report views carry expiresAt"). */
const Lifetime = {
  expiresAt: z
    .string()
    .nullable()
    .describe("When an open report closes on its own unless renewed (REPORT_TTL_DAYS after creation or the last renewal). Null only for a report closed before reports had a lifetime."),
  closedReason: z.enum(["expired"]).nullable().describe("expired: closed by the lifetime job, not by its reporter."),
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
  })
  .meta({ id: "FoundReportPrivate" });

export const ResolveBody = z.object({ outcome: z.enum(REPORT_OUTCOMES) }).meta({ id: "ResolveReport" });
export const Resolved = z.object({ id: z.uuid(), status: ReportStatus, resolvedAt: z.string() });
