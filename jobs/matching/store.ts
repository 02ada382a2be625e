import type { Queryable } from "../../lib/db.js";
import type { MatchKind, MatchPair } from "../../lib/matches.js";
import type { MatchSubjectRef } from "./task.js";
import type { MatchSubject } from "./score.js";

/** A report or sighting as the matcher sees it: what scoring reads, who reported it, and whether it may take part. */
export interface MatchSide extends MatchSubject {
  ref: MatchSubjectRef;
  reporterId: string;
  /** Open (sightings always are) and not quarantined or removed. */
  eligible: boolean;
}

const point = (column: string) => `st_y(${column}::geometry) as lat, st_x(${column}::geometry) as lon`;
const unmoderated = (targetType: string, id: string) =>
  `not exists (select from moderation_content_state m where m.target_type = '${targetType}' and m.target_id = ${id})`;

/** The dHashes of a report's ready photos that no moderator hid, oldest first; sightings have none. */
const readyPhotoHashes = (column: string) =>
  `array(select p.phash from photo p
     where p.${column} = r.id and p.status = 'ready'
       and ${unmoderated("photo", "p.id")}
     order by p.created_at, p.id)`;

/** Selects a side's columns from `r` (its table), `at` being its time column. */
const sideColumns = (kind: MatchSubjectRef["kind"], at: string) => {
  const report = kind !== "sighting";
  return `r.id, r.reporter_id as "reporterId", r.species, r.breed, r.colors,
    ${report ? "r.sex, r.microchip_id" : "null::text as sex, null::text"} as "microchipId",
    ${report ? "r.distinguishing_marks" : "null::text"} as marks,
    ${report ? "r.description" : "r.note"} as description,
    ${point("r.coarse_location")}, r.${at} as at,
    ${report ? readyPhotoHashes(kind === "lost" ? "lost_report_id" : "found_report_id") : "'{}'::text[]"} as "photoHashes",
    ${report ? "r.status = 'open'" : "true"}
      and ${unmoderated(kind === "lost" ? "lost_report" : kind === "found" ? "found_report" : "sighting", "r.id")} as eligible`;
};

const tables = {
  lost: { table: "safety_lost_report", at: "last_seen_at" },
  found: { table: "safety_found_report", at: "found_at" },
  sighting: { table: "safety_sighting", at: "seen_at" },
} as const;

interface SideRow {
  id: string;
  reporterId: string;
  species: string | null;
  breed: string | null;
  colors: string[];
  sex: string | null;
  microchipId: string | null;
  marks: string | null;
  description: string | null;
  lat: number;
  lon: number;
  at: Date;
  photoHashes: string[];
  eligible: boolean;
}

const toSide = (kind: MatchSubjectRef["kind"], row: SideRow): MatchSide => ({
  ref: { kind, id: row.id },
  reporterId: row.reporterId,
  eligible: row.eligible,
  species: row.species ?? "",
  breed: row.breed,
  colors: row.colors,
  sex: row.sex,
  microchipId: row.microchipId,
  marks: row.marks,
  description: row.description,
  point: { lat: row.lat, lon: row.lon },
  at: row.at,
  photoHashes: row.photoHashes,
});

export async function loadSide(client: Queryable, ref: MatchSubjectRef): Promise<MatchSide | null> {
  const { table, at } = tables[ref.kind];
  const { rows } = await client.query<SideRow>({
    name: `match-load-${ref.kind}`,
    text: `select ${sideColumns(ref.kind, at)} from ${table} r where r.id = $1::uuid`,
    values: [ref.id],
  });
  const row = rows[0];
  // An unlinked sighting without an animal description does not take part.
  if (!row || row.species === null) return null;
  return toSide(ref.kind, row);
}

/** The candidate window's limits, in metres and seconds. */
export interface CandidateWindow {
  radiusM: number;
  lostAfterMs: number;
  lostBeforeMs: number;
}

/** A subject of the window as SQL expressions: a query's parameters, or a joined row's columns. */
interface SubjectSql {
  species: string;
  /** The subject's coarse point, as geography. */
  origin: string;
  at: string;
  radiusM: string;
  lostAfterS: string;
  lostBeforeS: string;
}

