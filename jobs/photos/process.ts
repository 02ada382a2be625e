import { withTransaction, type Pool } from "../../lib/db.js";
import { EventType } from "../../lib/events.js";
import { ImageRejected, processImage, type ProcessedImage } from "../../lib/images/index.js";
import type { Logger } from "../../lib/logger.js";
import { recordEvent } from "../../lib/outbox.js";
import { lockObjectKeys } from "../../lib/photos.js";
import { originalKey, readAll, variantKeyFor, type ObjectStorage } from "../../lib/storage/index.js";
import * as store from "./store.js";

export interface PhotoJobDeps {
  pool: Pool;
  storage: ObjectStorage;
  logger: Logger;
  /** Called after a commit that recorded a photo event (lib/bus.ts relayWaker); without it, the relay's poll finds the event. */
  wakeRelay?: () => void;
}

/** Which graphile-worker attempt this run is (counted from 1), and how many the job has. */
export interface Attempt {
  attempt: number;
  maxAttempts: number;
}

/** What the owner and admins read when processing kept failing; the error itself goes to the log. */
const GAVE_UP = (attempts: number) => `processing failed ${attempts} times (storage or server trouble); delete it and upload the photo again`;

/** Permanent: marks a photo still processing failed, with its reason and event, in one transaction. */
async function fail({ pool, logger, wakeRelay }: PhotoJobDeps, photo: store.JobPhoto, reason: string): Promise<void> {
  const recorded = await withTransaction(pool, async (client) => {
    const current = await store.getPhoto(client, photo.id, true);
    if (current?.status !== "processing") return false;
    await store.markFailed(client, photo.id, reason);
    const { id: parentId, type: parentType } = photo.parent;
    await recordEvent(client, EventType.PhotoFailed, { photoId: photo.id, uploaderId: photo.uploaderId, parentType, parentId, reason: reason.slice(0, 500) }, logger);
    return true;
  });
  if (recorded) wakeRelay?.();
}

/**
 * The original is private and only needed to make the variants: once its
 * photo is no longer processing it is deleted, unless another photo of the
 * same bytes is still processing. Under the key's lock, so an upload of
 * equal bytes committing at this moment is seen (or waits for the delete and
 * stores it again).
 */
export async function releaseOriginal(pool: Pool, storage: ObjectStorage, photo: store.JobPhoto): Promise<void> {
  const key = originalKey(photo.originalSha256);
  await withTransaction(pool, async (client) => {
    await lockObjectKeys(client, [key]);
    if ((await store.keysStillNeeded(client, photo.id, [key])).size === 0) await storage.delete(key);
  });
}

/**
 * Stores the variants and marks the photo ready with its size and
 * perceptual hash, emitting events.photo.ready.v1, in one transaction that
 * holds the variant keys' locks (a delete of an equal variant waits for it).
 * A photo deleted meanwhile stores nothing. Variants are content-addressed,
 * so a repeated run writes the same objects again.
 */
async function storeVariants(deps: PhotoJobDeps, photo: store.JobPhoto, image: ProcessedImage): Promise<boolean> {
  const { thumb, display } = image.variants;
  const thumbKey = variantKeyFor(thumb.bytes);
  const displayKey = variantKeyFor(display.bytes);
  const stored = await withTransaction(deps.pool, async (client) => {
    await lockObjectKeys(client, [thumbKey, displayKey]);
    const current = await store.getPhoto(client, photo.id, true);
    if (current?.status !== "processing") return false;
    await deps.storage.put(thumbKey, thumb.bytes, "image/webp");
    await deps.storage.put(displayKey, display.bytes, "image/webp");
    await store.markReady(client, photo.id, { thumbKey, displayKey, width: image.width, height: image.height, phash: image.phash });
    const { id: parentId, type: parentType } = photo.parent;
    await recordEvent(
      client,
      EventType.PhotoReady,
      { photoId: photo.id, uploaderId: photo.uploaderId, parentType, parentId, width: image.width, height: image.height },
      deps.logger,
    );
    return true;
  });
  if (stored) deps.wakeRelay?.();
  return stored;
}

/**
 * The photo__process job (jobs/photos/task.ts): decode the private original
 * (refusing past 40 MP before decoding pixels), auto-rotate, make the thumb
 * and display WebPs without metadata and the dHash, store them, mark the
 * photo ready, then delete the original. An image the service cannot use
 * fails at once with its reason; any other error is thrown for
 * graphile-worker to retry, and on the last attempt the photo is marked
 * failed instead. Idempotent: a photo no longer processing only has its
 * original released.
 */
export function createPhotoProcessor(deps: PhotoJobDeps) {
  const { pool, storage, logger } = deps;
  return async (photoId: string, { attempt, maxAttempts }: Attempt): Promise<void> => {
    const photo = await store.getPhoto(pool, photoId);
    if (!photo) return;
    if (photo.status !== "processing") return releaseOriginal(pool, storage, photo);
    await store.countAttempt(pool, photoId, attempt);
    const started = performance.now();
    try {
      const original = await storage.get(originalKey(photo.originalSha256));
      if (!original) {
        await fail(deps, photo, "the uploaded original is missing from storage; upload the photo again");
        return;
      }
      let image: ProcessedImage;
      try {
        image = await processImage(await readAll(original.body));
      } catch (err) {
        if (!(err instanceof ImageRejected)) throw err;
        logger.info({ photoId, reason: err.reason }, "photos: image refused");
        await fail(deps, photo, `${err.reason}: ${err.message}`);
        await releaseOriginal(pool, storage, photo);
        return;
      }
      const stored = await storeVariants(deps, photo, image);
      await releaseOriginal(pool, storage, photo);
      logger.info({ photoId, stored, ms: Math.round(performance.now() - started), attempt }, "photos: processed");
    } catch (err) {
      if (attempt < maxAttempts) throw err;
      logger.error({ err, photoId, attempt }, "photos: processing failed on the last attempt");
      await fail(deps, photo, GAVE_UP(attempt));
      await releaseOriginal(pool, storage, photo).catch((e: unknown) => logger.warn({ err: e, photoId }, "photos: original not released"));
    }
  };
}
