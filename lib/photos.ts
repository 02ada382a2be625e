import type { Queryable } from "./db.js";

/**
 * What the API (uploads, serving, delete) and the notifier (processing,
 * object deletion) agree on about photos. The SQL check constraints of the
 * photo table use the same lists (migrations/committed/000008-photos.sql).
 */

export const PHOTO_STATUSES = ["processing", "ready", "failed", "deleted"] as const;
export type PhotoStatus = (typeof PHOTO_STATUSES)[number];

/** What a photo belongs to; also the moderation target type of each (an animal is not one). */
export const PHOTO_PARENT_TYPES = ["lost_report", "found_report", "animal"] as const;
export type PhotoParentType = (typeof PHOTO_PARENT_TYPES)[number];
export interface PhotoParent {
  type: PhotoParentType;
  id: string;
}

/** The parent's column on the photo table. */
export const PHOTO_PARENT_COLUMN: Record<PhotoParentType, string> = {
  lost_report: "lost_report_id",
  found_report: "found_report_id",
  animal: "animal_id",
};

/** "At most 10 MiB" of the contract, for the uploaded file part. */
export const MAX_UPLOAD_BYTES = 10 * 1024 * 1024;
/** Non-deleted photos (processing, ready or failed) one report or animal may have. */
export const MAX_PHOTOS_PER_PARENT = 5;

/**
 * Transaction-scoped advisory locks on object keys, in a fixed order. Every
 * writer of a key together with the row naming it (upload, processing) and
 * every deleter that first checks no live row names it takes these, so a
 * content-addressed object shared by two photos is never deleted under the
 * one that is just starting to use it.
 */
export async function lockObjectKeys(client: Queryable, keys: string[]): Promise<void> {
  for (const key of [...new Set(keys)].sort()) {
    await client.query(`select pg_advisory_xact_lock(hashtextextended('photo-object:' || $1::text, 0))`, [key]);
  }
}
