import type { Species } from "../../../lib/animals.js";
import { exactTime, type Queryable } from "../../../lib/db.js";
import { coarsen, toWkt } from "../../../lib/geo.js";
import type { TimeIdCursor } from "../../pagination.js";
import type { ModerationState } from "../schemas.js";
import { coarseColumns } from "../sql.js";
import type { CreateSightingBody } from "./schemas.js";

/** The new sighting with its stored coarse point, which its event carries. */
export interface CreatedSighting {
  id: string;
  createdAt: Date;
  coarseLat: number;
  coarseLon: number;
}

export async function insertSighting(
  client: Queryable,
  reporterId: string,
  body: CreateSightingBody,
): Promise<CreatedSighting> {
  const { rows } = await client.query<CreatedSighting>(
    `insert into safety_sighting (lost_report_id, reporter_id, location, coarse_location, seen_at, note, species, breed, colors)
     values ($1::uuid, $2::text, $3::geography, $4::geography, $5::timestamptz, $6::text, $7::text, $8::text, $9::text[])
     returning id, created_at as "createdAt", ${coarseColumns("coarse_location")}`,
    [
      body.lostReportId ?? null,
      reporterId,
      toWkt(body.location),
      toWkt(coarsen(body.location)),
      body.seenAt,
      body.note ?? null,
      body.animal?.species ?? null,
      body.animal?.breed ?? null,
      body.animal?.colors ?? [],
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
  species: Species | null;
  breed: string | null;
  colors: string[];
  createdAt: Date;
  /** created_at as text, microseconds intact, for the cursor. */
  cursorAt: string;
  moderationState: ModerationState | null;
}

/** Who is reading a report's sightings. */
export interface SightingViewer {
  actorId: string | null;
  isAdmin: boolean;
  /** The report's owner or a moderator (admin): sees every note, and marks what it lists as seen. */
  reviews: boolean;
}

/**
 * Sightings of one lost report, newest first. Moderated sightings are left
 * out, except for admins and for the sighting's own reporter, who see them
 * marked. A note shows once the owner or a moderator has seen the sighting
 * (reviewed_at, markReviewed), and always to them, to the sighting's
 * reporter, and for a sighting the report's owner made.
 */
export async function listSightings(
  client: Queryable,
  report: { id: string; reporterId: string },
  viewer: SightingViewer,
  after: TimeIdCursor | null,
  limit: number,
): Promise<SightingRow[]> {
  const { rows } = await client.query<SightingRow>(
    `select s.id, s.lost_report_id as "lostReportId",
       ${coarseColumns("s.coarse_location")},
       s.seen_at as "seenAt",
       case when $7::boolean or s.reviewed_at is not null or s.reporter_id in ($2::text, $8::text) then s.note end as note,
       s.species, s.breed, s.colors, s.created_at as "createdAt", ${exactTime("s.created_at")} as "cursorAt",
       m.state as "moderationState"
     from safety_sighting s
     left join moderation_content_state m on m.target_type = 'sighting' and m.target_id = s.id
     where s.lost_report_id = $1::uuid
       and (m.state is null or $3::boolean or s.reporter_id = $2::text)
       and ($4::timestamptz is null or (s.created_at, s.id) < ($4::timestamptz, $5::uuid))
     order by s.created_at desc, s.id desc
     limit $6::int`,
    [report.id, viewer.actorId, viewer.isAdmin, after?.at ?? null, after?.id ?? null, limit, viewer.reviews, report.reporterId],
  );
  return rows;
}

/** The owner or a moderator listed these sightings: from now on their notes are public. */
export async function markReviewed(client: Queryable, ids: string[]): Promise<void> {
  if (ids.length === 0) return;
  await client.query(`update safety_sighting set reviewed_at = now() where id = any($1::uuid[]) and reviewed_at is null`, [ids]);
}
