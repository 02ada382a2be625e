import type { Task } from "graphile-worker";
import { z } from "zod";
import { queued } from "../define.js";

export const PHOTO_PROCESS_TASK = "photo__process";
export const PHOTO_DELETE_TASK = "photo__delete_objects";

const photoPayload = z.object({ photoId: z.uuid() });

export const PHOTO_QUEUED_TASKS = {
  /** Queued by the API with each upload; the last attempt marks the photo failed instead of throwing. */
  [PHOTO_PROCESS_TASK]: queued({ payload: photoPayload, maxAttempts: 5, key: (job) => [job.photoId] }),
  /** Queued by DELETE /v1/photos/{id}: removes the stored objects no live photo names. */
  [PHOTO_DELETE_TASK]: queued({ payload: photoPayload, maxAttempts: 10, key: (job) => [job.photoId] }),
};

/**
 * Queued by the API with each upload (api/photos/routes.ts); the notifier's
 * processor does the work and is told which attempt this is, so the last one
 * can mark the photo failed instead of throwing.
 */
export function photoProcessTask(
  process: (photoId: string, attempt: { attempt: number; maxAttempts: number }) => Promise<void>,
): Task {
  return async (payload, helpers) =>
    process(photoPayload.parse(payload).photoId, { attempt: helpers.job.attempts, maxAttempts: helpers.job.max_attempts });
}

/** Queued by DELETE /v1/photos/{id}; the notifier's deleter removes the stored objects. */
export function photoDeleteTask(deleteObjects: (photoId: string) => Promise<void>): Task {
  return async (payload) => deleteObjects(photoPayload.parse(payload).photoId);
}
