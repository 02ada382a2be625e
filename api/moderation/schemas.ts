import { z } from "zod";
import { MODERATION_TARGET_TYPES } from "../../lib/moderation.js";
import { text } from "../safety/schemas.js";

export const ModerationTargetType = z.enum(MODERATION_TARGET_TYPES);
export type ModerationTargetType = z.output<typeof ModerationTargetType>;

export const CreateModerationReportBody = z
  .object({
    targetType: ModerationTargetType,
    targetId: z.uuid(),
    reason: z.enum(["spam", "scam", "abuse", "other"]),
    details: text(2000).optional(),
  })
  .meta({ id: "CreateModerationReport" });
export type CreateModerationReportBody = z.output<typeof CreateModerationReportBody>;

export const ModerationReportCreated = z.object({ id: z.uuid() });
