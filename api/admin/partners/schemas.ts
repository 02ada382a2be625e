import { z } from "zod";
import { DEFAULT_STRAY_HOLD_DAYS, MAX_STRAY_HOLD_DAYS, PARTNER_DATE_FORMATS, PARTNER_KINDS } from "../../../lib/partners.js";
import { Point } from "../../schemas.js";
import type { PartnerRow } from "./store.js";

const text = (max: number) => z.string().trim().min(1).max(max);

export const PartnerIdParams = z.object({ id: z.uuid() });

export const PartnerPublicContact = z
  .strictObject({
    phone: text(40).optional(),
    email: z.email().max(254).optional(),
    address: text(500).optional(),
    website: text(500).optional(),
  })
  .describe("Public by design: shown with the partner's animals and in the owner's match notification.")
  .meta({ id: "PartnerPublicContact" });

const StrayHoldDays = z
  .number()
  .int()
  .min(0)
  .max(MAX_STRAY_HOLD_DAYS)
  .describe(
    "Days it holds a stray after intake before it may be rehomed: an animal in its custody is held until the end of the day " +
      "(UTC) intakeDate + strayHoldDays, which its views, share page and flyer show and its owner is reminded of.",
  );

const partnerFields = {
  name: text(200),
  location: Point.describe("Where its animals are: the found point of every animal it publishes."),
  publicContact: PartnerPublicContact,
  dateFormat: z.enum(PARTNER_DATE_FORMATS).describe("How its software writes dates; ISO dates are accepted besides."),
};

export const CreatePartnerBody = z
  .strictObject({
    name: partnerFields.name,
    kind: z.enum(PARTNER_KINDS),
    location: partnerFields.location,
    publicContact: partnerFields.publicContact,
    loginEmail: z.email().max(254).describe("What the partner's software logs in with (POST /partners/v2/auth/login)."),
    dateFormat: partnerFields.dateFormat.default("YYYY-MM-DD"),
    strayHoldDays: StrayHoldDays.default(DEFAULT_STRAY_HOLD_DAYS),
  })
  .meta({ id: "CreatePartner" });

/** An edit: any of these, each replacing what was there (publicContact as a whole). At least one. */
export const UpdatePartnerBody = z
  .strictObject({
    name: partnerFields.name.optional(),
    location: partnerFields.location.optional(),
    publicContact: partnerFields.publicContact.optional(),
    dateFormat: partnerFields.dateFormat.optional(),
    strayHoldDays: StrayHoldDays.optional(),
  })
  .refine((body) => Object.values(body).some((value) => value !== undefined), "give at least one field to change")
  .meta({ id: "UpdatePartner" });

export type UpdatePartnerBody = z.output<typeof UpdatePartnerBody>;

export const PartnerPassword = z
  .object({ id: z.uuid(), password: z.string().describe("Shown once: only its scrypt hash is stored.") })
  .meta({ id: "PartnerPassword" });

export const SuspendPartnerBody = z
  .strictObject({
    reasonCode: z.string().regex(/^[a-z][a-z0-9_]{1,63}$/, "must be a lowercase code such as spam, scam or abuse"),
    reasonDetail: text(2000),
  })
  .meta({ id: "SuspendPartner" });

export const RestorePartnerBody = z.strictObject({ reason: text(2000) }).meta({ id: "RestorePartner" });

export const Partner = z
  .object({
    id: z.uuid(),
    actorId: z.string().describe("partner:<id>: the reporter of its animals and the recipient of its notifications."),
    name: z.string(),
    kind: z.enum(PARTNER_KINDS),
    location: Point,
    publicContact: PartnerPublicContact,
    loginEmail: z.string(),
    dateFormat: z.enum(PARTNER_DATE_FORMATS),
    strayHoldDays: z.number().int(),
    status: z.enum(["active", "suspended"]),
    suspendedAt: z.string().optional(),
    suspendedBy: z.string().optional(),
    suspensionReason: z.string().optional(),
    restoredAt: z.string().optional(),
    restoredBy: z.string().optional(),
    createdBy: z.string(),
    createdAt: z.string(),
    passwordRotatedAt: z.string().nullable(),
  })
  .meta({ id: "Partner" });

export function partnerView(row: PartnerRow): z.input<typeof Partner> {
  return {
    id: row.id,
    actorId: `partner:${row.id}`,
    name: row.name,
    kind: row.kind,
    location: { lat: row.lat, lon: row.lon },
    publicContact: row.publicContact,
    loginEmail: row.loginEmail,
    dateFormat: row.dateFormat,
    strayHoldDays: row.strayHoldDays,
    status: row.suspendedAt ? "suspended" : "active",
    ...(row.suspendedAt
      ? { suspendedAt: row.suspendedAt.toISOString(), suspendedBy: row.suspendedBy ?? undefined, suspensionReason: row.suspensionReason ?? undefined }
      : { restoredAt: row.restoredAt?.toISOString(), restoredBy: row.restoredBy ?? undefined }),
    createdBy: row.createdBy,
    createdAt: row.createdAt.toISOString(),
    passwordRotatedAt: row.passwordRotatedAt?.toISOString() ?? null,
  };
}
