/**
 * Lists, and with --execute deletes, graphile-worker jobs that finished for
 * good: those that used all their attempts. (Succeeded jobs are deleted by
 * graphile-worker itself.) Jobs currently locked are never touched.
 *
 *   tsx tasks/clean-worker-jobs.ts --operator <your id> [--task <identifier>] [--older-than-hours 24] [--execute]
 *
 * The deletion and its audit event `operator.worker_jobs_cleaned` commit together.
 */
import { AuditAction, AuditObject, writeAuditEvent } from "../lib/audit.js";
import { finishedJobs } from "../jobs/job-state.js";
import { completeJobs } from "../jobs/queue.js";
import { parseTaskArgs, print, required, withTaskClient } from "./lib.js";

const usage = "clean-worker-jobs --operator <id> [--task <identifier>] [--older-than-hours N] [--execute]";
const args = parseTaskArgs(usage, {
  operator: { type: "string" },
  task: { type: "string" },
  "older-than-hours": { type: "string", default: "24" },
});
const operator = required(args.operator, "operator", usage);
const olderThanHours = Number(args["older-than-hours"]);
if (!Number.isFinite(olderThanHours) || olderThanHours < 0) {
  console.error("--older-than-hours must be a number ≥ 0");
  process.exit(2);
}

const outcome = await withTaskClient(async (client) => {
  await client.query("begin");
  try {
    const rows = await finishedJobs(client, { olderThanHours: Math.floor(olderThanHours), task: args.task ?? null });
    const byTask: Record<string, number> = {};
    for (const job of rows) byTask[job.task] = (byTask[job.task] ?? 0) + 1;
    if (!args.execute || rows.length === 0) {
      return { dryRun: !args.execute, finishedJobs: rows.length, byTask, jobs: rows.slice(0, 50) };
    }
    await completeJobs(client, rows.map((j) => j.id));
    await writeAuditEvent(client, {
      actorId: operator,
      action: AuditAction.WorkerJobsCleaned,
      objectType: AuditObject.WorkerJobs,
      objectId: args.task ?? "*",
      metadata: { deleted: rows.length, byTask, olderThanHours },
    });
    await client.query("commit");
    return { dryRun: false, deleted: rows.length, byTask };
  } finally {
    await client.query("rollback");
  }
});
print(outcome);
