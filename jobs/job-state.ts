import type { Queryable } from "../lib/db.js";
import { QUEUED_TASKS, type ParsedPayload, type TaskName } from "./registry.js";
import { WORKER_RELATIONS as W, type StoredJob } from "./queue.js";

/**
 * Reading graphile-worker's job state: the alerts admin screen, the fan-out
 * stall sweep, the worker_jobs metrics, the jobs admin screen and the
 * operator's clean-up.
 * Reads go through graphile-worker 0.18's public view, `jobs`
 * (its sql/000017.sql), which has every column but the payload. Writes to
 * the queue are jobs/queue.ts's.
 */

// ---- private tables ---------------------------------------------------------

/**
 * Every read of a graphile-worker private table, with its reason. The
 * private tables may change in any release (graphile-worker's migration
 * 000016 renamed jobs to _private_jobs, 000017 added the view), so each use
 * is here and nowhere else.
 *
 * - _private_jobs, for `payload`: the view leaves the payload
 *   out, and 0.18 has no function that returns it. The alerts admin screen
 *   shows which batch a fan-out's job runs (jobsByKey), and the stall sweep
 *   re-adds a job a dead worker holds with the payload it was queued with
 *   (lockedJobs). Joined by the job's id, the view's primary key.
 */
// - _private_known_crontabs, for a cron item's last run
//   (cronItemRuns, below): nothing public records it.
// - _private_jobs and _private_tasks, for the counts by task
//   and state (jobCounts, below): grouped by task_id before the join to the
//   task names, which the view joins first for every job.
const JOBS_WITH_PAYLOAD = `${W.jobs} j join ${W.privateJobs} p on p.id = j.id`;

export interface JobState<T extends TaskName> {
  id: number;
  key: string;
  runAt: Date;
  attempts: number;
  maxAttempts: number;
  lockedAt: Date | null;
  lastError: string | null;
  /** Null when it does not parse with the task's schema (a job queued by hand). */
  payload: ParsedPayload<T> | null;
}

/** The jobs of `task` with these keys, by key (private: the payload). */
export async function jobsByKey<T extends TaskName>(client: Queryable, task: T, keys: readonly string[]): Promise<Map<string, JobState<T>>> {
  if (keys.length === 0) return new Map();
  const { rows } = await client.query<JobState<T>>(
    `select j.id, j.key, j.run_at as "runAt", j.attempts, j.max_attempts as "maxAttempts", j.locked_at as "lockedAt",
       j.last_error as "lastError", p.payload
     from ${JOBS_WITH_PAYLOAD}
     where j.key = any($1::text[]) and j.task_identifier = $2::text`,
    [keys, task],
  );
  const schema = QUEUED_TASKS[task].payload;
  return new Map(rows.map((row) => [row.key, { ...row, payload: (schema.safeParse(row.payload).data ?? null) as ParsedPayload<T> | null }]));
}

/**
 * Up to `limit` keyed jobs of `task` locked for longer than `seconds`:
 * longer than any of them runs, so their worker is gone (graphile-worker
 * would keep them locked for hours). Private: the payload.
 */
export async function lockedJobs<T extends TaskName>(client: Queryable, task: T, seconds: number, limit: number): Promise<Array<StoredJob<T>>> {
  const { rows } = await client.query<StoredJob<T>>(
    `select j.task_identifier as task, j.key, p.payload, j.max_attempts as "maxAttempts"
     from ${JOBS_WITH_PAYLOAD}
     where j.task_identifier = $1::text and j.key is not null
       and j.locked_at < now() - make_interval(secs => $2::double precision)
     limit $3::int`,
    [task, seconds, limit],
  );
  return rows;
}

// ---- the public view --------------------------------------------------------

/**
 * SQL: true when a job with this key (an SQL expression, jobs/queue.ts
 * jobKeySql) waits to run: not locked, attempts left.
 */
export const jobWaitingSql = (key: string) =>
  `exists (select 1 from ${W.jobs} waiting
           where waiting.key = ${key} and waiting.locked_at is null and waiting.attempts < waiting.max_attempts)`;

export interface FinishedJob {
  id: number;
  task: string;
  attempts: number;
  lastError: string | null;
}

/**
 * Jobs that finished for good: every attempt used, not locked, untouched for
 * `olderThanHours`; of one task (any identifier, queued or cron) or all.
 */
export async function finishedJobs(client: Queryable, { olderThanHours, task }: { olderThanHours: number; task: string | null }): Promise<FinishedJob[]> {
  const { rows } = await client.query<FinishedJob>(
    `select id, task_identifier as task, attempts, last_error as "lastError"
     from ${W.jobs}
     where attempts >= max_attempts
       and locked_at is null
       and updated_at < now() - make_interval(hours => $1::int)
       and ($2::text is null or task_identifier = $2::text)
     order by id`,
    [olderThanHours, task],
  );
  return rows;
}

// ---- the operator's view of the queue ---------------------------------------

/**
 * A job's state as operators see it (GET /v1/admin/jobs): queued = due and
 * unlocked, scheduled = due later (new, or waiting out a retry's backoff),
 * running = locked by a worker, failed = attempts used up. A locked job is
 * running whatever its attempts; the others have attempts left, except failed.
 */
export const JOB_STATES = ["queued", "scheduled", "running", "failed"] as const;
export type JobStateName = (typeof JOB_STATES)[number];

