import type { Queryable } from "../lib/db.js";

/**
 * Hourly housekeeping run by the relay's worker (jobs/maintenance-prune.ts):
 * tables that would otherwise grow for ever. Audit events, reports and
 * notifications are never pruned here.
 */

/** A bucket idle this long has refilled completely (our buckets refill in ≤ 1 h), so its row carries no state. */
const BUCKET_IDLE_HOURS = 2;

export interface PruneResult {
  buckets: number;
  outboxEvents: number;
}

export async function pruneMaintenance(client: Queryable, outboxRetentionDays: number): Promise<PruneResult> {
  const buckets = await client.query(
    `delete from rate_limit_bucket where updated_at < now() - make_interval(hours => $1::int)`,
    [BUCKET_IDLE_HOURS],
  );
  // Published rows only, in slices, so a large first run does not hold locks for long.
  const outbox = await client.query(
    `delete from outbox_event where id in (
       select id from outbox_event
       where published_at is not null and published_at < now() - make_interval(days => $1::int)
       limit 10000)`,
    [outboxRetentionDays],
  );
  return { buckets: buckets.rowCount ?? 0, outboxEvents: outbox.rowCount ?? 0 };
}
