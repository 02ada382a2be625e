import type { Task } from "graphile-worker";
import { NOTIFICATION_DELIVER_BATCH_TASK, NOTIFICATION_DELIVER_TASK, parsePayload } from "../lib/job-payloads.js";

/** Queued with each notification (lib/queue.ts enqueueDeliveries); the notifier's delivery does the work. */
export function notificationDeliverTask(deliver: (notificationId: string) => Promise<void>): Task<typeof NOTIFICATION_DELIVER_TASK> {
  return async (payload) => deliver(parsePayload(NOTIFICATION_DELIVER_TASK, payload).notificationId);
}

/** Queued by the alert fan-out, a batch of notifications a job (lib/queue.ts enqueueDeliveryBatches). */
export function notificationDeliverBatchTask(
  deliver: (notificationIds: readonly string[]) => Promise<void>,
): Task<typeof NOTIFICATION_DELIVER_BATCH_TASK> {
  return async (payload) => deliver(parsePayload(NOTIFICATION_DELIVER_BATCH_TASK, payload).notificationIds);
}
