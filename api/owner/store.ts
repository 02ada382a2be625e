import { exactTime, type Queryable } from "../../lib/db.js";
import type { TimeIdCursor } from "../pagination.js";
import { foundReportColumns, lostReportColumns, type FoundReportRow, type LostReportRow } from "../safety/reports/store.js";

type Cursored<R> = R & { cursorAt: string };

const mine = (table: string, columns: string) =>
  `select ${columns}, ${exactTime("r.created_at")} as "cursorAt" from ${table} r
   where r.reporter_id = $1::text
     and ($2::timestamptz is null or (r.created_at, r.id) < ($2::timestamptz, $3::uuid))
   order by r.created_at desc, r.id desc
   limit $4::int`;

/** The reporter's lost reports, newest first, moderated ones included (reporter index). */
export async function listMyLostReports(client: Queryable, reporterId: string, after: TimeIdCursor | null, limit: number) {
  const { rows } = await client.query<Cursored<LostReportRow>>(mine("safety_lost_report", lostReportColumns), [
    reporterId,
    after?.at ?? null,
    after?.id ?? null,
    limit,
  ]);
  return rows;
}

export async function listMyFoundReports(client: Queryable, reporterId: string, after: TimeIdCursor | null, limit: number) {
  const { rows } = await client.query<Cursored<FoundReportRow>>(mine("safety_found_report", foundReportColumns), [
    reporterId,
    after?.at ?? null,
    after?.id ?? null,
    limit,
  ]);
  return rows;
}
