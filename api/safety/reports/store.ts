import { actorSuspendedSql } from "../../../lib/accounts.js";
import { takeTokenSql, type BucketSpec } from "../../../lib/buckets.js";
import type { Species } from "../../../lib/animals.js";
import type { Queryable } from "../../../lib/db.js";
import { EventType } from "../../../lib/events.js";
import { coarsen, toWkt } from "../../../lib/geo.js";
import { pointJson, recordWithEvent, type EventLog } from "../../../lib/outbox.js";
import type { ModerationState } from "../schemas.js";
import { coarseColumns, moderationStateOf } from "../sql.js";
import type { CreateFoundReportBody, CreateLostReportBody } from "./schemas.js";

export interface CreatedReport {
  id: string;
  createdAt: Date;
}

/**
 * A throttled create is ONE statement: unless the reporter is suspended, take
 * a creation token, and only if one was taken insert the report and its
 * outbox event (recordWithEvent). One round trip, atomic on its own (no
 * begin/commit), with the spec's suspension check in it (the route's
 * `suspension: "in-statement"`, api/plugins/auth.ts): the hot path that
 * `npm run bench` and `npm run bench:statements` measure. `insert` uses $4
 * for the report id and $5 for the reporter, then its own values, and
 * selects `from token`. The event's coarse point is the stored row's.
 */
const throttledCreate = (name: string, bucket: BucketSpec, insert: string, values: unknown[]) => ({
  name,
  ctes: `token as (${takeTokenSql("$1::text", "$2::double precision", "$3::double precision", `not ${actorSuspendedSql("$5::text")}`)}),
     created as (${insert})`,
  values: [bucket.key, bucket.capacity, bucket.refillPerSecond, ...values],
  columns: `created.id, created.created_at as "createdAt"`,
});

const createdLocation = { location: pointJson("created.coarse_location") };

/** What a new report is given besides its body: its lifetime, and the animal it was made from. */
export interface NewReportOptions {
  /** REPORT_TTL_DAYS: expires_at is creation + this many days. */
  ttlDays: number;
  animalId?: string;
}

/** Null when the throttle refused, or the reporter is suspended. */
export function insertLostReport(
  client: Queryable,
  id: string,
  reporterId: string,
  body: CreateLostReportBody,
  bucket: BucketSpec,
  log: EventLog,
  options: NewReportOptions,
): Promise<CreatedReport | null> {
  const { animal } = body;
  const write = throttledCreate(
    "lost-report-create",
    bucket,
    `insert into safety_lost_report (
       id, reporter_id, animal_name, species, breed, colors, sex, microchip_id, distinguishing_marks,
       last_seen_at, location, coarse_location, description, verification_detail, expires_at, animal_id)
     select $4::uuid, $5::text, $6::text, $7::text, $8::text, $9::text[], $10::text, $11::text, $12::text,
       $13::timestamptz, $14::geography, $15::geography, $16::text, $17::text,
       now() + make_interval(days => $18::int), $19::uuid
     from token
     returning id, created_at, coarse_location`,
    [
      id,
      reporterId,
      animal.name ?? null,
      animal.species,
      animal.breed ?? null,
      animal.colors ?? [],
      animal.sex ?? null,
      animal.microchipId ?? null,
      animal.distinguishingMarks ?? null,
      body.lastSeenAt,
      toWkt(body.location),
      toWkt(coarsen(body.location)),
      body.description ?? null,
      body.verificationDetail ?? null,
      options.ttlDays,
      options.animalId ?? null,
    ],
  );
  return recordWithEvent<CreatedReport, typeof EventType.AnimalLostReported, "location">(
    client,
    write,
    EventType.AnimalLostReported,
    {
      reportId: id,
      reporterId,
      species: animal.species,
      lastSeenAt: body.lastSeenAt,
      ...(options.animalId ? { animalId: options.animalId } : {}),
    },
    createdLocation,
    log,
  );
}

/** Null when the throttle refused, or the reporter is suspended. */
export function insertFoundReport(
  client: Queryable,
  id: string,
  reporterId: string,
  body: CreateFoundReportBody,
  bucket: BucketSpec,
  log: EventLog,
  options: NewReportOptions,
): Promise<CreatedReport | null> {
  const { animal } = body;
  const write = throttledCreate(
    "found-report-create",
    bucket,
    `insert into safety_found_report (
       id, reporter_id, species, breed, colors, sex, microchip_id, distinguishing_marks,
       found_at, location, coarse_location, description, expires_at)
     select $4::uuid, $5::text, $6::text, $7::text, $8::text[], $9::text, $10::text, $11::text,
       $12::timestamptz, $13::geography, $14::geography, $15::text, now() + make_interval(days => $16::int)
     from token
     returning id, created_at, coarse_location`,
    [
      id,
      reporterId,
      animal.species,
      animal.breed ?? null,
      animal.colors ?? [],
      animal.sex ?? null,
      animal.microchipId ?? null,
      animal.distinguishingMarks ?? null,
      body.foundAt,
      toWkt(body.location),
      toWkt(coarsen(body.location)),
      body.description ?? null,
      options.ttlDays,
    ],
  );
  return recordWithEvent<CreatedReport, typeof EventType.AnimalFoundReported, "location">(
    client,
    write,
    EventType.AnimalFoundReported,
    { reportId: id, reporterId, species: animal.species, foundAt: body.foundAt },
    createdLocation,
    log,
  );
}

