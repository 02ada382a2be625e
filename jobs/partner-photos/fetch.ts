import type { Task } from "graphile-worker";
import { withTransaction, type Pool, type Queryable } from "../../lib/db.js";
import { EventType } from "../../lib/events.js";
import { findTruncation, IMAGE_MIME_TYPES, sniffImageType } from "../../lib/images/index.js";
import { parsePayload } from "../registry.js";
import { PARTNER_PHOTO_FETCH_TASK } from "./task.js";
import { PHOTO_PROCESS_TASK } from "../photos/task.js";
import type { Logger } from "../../lib/logger.js";
import { recordEvent } from "../../lib/outbox.js";
import { partnerActorId } from "../../lib/partners.js";
import { lockObjectKeys } from "../../lib/photos.js";
import { enqueue } from "../queue.js";
import { FetchRefused, safeFetch, type SafeFetchOptions } from "../../lib/safe-fetch.js";
import { originalKey, sha256Hex, type ObjectStorage } from "../../lib/storage/index.js";

/**
 * partner__photo_fetch (queued by POST /partners/v2/animals/{id}/photos):
 * fetches one photo URL under the SSRF guard, then hands the bytes to the
 * photo pipeline exactly as an upload does (a photo row, its
 * photo_uploaded event and its photo__process job, and the original stored,
 * in one transaction), so the same limits apply and metadata is stripped.
 * A refused or unusable fetch marks the fetch `failed` with a reason the
 * partner reads at GET /partners/v2/animals/{id}; so does the last attempt
 * of any other failure. Idempotent: a fetch no longer `fetching` is left alone.
 */

export interface PartnerPhotoFetchDeps {
  pool: Pool;
  storage: ObjectStorage;
  logger: Logger;
  wakeRelay?: () => void;
  /** The guard's settings: PARTNER_PHOTO_FETCH_ALLOW as allowHosts; tests add a resolver or a CA. */
  fetch?: SafeFetchOptions;
}

interface FetchRow {
  id: string;
  partnerId: string;
  foundReportId: string;
  url: string;
  status: "fetching" | "fetched" | "failed";
}

async function getFetch(client: Queryable, id: string, lock = false): Promise<FetchRow | null> {
  const { rows } = await client.query<FetchRow>(
    `select id, partner_id as "partnerId", found_report_id as "foundReportId", url, status
     from partner_photo_fetch where id = $1::uuid${lock ? " for update" : ""}`,
    [id],
  );
  return rows[0] ?? null;
}

async function markFailed(pool: Pool, id: string, reason: string): Promise<void> {
  await pool.query(
    `update partner_photo_fetch set status = 'failed', failure_reason = $2::text, updated_at = now()
     where id = $1::uuid and status = 'fetching'`,
    [id, reason.slice(0, 500)],
  );
}

export function createPartnerPhotoFetcher(deps: PartnerPhotoFetchDeps) {
  const { pool, storage, logger } = deps;
  return async (fetchId: string, { attempt, maxAttempts }: { attempt: number; maxAttempts: number }): Promise<void> => {
    const row = await getFetch(pool, fetchId);
    if (row?.status !== "fetching") return;
    await pool.query(`update partner_photo_fetch set attempts = $2::int, updated_at = now() where id = $1::uuid`, [fetchId, attempt]);
    try {
      let bytes: Buffer;
      try {
        ({ bytes } = await safeFetch(row.url, deps.fetch));
      } catch (err) {
        if (!(err instanceof FetchRefused)) throw err;
        logger.info({ fetchId, reason: err.reason }, "partner photos: fetch refused");
        return markFailed(pool, fetchId, err.message);
      }
      const type = sniffImageType(bytes);
      if (type === null) return markFailed(pool, fetchId, "the URL did not give a JPEG, PNG, WebP, HEIC/HEIF or GIF image (told from its bytes)");
      const truncation = findTruncation(bytes, type);
      if (truncation) return markFailed(pool, fetchId, `the image is truncated or corrupt: ${truncation}`);
      const sha256 = sha256Hex(bytes);
      const key = originalKey(sha256);
      const uploaderId = partnerActorId(row.partnerId);
      const stored = await withTransaction(pool, async (client) => {
        const current = await getFetch(client, fetchId, true);
        if (current?.status !== "fetching") return false;
        const { rows } = await client.query<{ id: string }>(
          `insert into photo (uploader_id, found_report_id, original_sha256, original_type, original_bytes)
           values ($1::text, $2::uuid, $3::text, $4::text, $5::int) returning id`,
          [uploaderId, row.foundReportId, sha256, type, bytes.length],
        );
        const photoId = rows[0]!.id;
        await client.query(
          `update partner_photo_fetch set status = 'fetched', photo_id = $2::uuid, failure_reason = null, updated_at = now() where id = $1::uuid`,
          [fetchId, photoId],
        );
        await recordEvent(client, EventType.PhotoUploaded, { photoId, uploaderId, parentType: "found_report", parentId: row.foundReportId }, logger);
        await enqueue(client, PHOTO_PROCESS_TASK, { photoId });
        // Last, under the key's lock, as an upload does: a job releasing an equal original waits for this commit.
        await lockObjectKeys(client, [key]);
        await storage.put(key, bytes, IMAGE_MIME_TYPES[type]);
        return true;
      });
      if (stored) deps.wakeRelay?.();
      logger.info({ fetchId, bytes: bytes.length, stored }, "partner photos: fetched");
    } catch (err) {
      if (attempt < maxAttempts) throw err;
      logger.error({ err, fetchId, attempt }, "partner photos: fetch failed on the last attempt");
      await markFailed(pool, fetchId, `the photo could not be stored after ${attempt} attempts (server trouble); send it again`);
    }
  };
}
