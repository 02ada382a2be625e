import type { Task } from "graphile-worker";
import { z } from "zod";
import { PHOTO_PROCESS_TASK } from "../lib/photos.js";

export { PHOTO_PROCESS_TASK };

declare global {
  namespace GraphileWorker {
    interface Tasks {
      photo_process: { photoId: string };
    }
  }
}

const Payload = z.object({ photoId: z.uuid() });

/**
 * Queued by the API with each upload (lib/photos.ts queuePhotoJob); the
 * notifier's processor does the work and is told which attempt this is, so
 * the last one can mark the photo failed instead of throwing.
 */
export function photoProcessTask(
  process: (photoId: string, attempt: { attempt: number; maxAttempts: number }) => Promise<void>,
): Task<"photo_process"> {
  return async (payload, helpers) =>
    process(Payload.parse(payload).photoId, { attempt: helpers.job.attempts, maxAttempts: helpers.job.max_attempts });
}
