import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from "node:crypto";
import type { Queryable } from "./db.js";
import { outerValue, type SqlValue } from "./sql.js";

/**
 * Shelter partners (contract part 3): shelters, rescues and vets that
 * publish the animals they take in through the partner API. What the API
 * (admin resource, partner API, public views) and the notifier agree on: the
 * partner's actor id, its password hash, and its public contact.
 */

export const PARTNER_KINDS = ["shelter", "rescue", "vet"] as const;
export type PartnerKind = (typeof PARTNER_KINDS)[number];

/** How a partner's software writes dates; ISO is always accepted besides (api/partners/dates.ts). */
export const PARTNER_DATE_FORMATS = ["YYYY-MM-DD", "MM/DD/YYYY", "DD/MM/YYYY", "DD.MM.YYYY"] as const;
export type PartnerDateFormat = (typeof PARTNER_DATE_FORMATS)[number];

/** Days a partner holds a stray before it may be rehomed, unless the admin sets another figure (0 to 30). */
export const DEFAULT_STRAY_HOLD_DAYS = 5;
export const MAX_STRAY_HOLD_DAYS = 30;

/** A found report's closed_reason once its animal left the partner's custody (lib/report-lifecycle.ts). */
export const LEFT_CUSTODY = "left_custody";

/** Where the partner API lives (api/partners/): every path under it answers as the partner API does, an unknown one included. */
export const PARTNER_API_PREFIX = "/partners";

/** Whether a request URL (path and query) is under the partner API. */
export const isPartnerUrl = (url: string): boolean =>
  url === PARTNER_API_PREFIX || url.startsWith(`${PARTNER_API_PREFIX}/`) || url.startsWith(`${PARTNER_API_PREFIX}?`);

const ACTOR_PREFIX = "partner:";

/** The partner as an actor: the reporter of the found reports it publishes, and a notification recipient. */
export const partnerActorId = (partnerId: string): string => `${ACTOR_PREFIX}${partnerId}`;

/** The partner id of a `partner:<uuid>` actor id, or null for any other actor. */
export function partnerIdOf(actorId: string): string | null {
  const id = actorId.startsWith(ACTOR_PREFIX) ? actorId.slice(ACTOR_PREFIX.length) : "";
  return /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(id) ? id : null;
}

// ---- passwords ----------------------------------------------------------------

/**
 * scrypt with N = 2^15, r = 8, p = 1 (about 32 MiB and 50-100 ms a hash on
 * one core): OWASP's minimum for scrypt. Node's own, no native dependency.
 * Logins are limited to 10 a minute per address, so the cost stays small.
 */
const SCRYPT = { N: 2 ** 15, r: 8, p: 1, keyLength: 32 } as const;
const scryptMaxmem = (N: number, r: number) => 128 * N * r * 2;

function scryptAsync(password: string, salt: Buffer, keyLength: number, options: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scrypt(password, salt, keyLength, options, (err, key) => (err ? reject(err) : resolve(key))),
  );
}

/** A new partner password: 24 random bytes in base64url (32 characters), shown once. */
export const newPartnerPassword = (): string => randomBytes(24).toString("base64url");

/** `scrypt$N$r$p$<salt b64>$<hash b64>`: the parameters travel with the hash, so they can be raised later. */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const { N, r, p, keyLength } = SCRYPT;
  const key = await scryptAsync(password, salt, keyLength, { N, r, p, maxmem: scryptMaxmem(N, r) });
  return ["scrypt", N, r, p, salt.toString("base64"), key.toString("base64")].join("$");
}

/** Compares in constant time; any malformed stored hash is simply no match. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = stored.split("$");
  if (scheme !== "scrypt" || !salt || !hash) return false;
  const N = Number(n);
  const R = Number(r);
  const P = Number(p);
  if (![N, R, P].every((v) => Number.isInteger(v) && v > 0)) return false;
  const expected = Buffer.from(hash, "base64");
  const key = await scryptAsync(password, Buffer.from(salt, "base64"), expected.length, { N, r: R, p: P, maxmem: scryptMaxmem(N, R) });
  return key.length === expected.length && timingSafeEqual(key, expected);
}

/**
 * The hash an unknown login email is compared against, so a wrong email
 * costs the same scrypt as a wrong password and the answer time does not
 * tell which one was wrong.
 */
