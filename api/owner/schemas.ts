import { z } from "zod";
import { Species } from "../schemas.js";
import { flyerUrl, FoundReportPublic, LostReportPublic } from "../safety/reports/schemas.js";
import { ModerationState } from "../safety/schemas.js";

/**
 * The owner's own listings: the public view of each report (coarse point;
 * the precise one stays behind the audited …/private read) plus what only
 * the owner sees: the moderation state of every item, moderated or not.
 */
const ownerFields = {
  updatedAt: z.string(),
  ...flyerUrl(),
  moderationState: ModerationState.nullable().describe("quarantined or removed content is hidden from public reads; its owner still sees it here"),
};

export const MyLostReport = LostReportPublic.omit({ moderationState: true, photos: true })
  .extend({ ...ownerFields, animalId: z.uuid().nullable().describe("The registered animal this report was made from, if any.") })
  .meta({ id: "MyLostReport" });

export const MyFoundReport = FoundReportPublic.omit({ moderationState: true, photos: true }).extend(ownerFields).meta({ id: "MyFoundReport" });

export const MyAnimal = z
  .object({
    id: z.uuid(),
    name: z.string(),
    species: Species,
    breed: z.string().optional(),
    colors: z.array(z.string()),
    createdAt: z.string(),
    emergencyProfile: z
      .object({ showName: z.boolean(), issuedAt: z.string(), revokedAt: z.string().nullable() })
      .nullable()
      .describe("The tag's profile; revokedAt is set when an admin revoked its token."),
    openLostReportId: z.uuid().nullable().describe("The open lost report made from this animal (POST /v1/animals/{id}/lost)."),
    moderationState: ModerationState.nullable().describe("Animals are not a moderation target: always null, kept so every owner listing has it."),
  })
  .meta({ id: "MyAnimal" });
