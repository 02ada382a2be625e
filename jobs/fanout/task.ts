import type { Task } from "graphile-worker";
import { z } from "zod";
import { queued } from "../define.js";

export const ALERTS_FANOUT_TASK = "alerts__fanout";

/** A fan-out's job key: the report and the event that started it; `start` for the start's own. */
export interface FanoutKeyRef {
  reportId: string;
  eventId: string;
  start?: true;
}

export const FANOUT_QUEUED_TASKS = {
  /**
   * One batch of an alert fan-out. The start (batch 0, queued by the
   * consumer's reaction) also names the report and the event type, to record
   * the fan-out. The batches of one fan-out share its key, so re-queuing one
   * (the stall sweep, a replay) replaces a waiting job instead of adding a
   * second; the start's key differs (`:start`), so a redelivered event
   * replaces only a start still waiting. A failed batch is retried by
   * graphile-worker, and re-queued by the stall sweep after that.
   */
  [ALERTS_FANOUT_TASK]: queued({
    payload: z.object({
      fanoutId: z.uuid(),
      batch: z.number().int().min(0),
      reportId: z.uuid().optional(),
      eventType: z.string().min(1).max(200).optional(),
    }),
    maxAttempts: 20,
    key: (ref: FanoutKeyRef) => (ref.start ? [ref.reportId, ref.eventId, "start"] : [ref.reportId, ref.eventId]),
  }),
};

export type FanoutJobPayload = z.output<(typeof FANOUT_QUEUED_TASKS)[typeof ALERTS_FANOUT_TASK]["payload"]>;

/**
 * One batch of an alert fan-out, queued by the notifier's consumer (batch 0,
 * a reaction: notifier/reactions.ts) and by each batch for the next. The
 * notifier does the work: jobs/fanout/fanout.ts runFanoutBatch.
 */
export function alertsFanoutTask(runBatch: (payload: FanoutJobPayload) => Promise<unknown>): Task {
  return async (payload, helpers) => {
    const job = FANOUT_QUEUED_TASKS[ALERTS_FANOUT_TASK].payload.parse(payload);
    const result = await runBatch(job);
    helpers.logger.debug(`alerts: fan-out ${job.fanoutId} batch ${job.batch}: ${JSON.stringify(result)}`);
  };
}
