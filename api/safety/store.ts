import { takeTokenSql, type BucketSpec } from "../../lib/buckets.js";
import type { Queryable } from "../../lib/db.js";
import type { EventType } from "../../lib/events.js";
import { outboxInsertSql } from "../../lib/outbox.js";
import { coarsen, toWkt } from "../../lib/geo.js";
import type {
  AlertsQuery,
  CreateFoundReportBody,
  CreateLostReportBody,
  CreateSightingBody,
  ModerationState,
} from "./schemas.js";

/** A moderation_content_state row makes content invisible on public reads. */
const moderationStateOf = (targetType: string, idColumn: string) =>
  `(select m.state from moderation_content_state m
    where m.target_type = '${targetType}' and m.target_id = ${idColumn})`;

export interface ReportEvent {
  type: EventType;
  data: Record<string, unknown>;
}

export interface CreatedReport {
  id: string;
  createdAt: Date;
  eventId: string;
}

/**
 * A throttled create as ONE statement: take a creation token, and only if one
 * was taken insert the report and its outbox event. One round trip, atomic on
 * its own (no begin/commit): the hot path measured in bench/README.md.
 * `insertSql` uses $4 for the report id, then its own values, and selects
 * `from token`. Null when the throttle refused.
 */
async function createThrottled(
  client: Queryable,
  name: string,
  bucket: BucketSpec,
  insertSql: string,
  values: unknown[],
  event: ReportEvent,
): Promise<CreatedReport | null> {
  const n = 3 + values.length;
  const { rows } = await client.query<CreatedReport>({
    name,
    text: `with token as (${takeTokenSql("$1::text", "$2::double precision", "$3::double precision")}),
     created as (${insertSql}),
     event as (${outboxInsertSql(`$${n + 1}::text`, `$${n + 2}::jsonb`, "created")})
     select created.id, created.created_at as "createdAt", event.id as "eventId" from created, event`,
    values: [bucket.key, bucket.capacity, bucket.refillPerSecond, ...values, event.type, JSON.stringify(event.data)],
  });
  return rows[0] ?? null;
}

export function insertLostReport(
  client: Queryable,
  id: string,
  reporterId: string,
  body: CreateLostReportBody,
  bucket: BucketSpec,
  event: ReportEvent,
): Promise<CreatedReport | null> {
  const { animal } = body;
  return createThrottled(
    client,
    "lost-report-create",
    bucket,
    `insert into safety_lost_report (
       id, reporter_id, animal_name, species, breed, colors, sex, microchip_id, distinguishing_marks,
       last_seen_at, location, coarse_location, description, verification_detail)
     select $4::uuid, $5::text, $6::text, $7::text, $8::text, $9::text[], $10::text, $11::text, $12::text,
       $13::timestamptz, $14::geography, $15::geography, $16::text, $17::text
     from token
     returning id, created_at`,
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
    ],
    event,
  );
}

export function insertFoundReport(
  client: Queryable,
  id: string,
  reporterId: string,
  body: CreateFoundReportBody,
  bucket: BucketSpec,
  event: ReportEvent,
): Promise<CreatedReport | null> {
  const { animal } = body;
  return createThrottled(
    client,
    "found-report-create",
    bucket,
    `insert into safety_found_report (
       id, reporter_id, species, breed, colors, sex, microchip_id, distinguishing_marks,
       found_at, location, coarse_location, description)
     select $4::uuid, $5::text, $6::text, $7::text, $8::text[], $9::text, $10::text, $11::text,
       $12::timestamptz, $13::geography, $14::geography, $15::text
     from token
     returning id, created_at`,
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
    ],
    event,
  );
}

interface ReportRowBase {
  id: string;
  reporterId: string;
  status: "open" | "reunited" | "closed" | "cancelled";
  species: "dog" | "cat" | "bird" | "rabbit" | "other";
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
}

export interface FoundReportRow extends ReportRowBase {
  foundAt: Date;
}

const commonColumns = `r.id, r.reporter_id as "reporterId", r.status, r.species, r.breed, r.colors, r.sex,
  r.microchip_id as "microchipId", r.distinguishing_marks as "distinguishingMarks",
  st_y(r.location::geometry) as lat, st_x(r.location::geometry) as lon,
  st_y(r.coarse_location::geometry) as "coarseLat", st_x(r.coarse_location::geometry) as "coarseLon",
  r.description, r.resolved_at as "resolvedAt", r.created_at as "createdAt", r.updated_at as "updatedAt"`;

