import type { JobSpec } from "./queue.js";
import type { TaskName } from "./registry.js";

/**
 * A graphile-worker job an event starts besides its notifications
 * (notifier/reactions.ts): a typed job of jobs/queue.ts, which the consumer
 * queues with its batch's others in one enqueueMany.
 */
export type QueuedJob<T extends TaskName = TaskName> = JobSpec<T>;
