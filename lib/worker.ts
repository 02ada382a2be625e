import { setTimeout as sleep } from "node:timers/promises";
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

/** A graphile-worker runner kept running for the life of the process. */
export interface SupervisedWorker {
  /** Stops for good: no restart, and jobs in flight finish first. */
  stop(): Promise<void>;
  /** How many times a runner that stopped on its own was replaced. */
  readonly restarts: number;
}

const RESTART_MIN_DELAY_MS = 500;
const RESTART_MAX_DELAY_MS = 30_000;

/**
 * Starts a graphile-worker runner on a database `api migrate up` prepared;
 * it refuses an unmigrated one first, because graphile-worker would install
 * its own schema and no process migrates at boot. Signals are handled by
 * lib/shutdown.ts, not by the worker.
 *
 * Job completions and failures are always batched: unbatched, graphile-worker
 * 0.18 leaves a completion that fails (Postgres stopping as a job ends) as an
 * unhandled rejection, which kills the process. Batched, the failure stops
 * the runner's worker pool instead, and its promise resolves as if asked to
 * stop (graphile/worker#635): so a runner that stops without our asking is
 * logged and replaced, retrying with backoff while Postgres is away.
 */
export async function startWorker({
  pool,
  logger,
  taskList,
  concurrency,
  pollInterval = 1_000,
  localQueueSize = -1,
  crontab = "",
}: StartWorkerOptions): Promise<SupervisedWorker> {
  await assertMigrated(pool);
  const start = () =>
    run({
      crontab,
      pgPool: pool,
      taskList,
      concurrency,
      pollInterval,
      noHandleSignals: true,
      logger: workerLogger(logger),
      preset: {
        worker: {
          ...(localQueueSize > 1 ? { localQueue: { size: localQueueSize } } : {}),
          completeJobBatchDelay: 0,
          failJobBatchDelay: 0,
        },
      },
    });

  let runner: Runner = await start();
  let restarts = 0;
  const stopping = new AbortController();

  // One loop per process: wait for the runner to end; unless stop() ended it, start another.
  const supervision = (async () => {
    for (;;) {
      const err: unknown = await runner.promise.then(() => undefined, (e: unknown) => e);
      if (stopping.signal.aborted) return;
      logger.error(
        { err: err ? { message: (err as Error).message } : undefined },
        "worker: runner stopped without being asked; starting a new one",
      );
      for (let attempt = 0; ; attempt++) {
        const delay = Math.min(RESTART_MAX_DELAY_MS, RESTART_MIN_DELAY_MS * 2 ** attempt);
        await sleep(delay, undefined, { signal: stopping.signal }).catch(() => undefined);
        if (stopping.signal.aborted) return;
        try {
          runner = await start();
          break;
        } catch (e) {
          logger.warn({ err: { message: (e as Error).message }, retryInMs: delay }, "worker: runner replacement failed; retrying");
        }
      }
      // stop() came while the new runner was starting: it saw only the old one.
      if (stopping.signal.aborted) return runner.stop();
      restarts += 1;
      logger.info({ restarts }, "worker: runner replaced");
    }
  })();

  return {
    get restarts() {
      return restarts;
    },
    async stop() {
      stopping.abort();
      // A runner that already stopped on its own refuses stop(); the loop has seen it end.
      await runner.stop().catch(() => undefined);
      await supervision;
    },
  };
}