let decoyHash: Promise<string> | null = null;
export const decoyPasswordHash = (): Promise<string> => (decoyHash ??= hashPassword(newPartnerPassword()));

// ---- public contact -----------------------------------------------------------

/** A partner's public contact, as the admin entered it: public by design (contract), shown with its animals. */
export interface PartnerPublicContact {
  phone?: string;
  email?: string;
  address?: string;
  website?: string;
}

/** What a found report in a partner's custody shows of it, and what the owner's match notification carries. */
export interface FoundReportPartner extends PartnerPublicContact {
  name: string;
  kind: PartnerKind;
}

/** A partner holding a found animal, and until when it holds it as a stray (what the owner's notifications say). */
export interface HoldingPartner extends FoundReportPartner {
  /** ISO time: the end of the day (UTC) intakeDate + strayHoldDays. */
  heldUntil: string;
}

/**
 * SQL for the end of a stray hold: the last millisecond of the day (UTC)
 * `intakeDate + strayHoldDays`, from the found report `report` (found_at is
 * its intake date) and its partner `partner`. Computed on read, so an
 * admin's new strayHoldDays applies to the animals held now.
 */
export const heldUntilSql = (report: string, partner: string): string =>
  `(date_trunc('day', ${report}.found_at, 'UTC') + make_interval(days => ${partner}.stray_hold_days + 1) - interval '1 millisecond')`;

/**
 * SQL giving the partner of the found report `alias` as JSON
 * `{name, kind, phone?, email?, address?, website?}`, or null when the
 * report is not in a partner's custody (no partner, or no longer open).
 */
export const foundReportPartnerSql = (alias: string): string =>
  `(select jsonb_build_object('name', pt.name, 'kind', pt.kind) || jsonb_strip_nulls(pt.public_contact)
    from partner pt where pt.id = ${alias}.partner_id and ${alias}.status = 'open')`;

/** SQL giving the end of the stray hold of the found report `alias` (timestamptz), or null when no partner holds it. */
export const foundReportHeldUntilSql = (alias: string): string =>
  `(select ${heldUntilSql(alias, "pt")} from partner pt where pt.id = ${alias}.partner_id and ${alias}.status = 'open')`;

/** ISO text of a timestamptz in SQL, to the millisecond with a Z, whatever the session's time zone. */
const isoSql = (value: string) => `to_char(${value} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/** The partner in whose custody the found report is and until when it holds it, or null; for the notifier's messages. */
export async function readFoundReportPartner(client: Queryable, foundReportId: string): Promise<HoldingPartner | null> {
  const { rows } = await client.query<{ partner: HoldingPartner | null }>(
    `select ${foundReportPartnerSql("r")} || jsonb_build_object('heldUntil', ${isoSql(foundReportHeldUntilSql("r"))}) as partner
     from safety_found_report r where r.id = $1::uuid`,
    [foundReportId],
  );
  return rows[0]?.partner ?? null;
}

/** Shelters a lost report's owner is pointed to: the first 5 partners within 25 km. */
export const GUIDE_SHELTERS = { radiusKm: 25, limit: 5 } as const;

/**
 * SQL giving the partners not suspended within GUIDE_SHELTERS.radiusKm of
 * the geography `point`, nearest first, at most GUIDE_SHELTERS.limit, as a
 * JSON array of `{name, kind, phone?, email?, address?, website?,
 * distanceKm, strayHoldDays}` (distance to 0.1 km), `[]` when none.
 */
export const nearbyPartnersJsonSql = (point: SqlValue): string => {
  const at = outerValue(point, "np", "near");
  return `(select coalesce(jsonb_agg(near.j order by near.d, near.id), '[]'::jsonb) from (
      select np.id, st_distance(np.location, ${at}, false) as d,
        jsonb_build_object('name', np.name, 'kind', np.kind, 'strayHoldDays', np.stray_hold_days,
          'distanceKm', round((st_distance(np.location, ${at}, false) / 1000)::numeric, 1))
          || jsonb_strip_nulls(np.public_contact) as j
      from partner np
      where np.suspended_at is null and st_dwithin(np.location, ${at}, ${GUIDE_SHELTERS.radiusKm * 1000})
      order by d, np.id
      limit ${GUIDE_SHELTERS.limit}) near)`;
};
