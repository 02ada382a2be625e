import type { Task } from "graphile-worker";
import { z } from "zod";
import { DELIVERY_BATCH_MAX, type Channel } from "../../lib/notifications.js";
import { queued } from "../define.js";

/**
 * The delivery family's tasks: one pair a channel, so each channel's
 * deliveries have slots of their own (a runner fetches only the tasks it
 * knows) and twenty pushes hanging on one slow endpoint never hold up an
 * email. in_app rows are written sent and need no job.
 */
export type DeliveryChannel = Exclude<Channel, "in_app">;

export const DELIVERY_TASKS = {
  email: { one: "notification__deliver_email", batch: "notification__deliver_batch_email" },
  push: { one: "notification__deliver_push", batch: "notification__deliver_batch_push" },
  sms: { one: "notification__deliver_sms", batch: "notification__deliver_batch_sms" },
  // Only an in_app row some older writer left pending (the stall sweep finds it): the email family runs it.
  in_app: { one: "notification__deliver_in_app", batch: "notification__deliver_batch_in_app" },
} as const satisfies Record<Channel, { one: string; batch: string }>;

/** The channels with a delivery family of their own. */
export const DELIVERY_CHANNELS = (Object.keys(DELIVERY_TASKS) as Channel[]).filter((c): c is DeliveryChannel => c !== "in_app");

type OneTask = (typeof DELIVERY_TASKS)[Channel]["one"];
type BatchTask = (typeof DELIVERY_TASKS)[Channel]["batch"];

/** One notification's delivery: queued with each notification not written sent, by a retry, the stall sweep and a replay. */
const deliverOne = queued({
  payload: z.object({ notificationId: z.uuid() }),
  // Delivery retries happen inside the job; these cover only the job itself failing (Postgres unreachable).
  maxAttempts: 5,
  key: (job) => [job.notificationId],
});

/**
 * The alert fan-out's and the digest's rows, a batch a job: one lock, read,
 * update and unlock statement for the batch (docs/decisions/0085). A retry is
 * a one-notification job. The batches are disjoint, so the first id keys the job.
 */
const deliverBatch = queued({
  payload: z.object({ notificationIds: z.array(z.uuid()).min(1).max(DELIVERY_BATCH_MAX) }),
  maxAttempts: 5,
  key: (job) => [job.notificationIds[0]!],
});

export const DELIVERY_QUEUED_TASKS = Object.fromEntries(
  (Object.keys(DELIVERY_TASKS) as Channel[]).flatMap((channel) => [
    [DELIVERY_TASKS[channel].one, deliverOne],
    [DELIVERY_TASKS[channel].batch, deliverBatch],
  ]),
) as Record<OneTask, typeof deliverOne> & Record<BatchTask, typeof deliverBatch>;

/** The task that delivers one notification of this channel. */
export function deliverTask(channel: Channel): OneTask {
  return DELIVERY_TASKS[channel].one;
}

/** The task that delivers a batch of this channel's notifications. */
export function deliverBatchTask(channel: Channel): BatchTask {
  return DELIVERY_TASKS[channel].batch;
}

/** The entry points: each payload parsed with the schema it was queued with. */
export function notificationDeliverTask(deliver: (notificationId: string) => Promise<void>): Task {
  return async (payload) => deliver(deliverOne.payload.parse(payload).notificationId);
}

export function notificationDeliverBatchTask(deliver: (notificationIds: readonly string[]) => Promise<void>): Task {
  return async (payload) => deliver(deliverBatch.payload.parse(payload).notificationIds);
}