export interface ReportRowBase {
  id: string;
  reporterId: string;
  status: "open" | "reunited" | "closed" | "cancelled";
  species: Species;
  breed: string | null;
  colors: string[];
  sex: string | null;
  microchipId: string | null;
  distinguishingMarks: string | null;
  lat: number;
  lon: number;
  coarseLat: number;
  coarseLon: number;
  description: string | null;
  resolvedAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
  /** Null only for a report closed before reports had a lifetime. */
  expiresAt: Date | null;
  closedReason: "expired" | null;
  moderationState: ModerationState | null;
}

export interface LostReportRow extends ReportRowBase {
  animalName: string | null;
  lastSeenAt: Date;
  verificationDetail: string | null;
  flagged: boolean;
  flaggedReason: string | null;
  flaggedBy: string | null;
  flaggedAt: Date | null;
  animalId: string | null;
}

export interface FoundReportRow extends ReportRowBase {
  foundAt: Date;
}

const commonColumns = `r.id, r.reporter_id as "reporterId", r.status, r.species, r.breed, r.colors, r.sex,
  r.microchip_id as "microchipId", r.distinguishing_marks as "distinguishingMarks",
  st_y(r.location::geometry) as lat, st_x(r.location::geometry) as lon,
  ${coarseColumns("r.coarse_location")},
  r.description, r.resolved_at as "resolvedAt", r.created_at as "createdAt", r.updated_at as "updatedAt",
  r.expires_at as "expiresAt", r.closed_reason as "closedReason"`;

/** The select list of a LostReportRow over `safety_lost_report r` (the owner listings use it too). */
export const lostReportColumns = `${commonColumns}, r.animal_name as "animalName", r.last_seen_at as "lastSeenAt",
  r.verification_detail as "verificationDetail", r.flagged, r.flagged_reason as "flaggedReason",
  r.flagged_by as "flaggedBy", r.flagged_at as "flaggedAt", r.animal_id as "animalId",
  ${moderationStateOf("lost_report", "r.id")} as "moderationState"`;

/** The select list of a FoundReportRow over `safety_found_report r`. */
export const foundReportColumns = `${commonColumns}, r.found_at as "foundAt",
  ${moderationStateOf("found_report", "r.id")} as "moderationState"`;

export async function getLostReport(client: Queryable, id: string): Promise<LostReportRow | null> {
  const { rows } = await client.query<LostReportRow>(`select ${lostReportColumns} from safety_lost_report r where r.id = $1::uuid`, [id]);
  return rows[0] ?? null;
}

export async function getFoundReport(client: Queryable, id: string): Promise<FoundReportRow | null> {
  const { rows } = await client.query<FoundReportRow>(`select ${foundReportColumns} from safety_found_report r where r.id = $1::uuid`, [id]);
  return rows[0] ?? null;
}

/** The two report tables, which share their status, resolve and moderation columns. */
export type ReportKind = "lost" | "found";
export const reportTable: Record<ReportKind, string> = { lost: "safety_lost_report", found: "safety_found_report" };
export const moderationTarget: Record<ReportKind, string> = { lost: "lost_report", found: "found_report" };

export interface LockedReport {
  id: string;
  reporterId: string;
  status: string;
  moderationState: ModerationState | null;
}

/** Locks the report row: serialises resolves, and relay messages counted against the daily cap. */
export async function lockReport(client: Queryable, kind: ReportKind, id: string): Promise<LockedReport | null> {
  const { rows } = await client.query<LockedReport>(
    `select r.id, r.reporter_id as "reporterId", r.status,
       ${moderationStateOf(moderationTarget[kind], "r.id")} as "moderationState"
     from ${reportTable[kind]} r where r.id = $1::uuid
     for update`,
    [id],
  );
  return rows[0] ?? null;
}

/** Closes a report: it leaves the open-only alerts (and their partial GiST index) at once. */
export async function resolveReport(
  client: Queryable,
  kind: ReportKind,
  id: string,
  outcome: "reunited" | "closed",
): Promise<{ status: string; resolvedAt: Date }> {
  const { rows } = await client.query<{ status: string; resolvedAt: Date }>(
    `update ${reportTable[kind]} set status = $2::text, resolved_at = now(), updated_at = now()
     where id = $1::uuid
     returning status, resolved_at as "resolvedAt"`,
    [id, outcome],
  );
  return rows[0]!;
}

/** The animal's open, unmoderated lost report, if it has one (the tag page relays to it). */
export async function openLostReportOf(client: Queryable, animalId: string): Promise<{ id: string; lastSeenAt: Date } | null> {
  const { rows } = await client.query<{ id: string; lastSeenAt: Date }>(
    `select r.id, r.last_seen_at as "lastSeenAt" from safety_lost_report r
     where r.animal_id = $1::uuid and r.status = 'open' and ${moderationStateOf("lost_report", "r.id")} is null
     order by r.created_at desc limit 1`,
    [animalId],
  );
  return rows[0] ?? null;
}
