import { startWorker, type SupervisedWorker } from "../../lib/worker.js";
import { PARTNER_PHOTO_FETCH_TASK, PHOTO_DELETE_TASK, PHOTO_PROCESS_TASK } from "../../lib/job-payloads.js";
import type { SafeFetchOptions } from "../../lib/safe-fetch.js";
import { createPartnerPhotoFetcher, partnerPhotoFetchTask } from "../partner-photos/fetch.js";
import { photoDeleteTask } from "../photo-delete.js";
import { photoProcessTask } from "../photo-process.js";
import { createPhotoObjectDeleter } from "./delete.js";
import { createPhotoProcessor, type PhotoJobDeps } from "./process.js";

/**
 * The photo jobs on a graphile-worker runner of their own: a runner fetches
 * only the tasks it knows, so a few slow decodes (CPU and about 10 MB of
 * raster each) never hold up notification deliveries, and the decode
 * concurrency is set apart from the notifier's.
 */
export function startPhotoWorker(
  deps: PhotoJobDeps & { partnerPhotoFetch?: SafeFetchOptions },
  concurrency: number,
): Promise<SupervisedWorker> {
  return startWorker({
    pool: deps.pool,
    logger: deps.logger,
    taskList: {
      [PHOTO_PROCESS_TASK]: photoProcessTask(createPhotoProcessor(deps)),
      [PHOTO_DELETE_TASK]: photoDeleteTask(createPhotoObjectDeleter(deps)),
      // A partner's photo by URL: fetched under the SSRF guard, then photo__process as an upload.
      [PARTNER_PHOTO_FETCH_TASK]: partnerPhotoFetchTask(createPartnerPhotoFetcher({ ...deps, fetch: deps.partnerPhotoFetch })),
    },
    concurrency,
  });
}
