import { z } from "zod";
import { text } from "../safety/schemas.js";

export const ModerationTargetType = z.enum(["lost_report", "found_report", "sighting", "relay_message"]);
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
