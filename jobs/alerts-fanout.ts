import type { Task } from "graphile-worker";
import { z } from "zod";
import { ALERTS_FANOUT_TASK } from "../lib/alerts.js";

export { ALERTS_FANOUT_TASK };

declare global {
  namespace GraphileWorker {
    interface Tasks {
      /** The start (batch 0) also names the report and the event type, to record the fan-out. */
      alerts_fanout: { fanoutId: string; batch: number; reportId?: string; eventType?: string };
    }
  }
}

const Payload = z.object({
  fanoutId: z.uuid(),
  batch: z.number().int().min(0),
  reportId: z.uuid().optional(),
  eventType: z.string().min(1).max(200).optional(),
});
export type FanoutJobPayload = z.output<typeof Payload>;

/**
 * One batch of an alert fan-out, queued by the notifier's consumer (batch 0,
 * a reaction: notifier/reactions.ts) and by each batch for the next. The
 * notifier does the work: notifier/alerts/fanout.ts runFanoutBatch.
 */
export function alertsFanoutTask(runBatch: (payload: FanoutJobPayload) => Promise<unknown>): Task<"alerts_fanout"> {
  return async (payload, helpers) => {
    const job = Payload.parse(payload);
    const result = await runBatch(job);
    helpers.logger.debug(`alerts: fan-out ${job.fanoutId} batch ${job.batch}: ${JSON.stringify(result)}`);
  };
}
