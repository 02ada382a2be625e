import type { Queryable } from "../lib/db.js";
import { registerSourcedGauge, type Registry } from "../lib/metrics.js";
import { jobCounts, JOB_STATES, type TaskJobCounts } from "./job-state.js";

/**
 * graphile-worker jobs by task and state (jobs/job-state.ts JOB_STATES), and
 * each task's oldest queued job's wait, read at scrape time. Both worker
 * processes (relay and notifier) expose them. Every state of a task with a
 * job is exported, 0 included, so a rule sees a count fall to 0.
 */
export function registerWorkerJobMetrics(registry: Registry, db: Queryable): void {
  // One count per scrape for both gauges: a scrape collects them together, so the second shares the first's query.
  let inFlight: Promise<TaskJobCounts[]> | undefined;
  const counts = () =>
    (inFlight ??= jobCounts(db).finally(() => {
      inFlight = undefined;
    }));
  registerSourcedGauge(registry, {
    name: "worker_jobs",
    help: "graphile-worker jobs by task and state: queued (due, not locked), scheduled (due later), running (locked), failed (attempts used up)",
    labelNames: ["task", "state"],
    source: "postgres",
    async read() {
      return (await counts()).flatMap((row) => JOB_STATES.map((state) => ({ labels: { task: row.task, state }, value: row[state] })));
    },
  });
  registerSourcedGauge(registry, {
    name: "worker_job_oldest_queued_seconds",
    help: "How long each task's longest-waiting queued graphile-worker job has been due, in seconds; 0 when none is queued",
    labelNames: ["task"],
    source: "postgres",
    async read() {
      return (await counts()).map((row) => ({ labels: { task: row.task }, value: row.oldestQueuedSeconds }));
    },
  });
}
