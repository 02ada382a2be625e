import type { Species } from "../lib/animals.js";
import { withTransaction, type Pool, type Queryable } from "../lib/db.js";
import { EventType } from "../lib/events.js";
import { recordEvent } from "../lib/outbox.js";

/**
 * Report lifetime, run by the relay's worker (jobs/report-lifetime.ts): open
 * reports past expires_at close with closed_reason 'expired' (so they leave
 * alerts and matching, which read open reports only), and reporters get
 * report_expiring a few days before. Each batch locks its rows with
 * `for update skip locked` and commits the change with its outbox event, so
 * several workers (or a retried job) never close or remind twice.
 *
 * Each batch locks its rows in a materialized CTE, run once, and updates
 * exactly those: drain() below relies on every row a batch locks being
 * updated. The shorter `update … where id in (select … limit n for update
 * skip locked)` does not do that: on a fresh table it is planned as a
 * nested-loop semi join that runs the locking subquery again for every open
 * row. Each run skips the rows the statement has already updated (LockRows
 * ignores a row its own command updated), so its limit reaches further and
 * locks rows the outer scan has passed: a batch of 25 closed 44 and held 69
 * locks. Another worker, finding only locked rows, stops, and reports are
 * left open: 13 of 300 with four workers at once, the case
 * tests/relay/report-lifetime.test.ts runs.
 */

type Kind = "lost" | "found";
const table: Record<Kind, string> = { lost: "safety_lost_report", found: "safety_found_report" };
const animalName: Record<Kind, string> = { lost: "animal_name", found: "null::text" };

/** The reminder goes out this many days before a report expires. */
export const EXPIRY_WARNING_DAYS = 3;

export interface LifetimeOptions {
  /** REPORT_TTL_DAYS: dates the open reports from before lifetimes existed. */
  ttlDays: number;
  warningDays?: number;
  batchSize?: number;
}

export interface LifetimeResult {
  dated: number;
  expired: number;
  warned: number;
}

/**
 * Open reports without an expiry (made before this job existed) get
 * created_at + REPORT_TTL_DAYS, but never less than a warning period and an
 * hour from now: no old report closes without its reminder.
 */
async function dateBatch(client: Queryable, kind: Kind, options: Required<LifetimeOptions>): Promise<number> {
  const { rowCount } = await client.query(
    `with batch as materialized (
       select id from ${table[kind]} where status = 'open' and expires_at is null limit $3::int for update skip locked
     )
     update ${table[kind]} r set expires_at = greatest(r.created_at + make_interval(days => $1::int),
                                                      now() + make_interval(days => $2::int, hours => 1))
     from batch where r.id = batch.id`,
    [options.ttlDays, options.warningDays, options.batchSize],
  );
  return rowCount ?? 0;
}

async function expireBatch(pool: Pool, kind: Kind, batchSize: number): Promise<number> {
  return withTransaction(pool, async (client) => {
    const { rows } = await client.query<{ id: string; reporterId: string; expiredAt: Date }>(
      `with batch as materialized (
         select id from ${table[kind]} where status = 'open' and expires_at <= now()
         order by expires_at limit $1::int for update skip locked
       )
       update ${table[kind]} r set status = 'closed', closed_reason = 'expired', resolved_at = now(), updated_at = now()
       from batch where r.id = batch.id and r.status = 'open'
       returning r.id, r.reporter_id as "reporterId", r.resolved_at as "expiredAt"`,
      [batchSize],
    );
    for (const row of rows) {
      await recordEvent(client, EventType.ReportExpired, {
        reportKind: kind,
        reportId: row.id,
        reporterId: row.reporterId,
        expiredAt: row.expiredAt.toISOString(),
      });
    }
    return rows.length;
  });
}

/** Marks each reminder with the expiry it was for: a renewal moves expires_at, which re-arms it. */
async function warnBatch(pool: Pool, kind: Kind, warningDays: number, batchSize: number): Promise<number> {
  return withTransaction(pool, async (client) => {
    const { rows } = await client.query<{ id: string; reporterId: string; species: Species; animalName: string | null; expiresAt: Date }>(
      `with batch as materialized (
         select id from ${table[kind]}
         where status = 'open' and expires_at > now()
           and expires_at <= now() + make_interval(days => $1::int)
           and expiry_warned_for is distinct from expires_at
         order by expires_at limit $2::int for update skip locked
       )
       update ${table[kind]} r set expiry_warned_for = r.expires_at
       from batch where r.id = batch.id
       returning r.id, r.reporter_id as "reporterId", r.species, ${animalName[kind]} as "animalName", r.expires_at as "expiresAt"`,
      [warningDays, batchSize],
    );
    for (const row of rows) {
      await recordEvent(client, EventType.ReportExpiring, {
        reportKind: kind,
        reportId: row.id,
        reporterId: row.reporterId,
        species: row.species,
        animalName: row.animalName,
        expiresAt: row.expiresAt.toISOString(),
      });
    }
    return rows.length;
  });
}

/**
 * Runs batches until one finds nothing. A short batch is not the end: with
 * several workers, `skip locked` hides rows another worker holds, and stopping
 * there left rows that worker never selected unclosed until the next cron run.
 * An empty batch means every remaining row is held by a worker that will
 * commit it.
 */
async function drain(batch: () => Promise<number>): Promise<number> {
  let total = 0;
  for (;;) {
    const n = await batch();
    if (n === 0) return total;
    total += n;
  }
}

export async function runReportLifetime(pool: Pool, options: LifetimeOptions): Promise<LifetimeResult> {
  const o: Required<LifetimeOptions> = { warningDays: EXPIRY_WARNING_DAYS, batchSize: 100, ...options };
  const result: LifetimeResult = { dated: 0, expired: 0, warned: 0 };
  for (const kind of ["lost", "found"] as const) {
    result.dated += await drain(() => dateBatch(pool, kind, o));
    // Expire before warning: a report already past its time is closed, not reminded.
    result.expired += await drain(() => expireBatch(pool, kind, o.batchSize));
    result.warned += await drain(() => warnBatch(pool, kind, o.warningDays, o.batchSize));
  }
  return result;
}
