import type { Task } from "graphile-worker";
import { z } from "zod";

export const OUTBOX_RELAY_TASK = "outbox_relay";

declare global {
  namespace GraphileWorker {
    interface Tasks {
      /** Queued by the outbox insert trigger with an empty object: the job only wakes the relay. */
      outbox_relay: Record<string, never>;
    }
  }
}

const Payload = z.object({});

/**
 * Queued by the outbox insert trigger (job key `outbox_relay`), so a commit
 * wakes the relay at once. The job only triggers a drain: the relay's own
 * heartbeat also drains, so no progress depends on a job a dead worker holds.
 */
export function outboxRelayTask(drain: () => Promise<void>): Task<"outbox_relay"> {
  return async (payload) => {
    Payload.parse(payload);
    await drain();
  };
}
