import type { Task } from "graphile-worker";
import { parsePayload, PHOTO_PROCESS_TASK } from "../lib/job-payloads.js";

/**
 * Queued by the API with each upload (api/photos/routes.ts); the notifier's
 * processor does the work and is told which attempt this is, so the last one
 * can mark the photo failed instead of throwing.
 */
export function photoProcessTask(
  process: (photoId: string, attempt: { attempt: number; maxAttempts: number }) => Promise<void>,
): Task<typeof PHOTO_PROCESS_TASK> {
  return async (payload, helpers) =>
    process(parsePayload(PHOTO_PROCESS_TASK, payload).photoId, { attempt: helpers.job.attempts, maxAttempts: helpers.job.max_attempts });
}
