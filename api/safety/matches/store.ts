import type { Species } from "../../../lib/animals.js";
import type { Queryable } from "../../../lib/db.js";
import type { MatchRow, MatchStatus } from "../../../lib/matches.js";
import type { MatchCursor } from "./schemas.js";

export type { MatchRow };

const matchColumns = `m.id, m.lost_report_id as "lostReportId", m.kind, m.target_id as "targetId", m.score, m.reasons,
  m.distance_m as "distanceM", m.status, m.created_at as "createdAt"`;

/** The other side is hidden while it is quarantined or removed: such content is never suggested to anyone. */
const targetUnmoderated = `not exists (select from moderation_content_state s
  where s.target_type = m.kind and s.target_id = m.target_id)`;

const after = (n: number) => `($${n}::double precision is null or (-m.score, m.id) > (-$${n}::double precision, $${n + 1}::uuid))`;

export async function listForLostReport(client: Queryable, lostReportId: string, cursor: MatchCursor | null, limit: number): Promise<MatchRow[]> {
  const { rows } = await client.query<MatchRow>(
    `select ${matchColumns} from safety_match m
     where m.lost_report_id = $1::uuid and ${targetUnmoderated} and ${after(2)}
     order by m.score desc, m.id
     limit $4::int`,
    [lostReportId, cursor?.s ?? null, cursor?.id ?? null, limit],
  );
  return rows;
}

export interface FinderMatchRow extends MatchRow {
  lost: {
    status: "open" | "reunited" | "closed" | "cancelled";
    animalName: string | null;
    species: Species;
    breed: string | null;
    colors: string[];
    sex: string | null;
    distinguishingMarks: string | null;
    lastSeenAt: Date;
    coarseLat: number;
    coarseLon: number;
  };
}

/** The found report's matches with the lost reports' public fields; a moderated lost report is left out. */
export async function listForFoundReport(client: Queryable, foundReportId: string, cursor: MatchCursor | null, limit: number): Promise<FinderMatchRow[]> {
  const { rows } = await client.query<FinderMatchRow>(
    `select ${matchColumns},
       json_build_object('status', r.status, 'animalName', r.animal_name, 'species', r.species, 'breed', r.breed,
         'colors', r.colors, 'sex', r.sex, 'distinguishingMarks', r.distinguishing_marks, 'lastSeenAt', r.last_seen_at,
         'coarseLat', st_y(r.coarse_location::geometry), 'coarseLon', st_x(r.coarse_location::geometry)) as lost
     from safety_match m
     join safety_lost_report r on r.id = m.lost_report_id
     where m.kind = 'found_report' and m.target_id = $1::uuid
       and not exists (select from moderation_content_state s where s.target_type = 'lost_report' and s.target_id = r.id)
       and ${after(2)}
     order by m.score desc, m.id
     limit $4::int`,
    [foundReportId, cursor?.s ?? null, cursor?.id ?? null, limit],
  );
  return rows.map((row) => ({ ...row, lost: { ...row.lost, lastSeenAt: new Date(row.lost.lastSeenAt) } }));
}

export interface LockedMatch extends MatchRow {
  lostReporterId: string;
  targetReporterId: string;
}

/** Locks the match for a decision, with who reported each side. */
export async function lockMatch(client: Queryable, id: string): Promise<LockedMatch | null> {
  const { rows } = await client.query<LockedMatch>(
    `select ${matchColumns}, r.reporter_id as "lostReporterId",
       coalesce(f.reporter_id, s.reporter_id) as "targetReporterId"
     from safety_match m
     join safety_lost_report r on r.id = m.lost_report_id
     left join safety_found_report f on m.kind = 'found_report' and f.id = m.target_id
     left join safety_sighting s on m.kind = 'sighting' and s.id = m.target_id
     where m.id = $1::uuid
     for update of m`,
    [id],
  );
  return rows[0] ?? null;
}

export async function decide(client: Queryable, id: string, status: Exclude<MatchStatus, "suggested">): Promise<MatchRow> {
  const { rows } = await client.query<MatchRow>(
    `update safety_match m set status = $2::text, decided_at = now(), updated_at = now()
     where m.id = $1::uuid
     returning ${matchColumns}`,
    [id, status],
  );
  return rows[0]!;
}

