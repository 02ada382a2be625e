import type { z } from "zod";

/**
 * A queued task's definition: its payload's zod schema, its attempts and how
 * its job key is built. Each family's `task.ts` defines its tasks with it,
 * and jobs/registry.ts gathers them.
 */
export interface QueuedTask<S extends z.ZodType, R> {
  payload: S;
  /** graphile-worker's attempts of the job, unless the caller gives its own. */
  maxAttempts: number;
  /**
   * The job key's parts after the task name, from the payload unless the
   * task names another reference (`R`). One job waits per key: a second
   * enqueue replaces a waiting one, and moves the key off one a worker holds.
   */
  key: (ref: R) => readonly string[];
}

export const queued = <S extends z.ZodType, R = z.output<S>>(task: QueuedTask<S, R>) => task;
