import { setTimeout as sleep } from "node:timers/promises";
import type { TaskList } from "graphile-worker";
import type { Pool } from "../../lib/db.js";
import type { Logger } from "../../lib/logger.js";
import { startWorker, type SupervisedWorker } from "../../lib/worker.js";
import { ALERTS_FANOUT_TASK, alertsFanoutTask } from "./task.js";
import { runFanoutBatch, type FanoutOptions } from "./fanout.js";

/**
 * The fan-out's batch jobs (and starts), for whichever runner runs them.
 * With `duty` under 1, each job rests after its batch in proportion to the
 * batch's run time, so the fan-out keeps its slot busy only that share of
 * the time: the rest of the machine goes to the API's requests.
 */
export function fanoutTasks(pool: Pool, options?: FanoutOptions, duty = 1): TaskList {
  return {
    [ALERTS_FANOUT_TASK]: alertsFanoutTask(async ({ fanoutId, batch, reportId, eventType }) => {
      const started = performance.now();
      const result = await runFanoutBatch(pool, fanoutId, batch, options, reportId && eventType ? { reportId, eventType } : undefined);
      if (duty < 1) await sleep((performance.now() - started) * (1 / duty - 1));
      return result;
    }),
  } as TaskList;
}

/**
 * The fan-out's jobs on a graphile-worker runner of their own (a runner
 * fetches only the tasks it knows), so their concurrency is set apart: each
 * batch keeps a Postgres backend busy for its whole transaction, and a burst
 * of lost reports in a city queues hundreds of batches. On the notifier's
 * main runner they would take every slot, hold up deliveries, and take both
 * cores of a small machine from the API's writes; here they take
 * NOTIFIER_FANOUT_CONCURRENCY slots (1 by default), each busy at most
 * NOTIFIER_FANOUT_DUTY of the time, and queue behind each other.
 */
export function startFanoutWorker(
  pool: Pool,
  logger: Logger,
  { concurrency, duty, deliveryBatch }: { concurrency: number; duty: number; deliveryBatch?: number },
): Promise<SupervisedWorker> {
  return startWorker({ pool, logger, taskList: fanoutTasks(pool, { deliveryBatch }, duty), concurrency });
}
