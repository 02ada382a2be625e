import type { z } from "zod";
import { DELIVERY_QUEUED_TASKS } from "./delivery/task.js";
import { FANOUT_QUEUED_TASKS } from "./fanout/task.js";
import { MATCHING_QUEUED_TASKS } from "./matching/task.js";
import { PARTNER_PHOTO_QUEUED_TASKS } from "./partner-photos/task.js";
import { PHOTO_QUEUED_TASKS } from "./photos/task.js";

/**
 * Every graphile-worker task that something queues, gathered from the
 * families' `task.ts` files, where each one's name, payload schema, attempts
 * and job key are defined together. jobs/queue.ts queues through it, and a
 * task's entry point parses its payload with the same schema, so a producer
 * can only write a job its task can read. Cron tasks, which nothing queues,
 * are named in jobs/scheduled/task.ts beside their crontab lines; which
 * process runs which family is jobs/families.ts.
 *
 * Task names follow graphile/starter's `<subject>__<action>`; they are stored
 * in job rows and crontab lines.
 */
export const QUEUED_TASKS = {
  ...DELIVERY_QUEUED_TASKS,
  ...FANOUT_QUEUED_TASKS,
  ...MATCHING_QUEUED_TASKS,
  ...PHOTO_QUEUED_TASKS,
  ...PARTNER_PHOTO_QUEUED_TASKS,
};

type QueuedTasks = typeof QUEUED_TASKS;
export type TaskName = keyof QueuedTasks;
/** What a producer queues for task T. */
export type Payload<T extends TaskName> = z.input<QueuedTasks[T]["payload"]>;
/** What task T's job reads, parsed. */
export type ParsedPayload<T extends TaskName> = z.output<QueuedTasks[T]["payload"]>;
/** What task T's job key is built from: its payload, or the task's own reference. */
export type KeyRef<T extends TaskName> = Parameters<QueuedTasks[T]["key"]>[0];

/** A payload parsed with the schema its task was queued with. */
export function parsePayload<T extends TaskName>(task: T, payload: unknown): ParsedPayload<T> {
  return QUEUED_TASKS[task].payload.parse(payload) as ParsedPayload<T>;
}
