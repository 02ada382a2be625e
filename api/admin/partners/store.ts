import type { Queryable } from "../../../lib/db.js";
import { exactTime } from "../../../lib/db.js";
import { toWkt, type LatLon } from "../../../lib/geo.js";
import { partnerActorId, type PartnerDateFormat, type PartnerKind, type PartnerPublicContact } from "../../../lib/partners.js";
import type { TimeIdCursor } from "../../pagination.js";

/** SQL of the partner table for the admin resource: create, list, rotate, suspend, restore. */

export interface PartnerRow {
  id: string;
  name: string;
  kind: PartnerKind;
  lat: number;
  lon: number;
  publicContact: PartnerPublicContact;
  loginEmail: string;
  dateFormat: PartnerDateFormat;
  strayHoldDays: number;
  createdBy: string;
  createdAt: Date;
  passwordRotatedAt: Date | null;
  suspendedAt: Date | null;
  suspendedBy: string | null;
  suspensionReason: string | null;
  restoredAt: Date | null;
  restoredBy: string | null;
  cursorAt: string;
}

const columns = `p.id, p.name, p.kind, st_y(p.location::geometry) as lat, st_x(p.location::geometry) as lon,
  p.public_contact as "publicContact", p.login_email as "loginEmail", p.date_format as "dateFormat", p.stray_hold_days as "strayHoldDays",
  p.created_by as "createdBy", p.created_at as "createdAt", p.password_rotated_at as "passwordRotatedAt",
  p.suspended_at as "suspendedAt", p.suspended_by as "suspendedBy", p.suspension_reason as "suspensionReason",
  p.restored_at as "restoredAt", p.restored_by as "restoredBy", ${exactTime("p.created_at")} as "cursorAt"`;

export interface NewPartner {
  name: string;
  kind: PartnerKind;
  location: LatLon;
  publicContact: PartnerPublicContact;
  loginEmail: string;
  dateFormat: PartnerDateFormat;
  strayHoldDays: number;
  passwordHash: string;
  createdBy: string;
}

/** Null when the login email is taken (compared case-insensitively). */
export async function insertPartner(client: Queryable, p: NewPartner): Promise<PartnerRow | null> {
  const { rows } = await client.query<PartnerRow>(
    `with p as (
       insert into partner (name, kind, location, public_contact, login_email, password_hash, date_format, created_by, stray_hold_days)
       values ($1::text, $2::text, $3::geography, $4::jsonb, $5::text, $6::text, $7::text, $8::text, $9::int)
       on conflict (lower(login_email)) do nothing
       returning *)
     select ${columns} from p`,
    [p.name, p.kind, toWkt(p.location), JSON.stringify(p.publicContact), p.loginEmail, p.passwordHash, p.dateFormat, p.createdBy, p.strayHoldDays],
  );
  return rows[0] ?? null;
}

/**
 * The partner as a notification recipient: its public email gets `match`
 * email. An admin entered the address, so it counts as confirmed and is
 * written straight into notification_preference (docs/decisions/0070-*).
 * An edit that leaves no public email stops its email.
 */
export async function setPartnerNotificationEmail(client: Queryable, partnerId: string, email: string | undefined): Promise<void> {
  if (!email) {
    await client.query(`update notification_preference set email = null, updated_at = now() where actor_id = $1::text`, [partnerActorId(partnerId)]);
    return;
  }
  await client.query(
    `insert into notification_preference (actor_id, email, email_kinds) values ($1::text, $2::text, array['match'])
     on conflict (actor_id) do update set email = excluded.email, email_kinds = excluded.email_kinds, updated_at = now()`,
    [partnerActorId(partnerId), email],
  );
}

export async function listPartners(client: Queryable, limit: number, after: TimeIdCursor | null): Promise<PartnerRow[]> {
  const { rows } = await client.query<PartnerRow>(
    `select ${columns} from partner p
     where $2::timestamptz is null or (p.created_at, p.id) < ($2::timestamptz, $3::uuid)
     order by p.created_at desc, p.id desc limit $1::int`,
    [limit + 1, after?.at ?? null, after?.id ?? null],
  );
  return rows;
}

export async function lockPartner(client: Queryable, id: string): Promise<PartnerRow | null> {
  const { rows } = await client.query<PartnerRow>(`select ${columns} from partner p where p.id = $1::uuid for update`, [id]);
  return rows[0] ?? null;
}

/** A new password: every token issued under the old one dies with it. */
export async function setPassword(client: Queryable, id: string, passwordHash: string): Promise<void> {
  await client.query(`update partner set password_hash = $2::text, password_rotated_at = now(), updated_at = now() where id = $1::uuid`, [
    id,
    passwordHash,
  ]);
  await client.query(`delete from partner_token where partner_id = $1::uuid`, [id]);
}

/**
 * Suspends (or re-suspends with a new reason). Its tokens die with it: they
 * still identify the partner while it is suspended (403), and are refused
 * (401) once it is restored, when it logs in anew.
 */
export async function suspendPartner(client: Queryable, id: string, by: string, reason: string): Promise<PartnerRow> {
  const { rows } = await client.query<PartnerRow>(
    `with p as (
       update partner set suspended_at = now(), suspended_by = $2::text, suspension_reason = $3::text,
         tokens_valid_after = now(), updated_at = now()
       where id = $1::uuid returning *)
     select ${columns} from p`,
    [id, by, reason],
  );
  return rows[0]!;
}

export async function restorePartner(client: Queryable, id: string, by: string): Promise<PartnerRow> {
  const { rows } = await client.query<PartnerRow>(
    `with p as (
       update partner set suspended_at = null, suspended_by = null, suspension_reason = null,
         restored_at = now(), restored_by = $2::text, updated_at = now()
       where id = $1::uuid returning *)
     select ${columns} from p`,
    [id, by],
  );
  return rows[0]!;
}

/** The fields an admin's edit gives, each replacing the partner's; the partner as it is now. */
export async function updatePartner(
  client: Queryable,
  id: string,
  fields: { name?: string; location?: LatLon; publicContact?: PartnerPublicContact; dateFormat?: PartnerDateFormat; strayHoldDays?: number },
): Promise<PartnerRow> {
  const { rows } = await client.query<PartnerRow>(
    `with p as (
       update partner set name = coalesce($2::text, name), location = coalesce($3::geography, location),
         public_contact = coalesce($4::jsonb, public_contact), date_format = coalesce($5::text, date_format),
         stray_hold_days = coalesce($6::int, stray_hold_days), updated_at = now()
       where id = $1::uuid returning *)
     select ${columns} from p`,
    [
      id,
      fields.name ?? null,
      fields.location ? toWkt(fields.location) : null,
      fields.publicContact ? JSON.stringify(fields.publicContact) : null,
      fields.dateFormat ?? null,
      fields.strayHoldDays ?? null,
    ],
  );
  return rows[0]!;
}
