import type { Task } from "graphile-worker";
import type { OutboxRelay } from "../relay/outboxRelay.js";

export const OUTBOX_RELAY_TASK = "outbox_relay";

/**
 * Queued by the outbox insert trigger (job key `outbox_relay`), so a commit
 * wakes the relay at once. The job only triggers a drain: the relay's own
 * heartbeat also drains, so no progress depends on a job a dead worker holds.
 */
export function makeOutboxRelayTask(relay: OutboxRelay): Task {
  return async () => {
    await relay.drain();
  };
}
