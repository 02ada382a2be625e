import { actorSuspendedSql } from "../../../lib/accounts.js";
import { takeTokenSql, type BucketSpec } from "../../../lib/buckets.js";
import type { Species } from "../../../lib/animals.js";
import type { Queryable } from "../../../lib/db.js";
import type { ModerationTargetType } from "../../../lib/moderation.js";
import { EventType } from "../../../lib/events.js";
import { coarsen, toWkt, type LatLon } from "../../../lib/geo.js";
import type { NotificationLanguage } from "../../../lib/notifications.js";
import { foundReportHeldUntilSql, foundReportPartnerSql, nearbyPartnersJsonSql, type FoundReportPartner } from "../../../lib/partners.js";
import { pointJson, recordWithEvent, type EmbeddedWrite, type EventLog } from "../../../lib/outbox.js";
import { expiryAfter, reportTable, type ClosedReason, type ReportKind } from "../../../lib/report-lifecycle.js";
import { SqlParams } from "../../../lib/sql.js";
import type { ModerationState } from "../schemas.js";
import { coarseColumns, moderationStateOf } from "../sql.js";
import type { CreateFoundReportBody, CreateLostReportBody } from "./schemas.js";

export interface CreatedReport {
  id: string;
  createdAt: Date;
}

/** A create's columns: a new report is `open` by default, and its lifecycle (lib/report-lifecycle.ts) starts at `expiryAfter`. */
type CreateColumns = Record<string, string> & { [C in "status" | "resolved_at" | "closed_reason" | "expiry_warned_for"]?: never };

/**
 * A throttled create is ONE statement: unless the reporter is suspended, take
 * a creation token, and only if one was taken insert the report and its
 * outbox event (recordWithEvent). One round trip, atomic on its own (no
 * begin/commit), with the spec's suspension check in it (the route's
 * `suspension: "in-statement"`, api/plugins/auth.ts): the hot path that
 * `npm run bench` and `npm run bench:statements` measure.
 *
 * This builds the whole insert: the bucket's parameters come first, then the
 * report id and the reporter (which the suspension check reads too), then
 * `columns`, each written with the placeholder `p.add` gave it; the insert
 * selects from the token CTE it names. The event's coarse point is the
 * stored row's.
 */
function throttledCreate(
  name: string,
  kind: ReportKind,
  bucket: BucketSpec,
  report: { id: string; reporterId: string },
  columns: (p: SqlParams) => CreateColumns,
): EmbeddedWrite<CreatedReport> {
  const p = new SqlParams();
  const key = p.add(bucket.key, "text");
  const capacity = p.add(bucket.capacity, "double precision");
  const refill = p.add(bucket.refillPerSecond, "double precision");
  const id = p.add(report.id, "uuid");
  const reporter = p.add(report.reporterId, "text");
  const rest = columns(p);
  return {
    name,
    reads: { token: takeTokenSql(key, capacity, refill, `not ${actorSuspendedSql(reporter)}`) },
    write: `insert into ${reportTable[kind]} (id, reporter_id, ${Object.keys(rest).join(", ")})
     select ${id}, ${reporter}, ${Object.values(rest).join(", ")}
     from token
     returning id, created_at, coarse_location`,
    values: p.values,
    returns: { id: "id", createdAt: "created_at" },
  };
}

/** The animal's columns, which lost and found reports share. */
const animalColumns = (p: SqlParams, animal: CreateFoundReportBody["animal"]) => ({
  species: p.add(animal.species, "text"),
  breed: p.add(animal.breed ?? null, "text"),
  colors: p.add(animal.colors ?? [], "text[]"),
  sex: p.add(animal.sex ?? null, "text"),
  microchip_id: p.add(animal.microchipId ?? null, "text"),
  distinguishing_marks: p.add(animal.distinguishingMarks ?? null, "text"),
});

/**
 * The precise point, the coarse one public reads show, and the filed point a
 * PATCH may move the report at most MAX_MOVE_KM from: the same parameter as
 * the precise point, so the create stays one statement with no more inputs.
 */
const pointColumns = (p: SqlParams, location: LatLon) => {
  const precise = p.add(toWkt(location), "geography");
  return { location: precise, filed_location: precise, coarse_location: p.add(toWkt(coarsen(location)), "geography") };
};

const createdLocation = { location: (row: string) => pointJson(`${row}.coarse_location`) };

/** What a new report is given besides its body: its lifetime, and the animal it was made from. */
export interface NewReportOptions {
  /** REPORT_TTL_DAYS: expires_at is creation + this many days. */
  ttlDays: number;
  animalId?: string;
}

