import { withTransaction, type Pool } from "../../lib/db.js";
import { dateBatch, expireBatch, remindBatch } from "../../lib/report-lifecycle.js";

/**
 * Report lifetime, run by the relay's worker (jobs/scheduled/task.ts): open
 * reports past expires_at close with closed_reason 'expired' (so they leave
 * alerts and matching, which read open reports only), and reporters get
 * report_expiring a few days before. The batches are the lifecycle's own
 * statements (lib/report-lifecycle.ts): each locks its rows with
 * `for update skip locked` in a materialized CTE and commits the change with
 * its outbox event, so several workers (or a retried job) never close or
 * remind twice. This file runs them: which, in what order, and until when.
 */

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
 * Runs batches until one finds nothing. A short batch is not the end: with
 * several workers, `skip locked` hides rows another worker holds, and stopping
 * there left rows that worker never selected unclosed until the next cron run.
 * An empty batch means every remaining row is held by a worker that will
 * commit it, because each batch updates every row it locks (the materialized
 * CTE in lib/report-lifecycle.ts, docs/decisions/0031).
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
    result.expired += await drain(() => withTransaction(pool, (client) => expireBatch(client, kind, o.batchSize)));
    result.warned += await drain(() => withTransaction(pool, (client) => remindBatch(client, kind, o.warningDays, o.batchSize)));
  }
  return result;
}
