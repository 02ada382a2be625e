import type { Task } from "graphile-worker";
import { z } from "zod";
import { NOTIFICATION_DELIVER_TASK } from "../lib/notifications.js";

export { NOTIFICATION_DELIVER_TASK };

declare global {
  namespace GraphileWorker {
    interface Tasks {
      notification_deliver: { notificationId: string };
    }
  }
}

const Payload = z.object({ notificationId: z.uuid() });

/** Queued with each notification (lib/notifications.ts); the notifier's delivery does the work. */
export function notificationDeliverTask(deliver: (notificationId: string) => Promise<void>): Task<"notification_deliver"> {
  return async (payload) => deliver(Payload.parse(payload).notificationId);
}
