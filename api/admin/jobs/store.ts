import type { Queryable } from "../../../lib/db.js";
import { QUEUED_TASKS } from "../../../lib/job-payloads.js";
import { cronItemRuns, jobCounts, listJobs, type JobStateName, type ListedJob } from "../../../lib/job-state.js";
import { failJob, retryJob } from "../../../lib/queue.js";
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

export async function jobsSummary(db: Queryable): Promise<JobsSummary> {
  const [tasks, cron] = await Promise.all([jobCounts(db), cronItemRuns(db)]);
  return {
    tasks,
    cron: cron.map((item) => ({
      identifier: item.identifier,
      knownSince: item.knownSince.toISOString(),
      lastRun: item.lastRun?.toISOString() ?? null,
    })),
  };
}

/**
 * The task names a filter may use: every queued task (lib/job-payloads.ts),
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
