import { z } from "zod";
import { Point, Species } from "../../schemas.js";
import { AnimalDescription, CoarseLocation, ModerationState, PastTimestamp, text } from "../schemas.js";

export const CreateSightingBody = z
  .object({
    lostReportId: z.uuid().optional(),
    location: Point,
    seenAt: PastTimestamp,
    note: text(1000).optional(),
    animal: AnimalDescription.pick({ species: true, breed: true, colors: true })
      .optional()
      .describe("What the animal looked like. An unlinked sighting with an animal takes part in matching."),
  })
  .meta({ id: "CreateSighting" });
export type CreateSightingBody = z.output<typeof CreateSightingBody>;

export const Sighting = z
  .object({
    id: z.uuid(),
    lostReportId: z.uuid(),
    location: CoarseLocation,
    seenAt: z.string(),
    note: z
      .string()
      .optional()
      .describe("Left out until the lost report's owner or a moderator has seen the sighting; always shown to them and to its reporter."),
    animal: z.object({ species: Species, breed: z.string().optional(), colors: z.array(z.string()) }).optional(),
    createdAt: z.string(),
    moderationState: ModerationState.optional(),
  })
  .meta({ id: "Sighting" });