export async function getLostReport(client: Queryable, id: string): Promise<LostReportRow | null> {
  const { rows } = await client.query<LostReportRow>(
    `select ${commonColumns}, r.animal_name as "animalName", r.last_seen_at as "lastSeenAt",
       r.verification_detail as "verificationDetail", r.flagged, r.flagged_reason as "flaggedReason",
       r.flagged_by as "flaggedBy", r.flagged_at as "flaggedAt",
       ${moderationStateOf("lost_report", "r.id")} as "moderationState"
     from safety_lost_report r where r.id = $1::uuid`,
    [id],
  );
  return rows[0] ?? null;
}

export async function getFoundReport(client: Queryable, id: string): Promise<FoundReportRow | null> {
  const { rows } = await client.query<FoundReportRow>(
    `select ${commonColumns}, r.found_at as "foundAt",
       ${moderationStateOf("found_report", "r.id")} as "moderationState"
     from safety_found_report r where r.id = $1::uuid`,
    [id],
  );
  return rows[0] ?? null;
}

/** The two report tables, which share their status, resolve and moderation columns. */
export type ReportKind = "lost" | "found";
const reportTable: Record<ReportKind, string> = { lost: "safety_lost_report", found: "safety_found_report" };
const moderationTarget: Record<ReportKind, string> = { lost: "lost_report", found: "found_report" };

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

/** Records one flag per actor; false when this actor had already flagged the report. */
export async function insertFlag(client: Queryable, reportId: string, actorId: string, reason: string): Promise<boolean> {
  const { rowCount } = await client.query(
    `insert into safety_report_flag (lost_report_id, actor_id, reason)
     values ($1::uuid, $2::text, $3::text)
     on conflict do nothing`,
    [reportId, actorId, reason],
  );
  return rowCount === 1;
}

/** The report's flag fields are one slot: the newest flag overwrites it. Status is untouched. */
export async function overwriteFlagSlot(client: Queryable, reportId: string, actorId: string, reason: string): Promise<void> {
  await client.query(
    `update safety_lost_report
     set flagged = true, flagged_reason = $3::text, flagged_by = $2::text, flagged_at = now(), updated_at = now()
     where id = $1::uuid`,
    [reportId, actorId, reason],
  );
}

/** Messages relayed for one report in the last 24 hours, and when the oldest of them leaves that window. */
export async function relayMessagesInLastDay(
  client: Queryable,
  reportId: string,
): Promise<{ count: number; secondsUntilSlot: number }> {
  const { rows } = await client.query<{ count: number; secondsUntilSlot: number | null }>(
    `select count(*)::int as count,
       extract(epoch from min(created_at) + interval '1 day' - now())::double precision as "secondsUntilSlot"
     from safety_relay_message
     where lost_report_id = $1::uuid and created_at > now() - interval '1 day'`,
    [reportId],
  );
  return { count: rows[0]!.count, secondsUntilSlot: rows[0]!.secondsUntilSlot ?? 0 };
}

export async function insertRelayMessage(
  client: Queryable,
  reportId: string,
  message: string,
  fromContact: string,
): Promise<string> {
  const { rows } = await client.query<{ id: string }>(
    `insert into safety_relay_message (lost_report_id, message, from_contact)
     values ($1::uuid, $2::text, $3::text)
     returning id`,
    [reportId, message, fromContact],
  );
  return rows[0]!.id;
}

export interface AlertRow {
  id: string;
  kind: "lost" | "found";
  species: "dog" | "cat" | "bird" | "rabbit" | "other";
  animalName: string | null;
  coarseLat: number;
  coarseLon: number;
  distanceM: number;
  createdAt: Date;
}

/**
 * Open, unmoderated reports whose coarse point lies within the radius,
 * nearest first, keyset-paginated on (distance, id). Only coarse_location is
 * ever compared, so neither the radius nor the distance can be bisected down
 * to a precise point. ST_DWithin on each table's partial GiST index (the
 * index test EXPLAINs this very text).
 */
