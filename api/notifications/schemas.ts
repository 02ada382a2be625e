import { z } from "zod";
import { PageQuery, Timestamp } from "../schemas.js";

export const Channel = z.enum(["email", "in_app"]);
export const FailureStatus = z.enum(["failed", "dead_letter"]);
export const NotificationStatus = z.enum(["pending", "sent", "failed", "dead_letter"]);

export const MyNotification = z
  .object({
    id: z.uuid(),
    channel: Channel,
    status: NotificationStatus,
    subject: z.string(),
    body: z.string(),
    eventType: z.string(),
    createdAt: z.string(),
    sentAt: z.string().nullable(),
  })
  .meta({ id: "MyNotification" });
export type MyNotification = z.output<typeof MyNotification>;

export const NotificationPreferences = z
  .object({
    channel: Channel,
    email: z.string().nullable(),
    updatedAt: z.string().nullable(),
  })
  .meta({ id: "NotificationPreferences" });
export type NotificationPreferences = z.output<typeof NotificationPreferences>;

export const PutNotificationPreferencesBody = z
  .object({
    channel: Channel,
    email: z.email().max(254).nullable().optional(),
  })
  .strict()
  .meta({ id: "PutNotificationPreferences" });
export type PutNotificationPreferencesBody = z.output<typeof PutNotificationPreferencesBody>;

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
    reasonCategory: z.enum(["transient", "permanent"]),
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

/** Keyset cursors: the last item's sort key, with the timestamp at full (microsecond) precision. */
export const TimeCursor = z.object({ at: Timestamp, id: z.uuid() });
export type TimeCursor = z.output<typeof TimeCursor>;
