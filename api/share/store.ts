import type { Species } from "../../lib/animals.js";
import type { Queryable } from "../../lib/db.js";
import { foundReportHeldUntilSql, foundReportPartnerSql, type FoundReportPartner } from "../../lib/partners.js";
import { reportTable, type ReportKind } from "../../lib/report-lifecycle.js";
import { moderationTarget } from "../safety/reports/store.js";
import { coarseColumns, moderationStateOf } from "../safety/sql.js";

/** What a share page, its card and its flyer show of a report: public fields and the coarse point only. */
export interface ShareReportRow {
  id: string;
  status: "open" | "reunited" | "closed" | "cancelled";
  closedReason: "expired" | null;
  /** Null for a found report (no name) or a lost one filed without. */
  animalName: string | null;
  species: Species;
  breed: string | null;
  colors: string[];
  sex: string | null;
  distinguishingMarks: string | null;
  description: string | null;
  /** lastSeenAt or foundAt. */
  happenedAt: Date;
  coarseLat: number;
  coarseLon: number;
  shortCode: string;
  updatedAt: Date;
  moderationState: "quarantined" | "removed" | null;
  /** The ready photos public reads may show (a moderated one left out), oldest first. */
  photos: { id: string; displayKey: string; width: number | null; height: number | null }[];
  /** The shelter partner holding a found animal (its public contact), else null. */
  partner: FoundReportPartner | null;
  /** The end of that partner's stray hold, else null. */
  heldUntil: Date | null;
}

const happenedColumn: Record<ReportKind, string> = { lost: "r.last_seen_at", found: "r.found_at" };

/**
 * One report for its share page: a single statement with its photos, so a
 * flyer's ETag and its content come from the same snapshot. Never the
 * precise point, the reporter, the microchip or the verification detail.
 */
export async function findShareReport(client: Queryable, kind: ReportKind, id: string): Promise<ShareReportRow | null> {
  const { rows } = await client.query<ShareReportRow>({
    name: `share-report-${kind}`,
    text: `select r.id, r.status, r.closed_reason as "closedReason",
         ${kind === "lost" ? "r.animal_name" : "null::text"} as "animalName",
         r.species, r.breed, r.colors, r.sex, r.distinguishing_marks as "distinguishingMarks", r.description,
         ${happenedColumn[kind]} as "happenedAt", ${coarseColumns("r.coarse_location")},
         r.short_code as "shortCode", r.updated_at as "updatedAt",
         ${moderationStateOf(moderationTarget[kind], "r.id")} as "moderationState",
         coalesce((select json_agg(json_build_object('id', p.id, 'displayKey', p.display_key, 'width', p.width, 'height', p.height)
                            order by p.created_at, p.id)
                   from photo p
                   where p.${kind}_report_id = r.id and p.status = 'ready' and p.display_key is not null
                     and not exists (select from moderation_content_state m where m.target_type = 'photo' and m.target_id = p.id)),
                  '[]'::json) as photos,
         ${kind === "found" ? foundReportPartnerSql("r") : "null::jsonb"} as partner,
         ${kind === "found" ? foundReportHeldUntilSql("r") : "null::timestamptz"} as "heldUntil"
       from ${reportTable[kind]} r where r.id = $1::uuid`,
    values: [id],
  });
  return rows[0] ?? null;
}

/** The report a short code names, in either table (a code is unique across both: migration 000018). */
export async function findByShortCode(client: Queryable, code: string): Promise<{ kind: ReportKind; id: string } | null> {
  const { rows } = await client.query<{ kind: ReportKind; id: string }>({
    name: "share-short-code",
    text: `select 'lost' as kind, id from safety_lost_report where short_code = $1::text
       union all
       select 'found' as kind, id from safety_found_report where short_code = $1::text
       limit 1`,
    values: [code],
  });
  return rows[0] ?? null;
}
