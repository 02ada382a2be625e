import { z } from "zod";
import { Point } from "../../schemas.js";
import { AnimalDescription, PastTimestamp, text } from "../schemas.js";
import { REPORT_DESCRIPTION_MAX } from "./schemas.js";

/**
 * PATCH bodies: every field optional; `null` clears an optional one. Unknown
 * fields are refused rather than dropped, so a caller who sends a field that
 * cannot be edited (status, verificationDetail) is told so.
 */
const clearable = <T extends z.ZodType>(schema: T) => schema.nullable().optional();
const animal = AnimalDescription.shape;

const FoundAnimalPatch = z.strictObject({
  species: animal.species.optional(),
  breed: clearable(animal.breed.unwrap()),
  colors: animal.colors.describe("Replaces the list; [] clears it."),
  sex: clearable(animal.sex.unwrap()),
  microchipId: clearable(animal.microchipId.unwrap()),
  distinguishingMarks: clearable(animal.distinguishingMarks.unwrap()),
});
const LostAnimalPatch = FoundAnimalPatch.extend({ name: clearable(animal.name.unwrap()) });

/**
 * A move of a report is a correction, not a new report: a location farther
 * than this from where the report was first filed is refused, however many
 * edits it takes to get there.
 */
export const MAX_MOVE_KM = 200;

const locationNote =
  `The new location may be at most ${MAX_MOVE_KM} km from where the report was first filed, counted from that point ` +
  "and not from the current one (a correction, such as a mistyped digit); a report of another place is a new report.";

export const PatchLostReportBody = z
  .strictObject({
    animal: LostAnimalPatch.optional(),
    lastSeenAt: PastTimestamp.optional(),
    location: Point.optional().describe(locationNote),
    description: clearable(text(REPORT_DESCRIPTION_MAX)),
  })
  .meta({ id: "PatchLostReport" });
export type PatchLostReportBody = z.output<typeof PatchLostReportBody>;

export const PatchFoundReportBody = z
  .strictObject({
    animal: FoundAnimalPatch.optional(),
    foundAt: PastTimestamp.optional(),
    location: Point.optional().describe(locationNote),
    description: clearable(text(REPORT_DESCRIPTION_MAX)),
  })
  .meta({ id: "PatchFoundReport" });
export type PatchFoundReportBody = z.output<typeof PatchFoundReportBody>;

export const Renewed = z.object({ expiresAt: z.string() }).meta({ id: "ReportRenewed" });
