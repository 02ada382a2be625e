import type { Queryable } from "../../../lib/db.js";

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

