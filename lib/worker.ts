import { Logger as WorkerLogger, run, type Runner, type TaskList } from "graphile-worker";
import type { Pool } from "./db.js";
import type { Logger } from "./logger.js";
import { assertMigrated } from "./migrate.js";

/** graphile-worker log lines go through the process's pino logger. */
export function workerLogger(logger: Logger): WorkerLogger {
  const child = logger.child({ component: "worker" });
  return new WorkerLogger(() => (level, message, meta) => {
    const fields = meta ?? {};
    if (level === "error") child.error(fields, message);
    else if (level === "warning") child.warn(fields, message);
    // Worker info lines (one per completed job) are debug here: the relay runs thousands a second.
    else child.debug(fields, message);
  });
}

export interface StartWorkerOptions {
  pool: Pool;
  logger: Logger;
  taskList: TaskList;
  concurrency: number;
  pollInterval?: number;
  /**
   * Jobs fetched (and locked) per query and served to this process's workers
   * from memory, with completions batched: far fewer round trips when many
   * short jobs are queued. Off (-1) by default.
   */
  localQueueSize?: number;
  /** graphile-worker crontab lines for recurring tasks. */
  crontab?: string;
}

/**
 * Starts a graphile-worker runner on a database `api migrate up` prepared;
 * it refuses an unmigrated one first, because graphile-worker would install
 * its own schema and no process migrates at boot. Signals are handled by
 * lib/shutdown.ts, not by the worker.
 */
export async function startWorker({
  pool,
  logger,
  taskList,
  concurrency,
  pollInterval = 1_000,
  localQueueSize = -1,
  crontab = "",
}: StartWorkerOptions): Promise<Runner> {
  await assertMigrated(pool);
  return run({
    crontab,
    pgPool: pool,
    taskList,
    concurrency,
    pollInterval,
    noHandleSignals: true,
    logger: workerLogger(logger),
    preset: localQueueSize > 1 ? { worker: { localQueue: { size: localQueueSize }, completeJobBatchDelay: 0, failJobBatchDelay: 0 } } : undefined,
  });
}
