import { z } from "zod";
import { CHANNELS, NOTIFICATION_KINDS, NOTIFICATION_STATUSES } from "../../lib/notifications.js";

export const Channel = z.enum(CHANNELS);
export const NotificationStatus = z.enum(NOTIFICATION_STATUSES);
export const NotificationKind = z.enum(NOTIFICATION_KINDS);

export const MyNotification = z
  .object({
    id: z.uuid(),
    channel: Channel,
    status: NotificationStatus,
    kind: NotificationKind,
    subject: z.string(),
    body: z.string(),
    data: z.record(z.string(), z.string()).describe("The ids to follow: lostReportId, foundReportId, matchId, animalId, …"),
    eventType: z.string(),
    createdAt: z.string(),
    sentAt: z.string().nullable(),
    readAt: z.string().nullable(),
  })
  .meta({ id: "MyNotification" });
export type MyNotification = z.output<typeof MyNotification>;

export const NotificationPreferences = z
  .object({
    email: z.string().nullable(),
    emailKinds: z.array(NotificationKind).nullable().describe("Kinds also sent by email; null means every kind."),
    channel: Channel.describe("The earlier single-channel view: email when some kinds go by email to an address, else in_app."),
    updatedAt: z.string().nullable(),
  })
  .meta({ id: "NotificationPreferences" });
export type NotificationPreferences = z.output<typeof NotificationPreferences>;

export const PutNotificationPreferencesBody = z
  .object({
    email: z.email().max(254).nullable().optional(),
    emailKinds: z.array(NotificationKind).max(NOTIFICATION_KINDS.length).optional(),
    channel: Channel.optional().describe("Still accepted: in_app means emailKinds [], email means every kind. emailKinds wins when both are sent."),
  })
  .strict()
  .refine((body) => Object.keys(body).length > 0, { message: "send at least one of email, emailKinds, channel" })
  .meta({ id: "PutNotificationPreferences" });
export type PutNotificationPreferencesBody = z.output<typeof PutNotificationPreferencesBody>;

export const ReadResult = z.object({ id: z.uuid(), readAt: z.string() }).meta({ id: "NotificationRead" });
