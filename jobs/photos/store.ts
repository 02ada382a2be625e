import type { Queryable } from "../../lib/db.js";
import type { PhotoParent, PhotoStatus } from "../../lib/photos.js";
import { ORIGINALS_PREFIX } from "../../lib/storage/index.js";

/** SQL of the photo table for the notifier's jobs: processing and deleting stored objects. */

export interface JobPhoto {
  id: string;
  uploaderId: string;
  parent: PhotoParent;
  status: PhotoStatus;
  originalSha256: string;
  thumbKey: string | null;
  displayKey: string | null;
}

const columns = `id, uploader_id as "uploaderId",
  case when lost_report_id is not null then json_build_object('type', 'lost_report', 'id', lost_report_id)
       when found_report_id is not null then json_build_object('type', 'found_report', 'id', found_report_id)
       else json_build_object('type', 'animal', 'id', animal_id) end as parent,
  status, original_sha256 as "originalSha256", thumb_key as "thumbKey", display_key as "displayKey"`;

export async function getPhoto(client: Queryable, id: string, lock = false): Promise<JobPhoto | null> {
  const { rows } = await client.query<JobPhoto>(`select ${columns} from photo where id = $1::uuid${lock ? " for update" : ""}`, [id]);
  return rows[0] ?? null;
}

/** Counts an attempt on a photo still processing, so its owner and admins see how far it got. */
export async function countAttempt(client: Queryable, id: string, attempt: number): Promise<void> {
  await client.query(`update photo set attempts = $2::int, updated_at = now() where id = $1::uuid and status = 'processing'`, [id, attempt]);
}

export interface Variants {
  thumbKey: string;
  displayKey: string;
  width: number;
  height: number;
  phash: string;
}

export async function markReady(client: Queryable, id: string, v: Variants): Promise<void> {
  await client.query(
    `update photo set status = 'ready', thumb_key = $2::text, display_key = $3::text, width = $4::int, height = $5::int,
       phash = $6::text, failure_reason = null, ready_at = now(), updated_at = now()
     where id = $1::uuid`,
    [id, v.thumbKey, v.displayKey, v.width, v.height, v.phash],
  );
}

export async function markFailed(client: Queryable, id: string, reason: string): Promise<void> {
  await client.query(`update photo set status = 'failed', failure_reason = $2::text, updated_at = now() where id = $1::uuid`, [
    id,
    reason.slice(0, 500),
  ]);
}

export async function markObjectsDeleted(client: Queryable, id: string): Promise<void> {
  await client.query(`update photo set objects_deleted_at = now(), updated_at = now() where id = $1::uuid`, [id]);
}

/**
 * Of these object keys, the ones another photo still needs: a variant named
 * by any photo that is not deleted, an original (`originals/<sha256>`) of a
 * photo still processing. Callers hold lockObjectKeys on the keys.
 */
export async function keysStillNeeded(client: Queryable, exceptPhotoId: string, keys: string[]): Promise<Set<string>> {
  const { rows } = await client.query<{ key: string }>(
    `select k.key from unnest($2::text[]) as k(key)
     where exists (select from photo p where p.id <> $1::uuid and p.status <> 'deleted'
                     and (p.thumb_key = k.key or p.display_key = k.key))
        or (starts_with(k.key, $3::text) and exists (select from photo p where p.id <> $1::uuid and p.status = 'processing'
              and p.original_sha256 = substr(k.key, length($3::text) + 1)))`,
    [exceptPhotoId, keys, ORIGINALS_PREFIX],
  );
  return new Set(rows.map((r) => r.key));
}
