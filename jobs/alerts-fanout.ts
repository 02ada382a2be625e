import type { Task } from "graphile-worker";
import { ALERTS_FANOUT_TASK, parsePayload, type FanoutJobPayload } from "../lib/job-payloads.js";

/**
 * One batch of an alert fan-out, queued by the notifier's consumer (batch 0,
 * a reaction: notifier/reactions.ts) and by each batch for the next. The
 * notifier does the work: notifier/alerts/fanout.ts runFanoutBatch.
 */
export function alertsFanoutTask(runBatch: (payload: FanoutJobPayload) => Promise<unknown>): Task<typeof ALERTS_FANOUT_TASK> {
  return async (payload, helpers) => {
    const job = parsePayload(ALERTS_FANOUT_TASK, payload);
    const result = await runBatch(job);
    helpers.logger.debug(`alerts: fan-out ${job.fanoutId} batch ${job.batch}: ${JSON.stringify(result)}`);
  };
}
