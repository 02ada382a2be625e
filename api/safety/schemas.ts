import { z } from "zod";
import { COARSE_PRECISION_METERS } from "../../lib/geo.js";
import { PageQuery, Point, queryNumber, Species, Timestamp } from "../schemas.js";

export const text = (max: number) => z.string().trim().min(1).max(max);

/** Clock skew tolerated on "when did it happen" timestamps, which are never in the future. */
const FUTURE_SKEW_MS = 5 * 60_000;
export const PastTimestamp = Timestamp.refine((value) => Date.parse(value) <= Date.now() + FUTURE_SKEW_MS, {
  message: "must not be in the future",
});

export const ModerationState = z.enum(["quarantined", "removed"]);
export type ModerationState = z.output<typeof ModerationState>;

export const ReportStatus = z.enum(["open", "reunited", "closed", "cancelled"]);

export const AnimalDescription = z.object({
  name: text(100).optional(),
  species: Species,
  breed: text(100).optional(),
  colors: z.array(text(40)).max(10).optional(),
  sex: z.enum(["male", "female", "unknown"]).optional(),
  microchipId: z.string().trim().regex(/^[A-Za-z0-9-]{5,40}$/, "must be 5-40 letters, digits or dashes").optional(),
  distinguishingMarks: text(1000).optional(),
});

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

/** A grid-cell centre: what every public read shows instead of the precise point. */
export const CoarseLocation = z
  .object({ lat: z.number(), lon: z.number(), precisionMeters: z.number().int().describe(`about ${COARSE_PRECISION_METERS} m: the grid cell size`) })
  .meta({ id: "CoarseLocation" });

/** The public animal fields: no microchip id, which a scammer could quote back as "proof". */
const PublicAnimal = z.object({
  name: z.string().optional(),
  species: Species,
  breed: z.string().optional(),
  colors: z.array(z.string()),
  sex: z.string().optional(),
  distinguishingMarks: z.string().optional(),
});

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
    moderationState: ModerationState.optional(),
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
    moderationState: ModerationState.optional(),
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
    moderationState: ModerationState.nullable(),
  })
  .meta({ id: "LostReportPrivate" });

export const ResolveBody = z.object({ outcome: z.enum(["reunited", "closed"]) }).meta({ id: "ResolveReport" });
export const Resolved = z.object({ id: z.uuid(), status: ReportStatus, resolvedAt: z.string() });

export const FlagBody = z.object({ reason: text(500) }).meta({ id: "FlagLostReport" });

export const RelayMessageBody = z
  .object({ message: text(2000), fromContact: text(200) })
  .meta({ id: "RelayMessage" });
export const Accepted = z.object({ id: z.uuid() });

export const AlertKind = z.enum(["lost", "found"]);
export const AlertsQuery = PageQuery.extend({
  lat: queryNumber(z.coerce.number().min(-90).max(90)),
  lon: queryNumber(z.coerce.number().min(-180).max(180)),
  radiusKm: queryNumber(z.coerce.number().gt(0).max(100).default(10)),
  kind: z.enum(["lost", "found", "all"]).default("all"),
  species: Species.optional(),
});
export type AlertsQuery = z.output<typeof AlertsQuery>;
export const AlertsCursor = z.object({ d: z.number().min(0), id: z.uuid() });

export const Alert = z
  .object({
    id: z.uuid(),
    kind: AlertKind,
    species: Species,
    animalName: z.string().optional(),
    location: CoarseLocation,
    distanceKm: z.number(),
    createdAt: z.string(),
  })
  .meta({ id: "Alert" });

export const CreateSightingBody = z
  .object({
    lostReportId: z.uuid().optional(),
    location: Point,
    seenAt: PastTimestamp,
    note: text(1000).optional(),
  })
  .meta({ id: "CreateSighting" });
export type CreateSightingBody = z.output<typeof CreateSightingBody>;

export const SightingsCursor = z.object({ at: z.string().max(64), id: z.uuid() });

export const Sighting = z
  .object({
    id: z.uuid(),
    lostReportId: z.uuid(),
    location: CoarseLocation,
    seenAt: z.string(),
    note: z.string().optional(),
    createdAt: z.string(),
    moderationState: ModerationState.optional(),
  })
  .meta({ id: "Sighting" });
