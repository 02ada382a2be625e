import type { Task } from "graphile-worker";
import { NOTIFICATION_DELIVER_TASK, parsePayload } from "../lib/job-payloads.js";

/** Queued with each notification (lib/queue.ts enqueueDeliveries); the notifier's delivery does the work. */
export function notificationDeliverTask(deliver: (notificationId: string) => Promise<void>): Task<typeof NOTIFICATION_DELIVER_TASK> {
  return async (payload) => deliver(parsePayload(NOTIFICATION_DELIVER_TASK, payload).notificationId);
}
