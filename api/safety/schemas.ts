import { z } from "zod";
import { COARSE_PRECISION_METERS } from "../../lib/geo.js";
import { CONTENT_STATES } from "../../lib/moderation.js";
import { Species, Timestamp } from "../schemas.js";

export const text = (max: number) => z.string().trim().min(1).max(max);

/** Clock skew tolerated on "when did it happen" timestamps, which are never in the future. */
const FUTURE_SKEW_MS = 5 * 60_000;
export const PastTimestamp = Timestamp.refine((value) => Date.parse(value) <= Date.now() + FUTURE_SKEW_MS, {
  message: "must not be in the future",
});

export const ModerationState = z.enum(CONTENT_STATES);
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

/** A grid-cell centre: what every public read shows instead of the precise point. */
export const CoarseLocation = z
  .object({ lat: z.number(), lon: z.number(), precisionMeters: z.number().int().describe(`about ${COARSE_PRECISION_METERS} m: the grid cell size`) })
  .meta({ id: "CoarseLocation" });

/** The public animal fields: no microchip id, which a scammer could quote back as "proof". */
export const PublicAnimal = z.object({
  name: z.string().optional(),
  species: Species,
  breed: z.string().optional(),
  colors: z.array(z.string()),
  sex: z.string().optional(),
  distinguishingMarks: z.string().optional(),
});
