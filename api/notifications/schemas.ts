import { z } from "zod";
import { CHANNELS, DEFAULT_SMS_KINDS, NOTIFICATION_KINDS, NOTIFICATION_STATUSES, SERVICE_KINDS } from "../../lib/notifications.js";
import { PhoneEndingField, PhoneStatusField } from "../phone/schemas.js";
import { FoundReportPartner } from "../schemas.js";

export const Channel = z.enum(CHANNELS);
export const NotificationStatus = z.enum(NOTIFICATION_STATUSES);
export const NotificationKind = z.enum(NOTIFICATION_KINDS);
/**
 * The kinds one may choose to get by email (and push, and text): a confirmation email goes to the address it
 * confirms, and a code or the service's answer to a text to its number, whatever is chosen.
 */
export const EmailKind = NotificationKind.exclude([...SERVICE_KINDS]);
export type EmailKind = z.output<typeof EmailKind>;

export const EMAIL_STATUSES = ["none", "pending", "confirmed"] as const;
export type EmailStatus = (typeof EMAIL_STATUSES)[number];

export const MyNotification = z
  .object({
    id: z.uuid(),
    channel: Channel,
    status: NotificationStatus,
    kind: NotificationKind,
    subject: z.string(),
    body: z.string(),
    data: z
      .record(z.string(), z.union([z.string(), FoundReportPartner]))
      .describe("The ids to follow: lostReportId, foundReportId, matchId, animalId, …; a match with a shelter's animal adds `partner`."),
    eventType: z.string(),
    createdAt: z.string(),
    sentAt: z.string().nullable(),
    readAt: z.string().nullable(),
  })
  .meta({ id: "MyNotification" });
export type MyNotification = z.output<typeof MyNotification>;

export const NotificationPreferences = z
  .object({
    email: z.string().nullable().describe("The address last set: the one in use, or the one awaiting confirmation (emailStatus)."),
    emailStatus: z
      .enum(EMAIL_STATUSES)
      .describe(
        "none: no address. pending: a confirmation email went to the address, and no other email goes to it until its link " +
          "is followed. confirmed: the address gets notification email (with EMAIL_VERIFICATION=off, as soon as it is set).",
      ),
    emailKinds: z.array(EmailKind).nullable().describe("Kinds also sent by email; null means every kind."),
    pushKinds: z
      .array(EmailKind)
      .nullable()
      .describe("Kinds also pushed to your phones and browsers (POST /v1/me/push-subscriptions); null means every kind."),
    smsKinds: z
      .array(EmailKind)
      .nullable()
      .describe(`Kinds also texted to your verified phone (PUT /v1/me/phone); null means ${DEFAULT_SMS_KINDS.join(", ")}.`),
    phoneStatus: PhoneStatusField,
    phoneEnding: PhoneEndingField,
    channel: Channel.describe(
      "The earlier single-channel view: email when some kinds go by email to a confirmed address, else in_app.",
    ),
    updatedAt: z.string().nullable(),
  })
  .meta({ id: "NotificationPreferences" });
export type NotificationPreferences = z.output<typeof NotificationPreferences>;

export const PutNotificationPreferencesBody = z
  .object({
    email: z.email().max(254).nullable().optional(),
    emailKinds: z.array(EmailKind).max(NOTIFICATION_KINDS.length).optional(),
    pushKinds: z
      .array(EmailKind)
      .max(NOTIFICATION_KINDS.length)
      .nullable()
      .optional()
      .describe("Kinds also pushed to your push subscriptions: null means every kind, left out keeps the stored choice."),
    smsKinds: z
      .array(EmailKind)
      .max(NOTIFICATION_KINDS.length)
      .nullable()
      .optional()
      .describe(`Kinds also texted to your verified phone: null means ${DEFAULT_SMS_KINDS.join(", ")}, left out keeps the stored choice.`),
    // The earlier single channel: push and sms never were one (pushKinds and smsKinds choose them).
    channel: Channel.exclude(["push", "sms"])
      .optional()
      .describe("Still accepted: in_app means emailKinds [], email means every kind. emailKinds wins when both are sent."),
  })
  .strict()
  .refine((body) => Object.keys(body).length > 0, { message: "send at least one of email, emailKinds, pushKinds, smsKinds, channel" })
  .meta({ id: "PutNotificationPreferences" });
export type PutNotificationPreferencesBody = z.output<typeof PutNotificationPreferencesBody>;

export const ReadResult = z.object({ id: z.uuid(), readAt: z.string() }).meta({ id: "NotificationRead" });

/** GET /v1/me/email/confirm: the token from the confirmation email's link. Any string is taken, and every bad one gets the same 404. */
export const EmailConfirmQuery = z.object({
  token: z.string().optional().describe("The token of the confirmation email's link: 43 characters of base64url."),
});

export const EmailConfirmed = z.object({ emailStatus: z.literal("confirmed") }).meta({ id: "EmailConfirmed" });
