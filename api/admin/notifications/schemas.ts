import { z } from "zod";
import { FAILURE_STATUSES, REASON_CATEGORIES } from "../../../lib/notifications.js";
import { PageQuery } from "../../pagination.js";
import { Channel, NotificationStatus } from "../../notifications/schemas.js";

export const FailureStatus = z.enum(FAILURE_STATUSES);

export const FailuresQuery = PageQuery.extend({
  status: FailureStatus.optional(),
  channel: Channel.optional(),
});
export type FailuresQuery = z.output<typeof FailuresQuery>;

export const NotificationFailure = z
  .object({
    id: z.uuid(),
    recipientActorId: z.string(),
    channel: Channel,
    status: FailureStatus,
    attempts: z.number().int(),
    lastError: z.string().nullable(),
    reasonCategory: z.enum(REASON_CATEGORIES),
    sourceEventId: z.uuid().nullable(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: "NotificationFailure" });
export type NotificationFailure = z.output<typeof NotificationFailure>;

export const ReplayResult = z
  .object({
    id: z.uuid(),
    previousStatus: FailureStatus,
    status: NotificationStatus,
  })
  .meta({ id: "NotificationReplay" });
