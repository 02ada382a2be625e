import type { Task } from "graphile-worker";
import { z } from "zod";
import { PHOTO_DELETE_TASK } from "../lib/photos.js";

export { PHOTO_DELETE_TASK };

declare global {
  namespace GraphileWorker {
    interface Tasks {
      photo_delete_objects: { photoId: string };
    }
  }
}

const Payload = z.object({ photoId: z.uuid() });

/** Queued by DELETE /v1/photos/{id}; the notifier's deleter removes the stored objects. */
export function photoDeleteTask(deleteObjects: (photoId: string) => Promise<void>): Task<"photo_delete_objects"> {
  return async (payload) => deleteObjects(Payload.parse(payload).photoId);
}
