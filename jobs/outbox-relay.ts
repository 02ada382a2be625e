import type { Task } from "graphile-worker";
import { z } from "zod";

export const OUTBOX_RELAY_TASK = "outbox_relay";

declare global {
  namespace GraphileWorker {
    interface Tasks {
      /** An empty object: the job only wakes the relay. */
      outbox_relay: Record<string, never>;
    }
  }
}

const Payload = z.object({});

/**
 * Wakes the relay through the job queue: `graphile_worker.add_job('outbox_relay')`
 * from an operator, or a job the outbox trigger queued before migration 000010
 * (since then the trigger notifies the relay directly, relay/wake-up.ts). The
 * job only triggers a drain: the relay's own poll also drains, so no progress
 * depends on a job a dead worker holds.
 */
export function outboxRelayTask(drain: () => Promise<void>): Task<"outbox_relay"> {
  return async (payload) => {
    Payload.parse(payload);
    await drain();
  };
}
