import { withTransaction } from "../../lib/db.js";
import { lockObjectKeys } from "../../lib/photos.js";
import { originalKey } from "../../lib/storage/index.js";
import type { PhotoJobDeps } from "./process.js";
import * as store from "./store.js";

/**
 * The photo__delete_objects job (jobs/photos/task.ts), queued with DELETE
 * /v1/photos/{id}: removes the deleted photo's original and variants from
 * storage, except objects another photo still needs (equal bytes share one
 * key). Idempotent: deleting a missing object is no error, and a re-run finds
 * the same keys. Object locks are taken before the row lock, in the same
 * order as the processing job takes them, so the two never deadlock.
 */
export function createPhotoObjectDeleter({ pool, storage, logger }: PhotoJobDeps) {
  return async (photoId: string): Promise<void> => {
    const photo = await store.getPhoto(pool, photoId);
    if (photo?.status !== "deleted") return;
    const keys = [originalKey(photo.originalSha256), photo.thumbKey, photo.displayKey].filter((k): k is string => k !== null);
    const deleted = await withTransaction(pool, async (client) => {
      await lockObjectKeys(client, keys);
      // A deleted photo's keys no longer change: the processing job only writes them while it is processing.
      if ((await store.getPhoto(client, photoId, true))?.status !== "deleted") return [];
      const needed = await store.keysStillNeeded(client, photoId, keys);
      const unneeded = keys.filter((key) => !needed.has(key));
      for (const key of unneeded) await storage.delete(key);
      await store.markObjectsDeleted(client, photoId);
      return unneeded;
    });
    logger.info({ photoId, deleted: deleted.length, kept: keys.length - deleted.length }, "photos: objects deleted");
  };
}