/** What a lost report's event carries for its owner's first-hour guide (notifier/report-guide/): the language and the links. */
export interface GuideOptions {
  lang: NotificationLanguage;
  shareUrl: string;
  flyerUrl: string;
}

/** Null when the throttle refused, or the reporter is suspended. */
export function insertLostReport(
  client: Queryable,
  id: string,
  reporterId: string,
  body: CreateLostReportBody,
  bucket: BucketSpec,
  log: EventLog,
  options: NewReportOptions & { guide?: GuideOptions },
): Promise<CreatedReport | null> {
  const { animal } = body;
  const write = throttledCreate("lost-report-create", "lost", bucket, { id, reporterId }, (p) => ({
    animal_name: p.add(animal.name ?? null, "text"),
    ...animalColumns(p, animal),
    last_seen_at: p.add(body.lastSeenAt, "timestamptz"),
    ...pointColumns(p, body.location),
    description: p.add(body.description ?? null, "text"),
    verification_detail: p.add(body.verificationDetail ?? null, "text"),
    expires_at: expiryAfter(p.add(options.ttlDays, "int")),
    animal_id: p.add(options.animalId ?? null, "uuid"),
  }));
  return recordWithEvent<CreatedReport, typeof EventType.AnimalLostReported, "location" | "shelters">(
    client,
    write,
    EventType.AnimalLostReported,
    {
      reportId: id,
      reporterId,
      species: animal.species,
      lastSeenAt: body.lastSeenAt,
      ...(options.animalId ? { animalId: options.animalId } : {}),
      ...options.guide,
    },
    // The shelters near the stored coarse point, read in the create's one statement.
    { ...createdLocation, shelters: (row: string) => nearbyPartnersJsonSql(`${row}.coarse_location`) },
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
  const write = throttledCreate("found-report-create", "found", bucket, { id, reporterId }, (p) => ({
    ...animalColumns(p, animal),
    found_at: p.add(body.foundAt, "timestamptz"),
    ...pointColumns(p, body.location),
    description: p.add(body.description ?? null, "text"),
    expires_at: expiryAfter(p.add(options.ttlDays, "int")),
  }));
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
  closedReason: ClosedReason | null;
  moderationState: ModerationState | null;
  /** The short link's code (GET /s/{code}). */
  shortCode: string;
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
  /** The shelter partner in whose custody the animal is (lib/partners.ts), while the report is open. */
  partner: FoundReportPartner | null;
  /** The end of that partner's stray hold, while it holds the animal. */
  heldUntil: Date | null;
}

const commonColumns = `r.id, r.reporter_id as "reporterId", r.status, r.species, r.breed, r.colors, r.sex,
  r.microchip_id as "microchipId", r.distinguishing_marks as "distinguishingMarks",
  st_y(r.location::geometry) as lat, st_x(r.location::geometry) as lon,
  ${coarseColumns("r.coarse_location")},
  r.description, r.resolved_at as "resolvedAt", r.created_at as "createdAt", r.updated_at as "updatedAt",
  r.expires_at as "expiresAt", r.closed_reason as "closedReason", r.short_code as "shortCode"`;

/** The select list of a LostReportRow over `safety_lost_report r` (the owner listings use it too). */
export const lostReportColumns = `${commonColumns}, r.animal_name as "animalName", r.last_seen_at as "lastSeenAt",
  r.verification_detail as "verificationDetail", r.flagged, r.flagged_reason as "flaggedReason",
  r.flagged_by as "flaggedBy", r.flagged_at as "flaggedAt", r.animal_id as "animalId",
  ${moderationStateOf("lost_report", "r.id")} as "moderationState"`;

/** The select list of a FoundReportRow over `safety_found_report r`. */
export const foundReportColumns = `${commonColumns}, r.found_at as "foundAt",
  ${moderationStateOf("found_report", "r.id")} as "moderationState",
  ${foundReportPartnerSql("r")} as partner, ${foundReportHeldUntilSql("r")} as "heldUntil"`;

export async function getLostReport(client: Queryable, id: string): Promise<LostReportRow | null> {
  const { rows } = await client.query<LostReportRow>(`select ${lostReportColumns} from safety_lost_report r where r.id = $1::uuid`, [id]);
  return rows[0] ?? null;
}

export async function getFoundReport(client: Queryable, id: string): Promise<FoundReportRow | null> {
  const { rows } = await client.query<FoundReportRow>(`select ${foundReportColumns} from safety_found_report r where r.id = $1::uuid`, [id]);
  return rows[0] ?? null;
}

/** The two report tables share their status, resolve and moderation columns (the lifecycle: lib/report-lifecycle.ts). */
export type { ReportKind };
export const moderationTarget: Record<ReportKind, ModerationTargetType> = { lost: "lost_report", found: "found_report" };

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
