import { z } from "zod";
import { MODERATION_TARGET_TYPES } from "../../../lib/moderation.js";
import { page, PageQuery } from "../../pagination.js";

export const QueueStatus = z.enum(["open", "claimed", "escalated"]);
export type QueueStatus = z.output<typeof QueueStatus>;

export const QueueQuery = PageQuery.extend({ status: QueueStatus.optional() });

export const ModerationAction = z.enum(["dismiss", "warn", "quarantine", "remove", "escalate"]);
export type ModerationAction = z.output<typeof ModerationAction>;

export const ActionBody = z
  .object({ action: ModerationAction, note: z.string().trim().min(1).max(2000).optional() })
  .meta({ id: "ModerationActionRequest" });

export const ModerationItem = z
  .object({
    id: z.uuid(),
    reporterId: z.string(),
    targetType: z.enum(MODERATION_TARGET_TYPES),
    targetId: z.uuid(),
    reason: z.string(),
    details: z.string().nullable(),
    status: z.enum(["open", "claimed", "escalated", "resolved"]),
    claimedBy: z.string().nullable(),
    claimedAt: z.string().nullable(),
    resolution: ModerationAction.nullable(),
    resolutionNote: z.string().nullable(),
    resolvedBy: z.string().nullable(),
    resolvedAt: z.string().nullable(),
    contentState: z.enum(["quarantined", "removed"]).nullable(),
    createdAt: z.string(),
  })
  .meta({ id: "ModerationItem" });

export type ModerationItem = z.output<typeof ModerationItem>;

export const ModerationQueuePage = page(ModerationItem);