/** SQL: each state's condition on a row of the jobs view aliased `alias`; exactly one holds. */
const stateConditions = (alias: string): Record<JobStateName, string> => ({
  running: `${alias}.locked_at is not null`,
  failed: `${alias}.locked_at is null and ${alias}.attempts >= ${alias}.max_attempts`,
  scheduled: `${alias}.locked_at is null and ${alias}.attempts < ${alias}.max_attempts and ${alias}.run_at > now()`,
  queued: `${alias}.locked_at is null and ${alias}.attempts < ${alias}.max_attempts and ${alias}.run_at <= now()`,
});

/** SQL: the state (JOB_STATES) of a row of the jobs view aliased `alias`. */
const jobStateSql = (alias: string) => {
  const when = stateConditions(alias);
  return `case when ${when.running} then 'running' when ${when.failed} then 'failed' when ${when.scheduled} then 'scheduled' else 'queued' end`;
};

export interface TaskJobCounts {
  task: string;
  queued: number;
  scheduled: number;
  running: number;
  failed: number;
  /** How long the longest-waiting queued job has been due; 0 when none is queued. */
  oldestQueuedSeconds: number;
}

/**
 * Jobs by task and state, and each task's oldest queued job's wait: the
 * operator's summary and the worker_jobs gauges. Completed jobs are deleted
 * by graphile-worker, so it reads only the jobs that wait, run or failed.
 *
 * Private: _private_jobs, grouped by task_id and the three
 * conditions that make up a state (stateConditions), before the join to the
 * task names; one group per task and state instead of a join and four
 * filtered counts per job. Through the view the count of 100,000 queued
 * jobs took 1.2× as long, and 2.3× with a covering index, which it could
 * not read alone (`npm run bench:jobs`, BENCH_JOBS_INDEX=1).
 */
export async function jobCounts(db: Queryable): Promise<TaskJobCounts[]> {
  const { rows } = await db.query<{ task: string; locked: boolean; spent: boolean; due: boolean; n: number; waited: number }>(
    `select t.identifier as task, c.locked, c.spent, c.due, c.n, c.waited
     from (select j.task_id, j.locked_at is not null as locked, j.attempts >= j.max_attempts as spent, j.run_at <= now() as due,
                  count(*)::int as n, coalesce(floor(extract(epoch from now() - min(j.run_at))), 0)::int as waited
           from ${W.privateJobs} j
           group by 1, 2, 3, 4) c
     join ${W.privateTasks} t on t.id = c.task_id
     order by t.identifier`,
  );
  const byTask = new Map<string, TaskJobCounts>();
  for (const row of rows) {
    let counts = byTask.get(row.task);
    if (!counts) byTask.set(row.task, (counts = { task: row.task, queued: 0, scheduled: 0, running: 0, failed: 0, oldestQueuedSeconds: 0 }));
    // The order of stateConditions: locked is running whatever its attempts; then failed; then due or not.
    const state: JobStateName = row.locked ? "running" : row.spent ? "failed" : row.due ? "queued" : "scheduled";
    counts[state] += row.n;
    if (state === "queued") counts.oldestQueuedSeconds = Math.max(0, row.waited);
  }
  return [...byTask.values()];
}

/** A job as the operator's listing shows it; the payload as stored (mask it before showing it). */
export interface ListedJob {
  id: number;
  task: string;
  state: JobStateName;
  attempts: number;
  maxAttempts: number;
  runAt: Date;
  lockedAt: Date | null;
  lockedBy: string | null;
  lastError: string | null;
  createdAt: Date;
  payload: unknown;
}

/**
 * Up to `limit` jobs of a task and/or state, by id, after `afterId`; or the
 * one job `id`. Private: the payload (see JOBS_WITH_PAYLOAD).
 */
export async function listJobs(
  db: Queryable,
  filter: { task?: string | null; state?: JobStateName | null; id?: number | null; afterId?: number | null; limit: number },
): Promise<ListedJob[]> {
  const { rows } = await db.query<ListedJob>(
    `select * from (
       select j.id, j.task_identifier as task, ${jobStateSql("j")} as state, j.attempts, j.max_attempts as "maxAttempts",
              j.run_at as "runAt", j.locked_at as "lockedAt", j.locked_by as "lockedBy", j.last_error as "lastError",
              j.created_at as "createdAt", p.payload
       from ${JOBS_WITH_PAYLOAD}
       where ($1::text is null or j.task_identifier = $1::text)
         and ($3::bigint is null or j.id = $3::bigint)
         and ($4::bigint is null or j.id > $4::bigint)
     ) listed
     where ($2::text is null or state = $2::text)
     order by id
     limit $5::int`,
    [filter.task ?? null, filter.state ?? null, filter.id ?? null, filter.afterId ?? null, filter.limit],
  );
  return rows;
}

export interface CronItemRun {
  /** The crontab item's identifier: its task, unless the line names another (`id=`). */
  identifier: string;
  knownSince: Date;
  /** When graphile-worker last queued it; null when it never has. */
  lastRun: Date | null;
}

/**
 * Every crontab item a worker process has registered, with its last run.
 * Private: _private_known_crontabs is the only record of a
 * cron item's last execution (0.18 has no view or function for it, and the
 * crontab lines live in the relay's and notifier's own code, which the API
 * does not import).
 */
export async function cronItemRuns(db: Queryable): Promise<CronItemRun[]> {
  const { rows } = await db.query<CronItemRun>(
    `select identifier, known_since as "knownSince", last_execution as "lastRun"
     from ${W.knownCrontabs}
     order by identifier`,
  );
  return rows;
}
