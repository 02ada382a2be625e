import type { Task } from "graphile-worker";

/** A cron task: nothing queues it, so its name is here, with its crontab line. */
export const ALERTS_SWEEP_TASK = "alerts__sweep";

/**
 * Every minute: re-queues fan-outs whose batch job died with its worker
 * (graphile-worker keeps such a job locked for hours), so no fan-out waits
 * on a dead process. notifier/alerts/fanout.ts requeueStalledFanouts does the work.
 */
export const ALERTS_SWEEP_CRONTAB = `* * * * * ${ALERTS_SWEEP_TASK}`;

export function alertsSweepTask(sweep: () => Promise<number>): Task {
  return async (_payload, helpers) => {
    const requeued = await sweep();
    if (requeued > 0) helpers.logger.warn(`alerts: re-queued ${requeued} stalled fan-outs`);
  };
}
