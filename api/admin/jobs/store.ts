import type { Queryable } from "../../../lib/db.js";
import { QUEUED_TASKS } from "../../../jobs/registry.js";
import { cronItemRuns, jobCounts, listJobs, type JobStateName, type ListedJob } from "../../../jobs/job-state.js";
import { failJob, retryJob } from "../../../jobs/queue.js";
import { maskPayload } from "../outbox/mask.js";
import { LAST_ERROR_MAX, type JobItem, type JobsSummary } from "./schemas.js";

export function toJobItem(row: ListedJob): JobItem {
  return {
    id: row.id,
    task: row.task,
    state: row.state,
    attempts: row.attempts,
    maxAttempts: row.maxAttempts,
    runAt: row.runAt.toISOString(),
    lockedAt: row.lockedAt?.toISOString() ?? null,
    lockedBy: row.lockedBy,
    lastError: row.lastError === null ? null : row.lastError.slice(0, LAST_ERROR_MAX),
    createdAt: row.createdAt.toISOString(),
    payload: maskPayload(row.payload),
  };
}

export async function jobsSummary(db: Queryable, clock: () => Date = () => new Date()): Promise<JobsSummary> {
  const asOf = clock();
  const [tasks, cron] = await Promise.all([jobCounts(db), cronItemRuns(db)]);
  return {
    asOf: asOf.toISOString(),
    tasks,
    cron: cron.map((item) => ({
      identifier: item.identifier,
      knownSince: item.knownSince.toISOString(),
      lastRun: item.lastRun?.toISOString() ?? null,
    })),
  };
}

export interface SummaryReader {
  /** The summary, computed at most once per `maxAgeMs` and shared by every request meanwhile. */
  read(): Promise<JobsSummary>;
  /** Drops the kept summary: the next read computes it again (after a retry or a fail). */
  invalidate(): void;
}

/**
 * The jobs summary read at most once per `maxAgeMs` (API_JOBS_SUMMARY_MAX_AGE_MS),
 * single-flight: requests that arrive while it is computed share that count.
 * Counting 100,000 queued jobs behind 1,000,000 deleted ones is 177 ms p95 on
 * a loaded machine, 64 ms with a covering index (`BENCH_JOBS_INDEX=compare
 * npm run bench:jobs`), more than the 50 ms p95 the summary must answer in;
 * kept, it answers in 7 ms p95 polled 10 times a second. Operators' job screens (Oban Web,
 * Sidekiq's web UI, our console) poll every few seconds, so counts a few
 * seconds old are what they already show (decision 78).
 *
 * A kept summary younger than `maxAgeMs` is answered as it is. One older, up
 * to STALE_FACTOR × `maxAgeMs`, is answered too while a new count runs in the
 * background, so a screen polling every few seconds never waits on the count;
 * older than that (nobody looked for a while), the request waits for the new
 * count. `asOf` tells the age. 0 computes every time (tests that act through
 * the worker and read at once).
 */
export function summaryReader(db: Queryable, maxAgeMs: number, now: () => number = Date.now): SummaryReader {
  let kept: { summary: JobsSummary; at: number } | undefined;
  let inFlight: Promise<JobsSummary> | undefined;
  // Bumped by invalidate: a count begun before it must not be kept (it may predate the action).
  let generation = 0;
  const refresh = (): Promise<JobsSummary> => {
    if (inFlight) return inFlight;
    const started = generation;
    const at = now();
    const counting = jobsSummary(db, () => new Date(at))
      .then((summary) => {
        if (started === generation) kept = { summary, at };
        return summary;
      })
      .finally(() => {
        if (inFlight === counting) inFlight = undefined;
      });
    inFlight = counting;
    return counting;
  };
  return {
    async read() {
      if (maxAgeMs <= 0) return jobsSummary(db, () => new Date(now()));
      const age = kept ? now() - kept.at : Infinity;
      if (kept && age < maxAgeMs) return kept.summary;
      if (kept && age < STALE_FACTOR * maxAgeMs) {
        // The failure of a background count is the next waiting request's to report.
        refresh().catch(() => undefined);
        return kept.summary;
      }
      return refresh();
    },
    invalidate() {
      generation++;
      kept = undefined;
      inFlight = undefined;
    },
  };
}

/** How many times API_JOBS_SUMMARY_MAX_AGE_MS a kept summary is still answered while a new count runs. */
export const STALE_FACTOR = 5;

/**
 * The task names a filter may use: every queued task (jobs/registry.ts),
 * every crontab item a worker registered, and any task with a job now (one
 * queued by hand).
 */
export async function knownTasks(db: Queryable): Promise<string[]> {
  const [counts, cron] = await Promise.all([jobCounts(db), cronItemRuns(db)]);
  return [...new Set([...Object.keys(QUEUED_TASKS), ...cron.map((c) => c.identifier), ...counts.map((c) => c.task)])].sort();
}

export async function jobById(db: Queryable, id: number): Promise<ListedJob | null> {
  return (await listJobs(db, { id, limit: 1 }))[0] ?? null;
}

export type JobAction = "retry" | "fail";

/** Which states each action takes a job from (contract: retry a failed or scheduled job, fail a queued or scheduled one). */
export const ACTION_FROM: Record<JobAction, readonly JobStateName[]> = { retry: ["failed", "scheduled"], fail: ["queued", "scheduled"] };

export type ActionOutcome = { job: ListedJob; before: ListedJob } | { refused: "not-found" } | { refused: "conflict"; state: JobStateName };

/**
 * Retries or fails job `id` on the caller's transaction, through
 * graphile-worker's own functions. Their update skips a job a worker locked
 * meanwhile, so a job read as free and then taken is refused as running.
 */
export async function actOnJob(client: Queryable, id: number, action: JobAction, reason: string): Promise<ActionOutcome> {
  const before = await jobById(client, id);
  if (!before) return { refused: "not-found" };
  if (!ACTION_FROM[action].includes(before.state)) return { refused: "conflict", state: before.state };
  const changed = action === "retry" ? await retryJob(client, id) : await failJob(client, id, `failed by an operator: ${reason}`);
  const job = await jobById(client, id);
  if (!job) return { refused: "not-found" };
  if (!changed) return { refused: "conflict", state: job.state };
  return { job, before };
}