/**
 * The contract's candidate window over a row `r` of `kind`, through each
 * table's partial GiST index on (species, coarse point, time): the same
 * species within radius, open (or, for a sighting, unlinked), and the lost
 * report last seen at most 2 h after the other's time and at most 60 days
 * before it. One definition for the matcher's candidates and the consumer's
 * test of whether a lost report has any (lostReportsWithMatchWork).
 */
const candidateFilter = (kind: MatchSubjectRef["kind"], s: SubjectSql) => {
  const { at } = tables[kind];
  const open = kind === "sighting" ? "r.lost_report_id is null" : "r.status = 'open'";
  // Relative to the lost report's lastSeenAt (L) and the other's time (O): O - 60 d <= L <= O + 2 h.
  const window =
    kind === "lost"
      ? `r.last_seen_at between ${s.at} - make_interval(secs => ${s.lostBeforeS}) and ${s.at} + make_interval(secs => ${s.lostAfterS})`
      : `r.${at} between ${s.at} - make_interval(secs => ${s.lostAfterS}) and ${s.at} + make_interval(secs => ${s.lostBeforeS})`;
  return `r.species = ${s.species} and ${open}
        and st_dwithin(r.coarse_location, ${s.origin}, ${s.radiusM}, false)
        and ${window}`;
};

/**
 * The candidates of a side in the window (candidateFilter), not moderated.
 * A named statement per kind: planned once per connection, where planning
 * the union took about as long as running it (a job's body for a lost
 * report with no candidates, over 1,000 in a row: 2.3 ms with the matcher's
 * statements planned at every run, 0.9 ms with them named).
 */
export async function findCandidates(client: Queryable, side: MatchSide, window: CandidateWindow): Promise<MatchSide[]> {
  const subject: SubjectSql = {
    species: "$1::text",
    origin: "st_setsrid(st_makepoint($2::double precision, $3::double precision), 4326)::geography",
    at: "$4::timestamptz",
    radiusM: "$5::double precision",
    lostAfterS: "$6::double precision",
    lostBeforeS: "$7::double precision",
  };
  const values = [side.species, side.point.lon, side.point.lat, side.at, window.radiusM, window.lostAfterMs / 1000, window.lostBeforeMs / 1000];
  const nearby = (kind: MatchSubjectRef["kind"]) =>
    `select ${sideColumns(kind, tables[kind].at)}, '${kind}' as kind from ${tables[kind].table} r
      where ${candidateFilter(kind, subject)}`;
  const sql =
    side.ref.kind === "lost"
      ? `select * from (${nearby("found")} union all ${nearby("sighting")}) c where c.eligible`
      : `select * from (${nearby("lost")}) c where c.eligible`;
  const { rows } = await client.query<SideRow & { kind: MatchSubjectRef["kind"] }>({ name: `match-candidates-${side.ref.kind}`, text: sql, values });
  return rows.map((row) => toSide(row.kind, row));
}

/**
 * Of these lost reports, the ones a matching job could act on: with a found
 * report or unlinked sighting in the candidate window, or with a suggestion
 * to rescore or withdraw. For any other, the job would find no candidate and
 * nothing to withdraw. Moderation is left to the job: this may keep more
 * than the job will match, never fewer. A select of their ids as text, for
 * the consumer's reaction checks; arguments are SQL (placeholders).
 *
 * The suggestions are probed per report (`offset 0` keeps the EXISTS from
 * becoming a hash of the whole table): the consumer plans this once per
 * connection, and a hash chosen while safety_match was small would read all
 * of it at every batch once it had grown (see uncoveredFanoutsSql).
 */
export function lostReportsWithMatchWorkSql(ids: string, window: { radiusM: string; lostAfterS: string; lostBeforeS: string }): string {
  const subject: SubjectSql = { species: "l.species", origin: "l.coarse_location", at: "l.last_seen_at", ...window };
  return `select l.id::text from safety_lost_report l
     where l.id = any(${ids})
       and (exists (select from safety_match m where m.lost_report_id = l.id offset 0)
         or exists (select from safety_found_report r where ${candidateFilter("found", subject)})
         or exists (select from safety_sighting r where ${candidateFilter("sighting", subject)}))`;
}

