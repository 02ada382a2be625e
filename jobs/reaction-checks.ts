import type { Queryable } from "../lib/db.js";
import type { QueuedJob } from "./queued-job.js";

/** Adds a value to the statement being built and returns its placeholder, cast to `type`. */
export type SqlParam = (value: unknown, type: string) => string;

/**
 * A test, before the consumer's transaction, of whether a kind of reaction
 * job would find anything to do (jobs/fanout/fanout.ts,
 * jobs/matching/matcher.ts). Its SQL may write (the fan-out check records
 * the uncovered fan-outs as done), so it must be idempotent.
 */
export interface ReactionCheck<J extends QueuedJob = QueuedJob> {
  /** Names the prepared statement; each check's CTE names must differ from the others'. */
  name: string;
  /** The jobs this check decides on; other jobs pass it untouched. */
  applies(job: QueuedJob): job is J;
  /** What the check's select returns for a job that is still needed. */
  keyOf(job: J): string;
  /**
   * CTEs (without `with`) and a select of the keys, as text, of the jobs
   * still needed. Called with the jobs it applies to, possibly none: the
   * statement is one prepared statement whatever the mix, so each check's
   * SQL must do nothing for no jobs.
   */
  sql(jobs: J[], param: SqlParam): { ctes?: string; needed: string };
}

/**
 * The jobs, less those a check found idle, in ONE statement for all the
 * checks: most events that start any of these jobs start one of each (a new
 * lost report: its fan-out and its matching), and on a 2-core VM each round
 * trip of the notifier cost about a fifth of its CPU per create, mostly the
 * socket write (`COST_PROFILE=<dir> npm run bench:cost`). Nothing runs when no check
 * applies to any job.
 */
export async function withoutIdleReactions(client: Queryable, jobs: QueuedJob[], checks: readonly ReactionCheck[]): Promise<QueuedJob[]> {
  if (!jobs.some((job) => checks.some((check) => check.applies(job)))) return jobs;
  const values: unknown[] = [];
  const param: SqlParam = (value, type) => `$${values.push(value)}::${type}`;
  const parts = checks.map((check) => check.sql(jobs.filter(check.applies), param));
  const ctes = parts.flatMap((part) => (part.ctes ? [part.ctes] : []));
  const selects = parts.map((part, i) => `select ${i} as check_index, needed.key from (${part.needed}) as needed(key)`);
  const { rows } = await client.query<{ check_index: number; key: string }>({
    name: `reaction-checks/${checks.map((check) => check.name).join("+")}`,
    text: `${ctes.length > 0 ? `with ${ctes.join(",\n")}\n` : ""}${selects.join("\nunion all\n")}`,
    values,
  });
  const needed = checks.map((_, i) => new Set(rows.filter((row) => row.check_index === i).map((row) => row.key)));
  return jobs.filter((job) => checks.every((check, i) => !check.applies(job) || needed[i]!.has(check.keyOf(job))));
}
