import type { Queryable } from "./db.js";
import { QUEUED_TASKS, type ParsedPayload, type TaskName } from "./job-payloads.js";

/**
 * Reading graphile-worker's job state: the alerts admin screen, the fan-out
 * stall sweep, the worker_queue_depth metric and the operator's clean-up.
 * Reads go through graphile-worker 0.18's public view, graphile_worker.jobs
 * (its sql/000017.sql), which has every column but the payload. Writes to
 * the queue are lib/queue.ts's.
 */

// ---- private tables ---------------------------------------------------------

/**
 * Every read of a graphile-worker private table, with its reason. The
 * private tables may change in any release (graphile-worker's migration
 * 000016 renamed jobs to _private_jobs, 000017 added the view), so each use
 * is here and nowhere else.
 *
 * - graphile_worker._private_jobs, for `payload`: the view leaves the payload
 *   out, and 0.18 has no function that returns it. The alerts admin screen
 *   shows which batch a fan-out's job runs (jobsByKey), and the stall sweep
 *   re-adds a job a dead worker holds with the payload it was queued with
 *   (lockedJobs). Joined by the job's id, the view's primary key.
 */
const JOBS_WITH_PAYLOAD = `graphile_worker.jobs j join graphile_worker._private_jobs p on p.id = j.id`;

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

/** A job as it was queued, to be added again (lib/queue.ts requeue). */
export interface StoredJob<T extends TaskName = TaskName> {
  task: T;
  key: string;
  payload: unknown;
  maxAttempts: number;
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
 * SQL: true when a job with this key (an SQL expression, lib/queue.ts
 * jobKeySql) waits to run: not locked, attempts left.
 */
export const jobWaitingSql = (key: string) =>
  `exists (select 1 from graphile_worker.jobs waiting
           where waiting.key = ${key} and waiting.locked_at is null and waiting.attempts < waiting.max_attempts)`;

/** The queue's depth by task and state: waiting (not locked, attempts left, due now or later), running (locked), failed (attempts used up). */
export async function queueDepth(db: Queryable): Promise<Array<{ task: string; state: "waiting" | "running" | "failed"; n: number }>> {
  const { rows } = await db.query<{ task: string; state: "waiting" | "running" | "failed"; n: number }>(
    `select task_identifier as task,
            case when locked_at is not null then 'running'
                 when attempts >= max_attempts then 'failed'
                 else 'waiting' end as state,
            count(*)::int as n
     from graphile_worker.jobs
     group by 1, 2`,
  );
  return rows;
}

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
     from graphile_worker.jobs
     where attempts >= max_attempts
       and locked_at is null
       and updated_at < now() - make_interval(hours => $1::int)
       and ($2::text is null or task_identifier = $2::text)
     order by id`,
    [olderThanHours, task],
  );
  return rows;
}