/** A pair as matching scored it: lib/matches.ts's MatchPair, the row's columns the API reads too. */
export type ScoredPair = MatchPair;

/**
 * Writes the pairs at or above the threshold: new ones are inserted, and a
 * re-run updates a suggestion's score and reasons. A confirmed or dismissed
 * pair is left as it is, so a dismissed pair never comes back. Returns the
 * pairs inserted by this call.
 */
export async function upsertSuggestions(client: Queryable, pairs: ScoredPair[]): Promise<Array<{ id: string; lostReportId: string; kind: MatchKind; targetId: string }>> {
  if (pairs.length === 0) return [];
  const { rows } = await client.query<{ id: string; lostReportId: string; kind: MatchKind; targetId: string; inserted: boolean }>(
    `insert into safety_match (lost_report_id, kind, target_id, score, reasons, distance_m)
     select p.lost_report_id, p.kind, p.target_id, p.score, string_to_array(p.reasons, ','), p.distance_m
     from unnest($1::uuid[], $2::text[], $3::uuid[], $4::double precision[], $5::text[], $6::double precision[])
       as p(lost_report_id, kind, target_id, score, reasons, distance_m)
     on conflict (lost_report_id, kind, target_id) do update
       set score = excluded.score, reasons = excluded.reasons, distance_m = excluded.distance_m, updated_at = now()
       where safety_match.status = 'suggested'
     returning id, lost_report_id as "lostReportId", kind, target_id as "targetId", (xmax = 0) as inserted`,
    [
      pairs.map((p) => p.lostReportId),
      pairs.map((p) => p.kind),
      pairs.map((p) => p.targetId),
      pairs.map((p) => p.score),
      pairs.map((p) => p.reasons.join(",")),
      pairs.map((p) => p.distanceM),
    ],
  );
  return rows.filter((r) => r.inserted).map(({ inserted: _inserted, ...row }) => row);
}

/** Suggestions of this side that no longer reach the threshold (a PATCH moved the report, say) are withdrawn. */
export async function withdrawSuggestions(client: Queryable, ref: MatchSubjectRef, keep: ScoredPair[]): Promise<number> {
  const column = ref.kind === "lost" ? "lost_report_id" : "target_id";
  const kindFilter = ref.kind === "lost" ? "" : `and kind = '${ref.kind === "found" ? "found_report" : "sighting"}'`;
  const { rowCount } = await client.query({
    name: `match-withdraw-${ref.kind}`,
    text: `delete from safety_match
     where ${column} = $1::uuid ${kindFilter} and status = 'suggested'
       and not (coalesce(id in (select m.id from safety_match m
         join unnest($2::uuid[], $3::uuid[]) as k(lost_report_id, target_id)
           on m.lost_report_id = k.lost_report_id and m.target_id = k.target_id), false))`,
    values: [ref.id, keep.map((p) => p.lostReportId), keep.map((p) => p.targetId)],
  });
  return rowCount ?? 0;
}

/**
 * The suggestions (status suggested) of these lost reports with their scores: what each
 * owner's listing holds, this transaction's new ones included. A new suggestion alerts its
 * owner only when it stands clearly ahead of the rest (score.ts alertsOwner).
 */
export async function listedSuggestions(client: Queryable, lostReportIds: string[]): Promise<Array<{ lostReportId: string; targetId: string; score: number }>> {
  if (lostReportIds.length === 0) return [];
  const { rows } = await client.query<{ lostReportId: string; targetId: string; score: number }>({
    name: "match-listed-suggestions",
    text: `select lost_report_id as "lostReportId", target_id as "targetId", score from safety_match
     where lost_report_id = any($1::uuid[]) and status = 'suggested'`,
    values: [[...new Set(lostReportIds)]],
  });
  return rows;
}