export const ALERTS_SQL = `with origin as (select $1::geography as pt),
     candidates as (
       select r.id, 'lost' as kind, r.species, r.animal_name as "animalName", r.coarse_location, r.created_at,
              st_distance(r.coarse_location, o.pt) as distance_m
       from safety_lost_report r, origin o
       where $3::text in ('lost', 'all')
         and r.status = 'open'
         and st_dwithin(r.coarse_location, o.pt, $2::double precision)
         and ($4::text is null or r.species = $4::text)
         and ${moderationStateOf("lost_report", "r.id")} is null
       union all
       select r.id, 'found' as kind, r.species, null as "animalName", r.coarse_location, r.created_at,
              st_distance(r.coarse_location, o.pt) as distance_m
       from safety_found_report r, origin o
       where $3::text in ('found', 'all')
         and r.status = 'open'
         and st_dwithin(r.coarse_location, o.pt, $2::double precision)
         and ($4::text is null or r.species = $4::text)
         and ${moderationStateOf("found_report", "r.id")} is null
     )
     select id, kind, species, "animalName",
       st_y(coarse_location::geometry) as "coarseLat", st_x(coarse_location::geometry) as "coarseLon",
       distance_m as "distanceM", created_at as "createdAt"
     from candidates
     where $5::double precision is null or (distance_m, id) > ($5::double precision, $6::uuid)
     order by distance_m, id
     limit $7::int`;

/** The parameters of ALERTS_SQL, in order. */
export function alertsValues(query: AlertsQuery, after: { d: number; id: string } | null, limit: number): unknown[] {
  return [
    toWkt({ lat: query.lat, lon: query.lon }),
    query.radiusKm * 1000,
    query.kind,
    query.species ?? null,
    after?.d ?? null,
    after?.id ?? null,
    limit,
  ];
}

export async function findAlerts(
  client: Queryable,
  query: AlertsQuery,
  after: { d: number; id: string } | null,
  limit: number,
): Promise<AlertRow[]> {
  const { rows } = await client.query<AlertRow>(ALERTS_SQL, alertsValues(query, after, limit));
  return rows;
}

export async function insertSighting(
  client: Queryable,
  reporterId: string,
  body: CreateSightingBody,
): Promise<{ id: string; createdAt: Date }> {
  const { rows } = await client.query<{ id: string; createdAt: Date }>(
    `insert into safety_sighting (lost_report_id, reporter_id, location, coarse_location, seen_at, note)
     values ($1::uuid, $2::text, $3::geography, $4::geography, $5::timestamptz, $6::text)
     returning id, created_at as "createdAt"`,
    [
      body.lostReportId ?? null,
      reporterId,
      toWkt(body.location),
      toWkt(coarsen(body.location)),
      body.seenAt,
      body.note ?? null,
    ],
  );
  return rows[0]!;
}

export interface SightingRow {
  id: string;
  lostReportId: string;
  coarseLat: number;
  coarseLon: number;
  seenAt: Date;
  note: string | null;
  createdAt: Date;
  /** created_at as text, microseconds intact, for the cursor. */
  cursorAt: string;
  moderationState: ModerationState | null;
}

/**
 * Sightings of one lost report, newest first. Moderated sightings are left
 * out, except for admins and for the sighting's own reporter, who see them
 * marked.
 */
export async function listSightings(
  client: Queryable,
  reportId: string,
  viewer: { actorId: string | null; isAdmin: boolean },
  after: { at: string; id: string } | null,
  limit: number,
): Promise<SightingRow[]> {
  const { rows } = await client.query<SightingRow>(
    `select s.id, s.lost_report_id as "lostReportId",
       st_y(s.coarse_location::geometry) as "coarseLat", st_x(s.coarse_location::geometry) as "coarseLon",
       s.seen_at as "seenAt", s.note, s.created_at as "createdAt", s.created_at::text as "cursorAt",
       m.state as "moderationState"
     from safety_sighting s
     left join moderation_content_state m on m.target_type = 'sighting' and m.target_id = s.id
     where s.lost_report_id = $1::uuid
       and (m.state is null or $3::boolean or s.reporter_id = $2::text)
       and ($4::timestamptz is null or (s.created_at, s.id) < ($4::timestamptz, $5::uuid))
     order by s.created_at desc, s.id desc
     limit $6::int`,
    [reportId, viewer.actorId, viewer.isAdmin, after?.at ?? null, after?.id ?? null, limit],
  );
  return rows;
}

