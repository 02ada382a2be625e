import type { Task } from "graphile-worker";
import { z } from "zod";
import { queued } from "../define.js";

export const PARTNER_PHOTO_FETCH_TASK = "partner__photo_fetch";

export const PARTNER_PHOTO_QUEUED_TASKS = {
  /**
   * Queued by POST /partners/v2/animals/{id}/photos, one per URL: fetches it
   * under the SSRF guard (lib/safe-fetch.ts) and hands it to photo__process.
   * A refused fetch fails the photo at once; the last attempt fails it too.
   */
  [PARTNER_PHOTO_FETCH_TASK]: queued({ payload: z.object({ fetchId: z.uuid() }), maxAttempts: 3, key: (job) => [job.fetchId] }),
};

/** The task's entry point: its payload parsed with the schema it was queued with. */
export function partnerPhotoFetchTask(
  fetchPhoto: (fetchId: string, attempt: { attempt: number; maxAttempts: number }) => Promise<void>,
): Task {
  return async (payload, helpers) =>
    fetchPhoto(PARTNER_PHOTO_QUEUED_TASKS[PARTNER_PHOTO_FETCH_TASK].payload.parse(payload).fetchId, { attempt: helpers.job.attempts, maxAttempts: helpers.job.max_attempts });
}
