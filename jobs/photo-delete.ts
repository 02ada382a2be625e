import type { Task } from "graphile-worker";
import { parsePayload, PHOTO_DELETE_TASK } from "../lib/job-payloads.js";

/** Queued by DELETE /v1/photos/{id}; the notifier's deleter removes the stored objects. */
export function photoDeleteTask(deleteObjects: (photoId: string) => Promise<void>): Task<typeof PHOTO_DELETE_TASK> {
  return async (payload) => deleteObjects(parsePayload(PHOTO_DELETE_TASK, payload).photoId);
}
