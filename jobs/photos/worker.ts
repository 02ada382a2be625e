import type { TaskList } from "graphile-worker";
import { startWorker, type SupervisedWorker } from "../../lib/worker.js";
import { PHOTO_DELETE_TASK, PHOTO_PROCESS_TASK, photoDeleteTask, photoProcessTask } from "./task.js";
import type { SafeFetchOptions } from "../../lib/safe-fetch.js";
import { createPartnerPhotoFetcher } from "../partner-photos/fetch.js";
import { PARTNER_PHOTO_FETCH_TASK, partnerPhotoFetchTask } from "../partner-photos/task.js";
import { createPhotoObjectDeleter } from "./delete.js";
import { createPhotoProcessor, type PhotoJobDeps } from "./process.js";

/** The photos family's tasks: processing and deleting stored objects (CPU and about 10 MB of raster a decode). */
export function photoTasks(deps: PhotoJobDeps): TaskList {
  return {
    [PHOTO_PROCESS_TASK]: photoProcessTask(createPhotoProcessor(deps)),
    [PHOTO_DELETE_TASK]: photoDeleteTask(createPhotoObjectDeleter(deps)),
  };
}

/** The partner-photos family's task: a partner's photo by URL, fetched under the SSRF guard, then photo__process as an upload. */
export function partnerPhotoTasks(deps: PhotoJobDeps & { partnerPhotoFetch?: SafeFetchOptions }): TaskList {
  return { [PARTNER_PHOTO_FETCH_TASK]: partnerPhotoFetchTask(createPartnerPhotoFetcher({ ...deps, fetch: deps.partnerPhotoFetch })) };
}

/** Both photo families on one runner: for tests and benches that need photos processed, not their slots apart. */
export function startPhotoWorker(
  deps: PhotoJobDeps & { partnerPhotoFetch?: SafeFetchOptions },
  concurrency: number,
): Promise<SupervisedWorker> {
  return startWorker({ pool: deps.pool, logger: deps.logger, taskList: { ...photoTasks(deps), ...partnerPhotoTasks(deps) }, concurrency });
}
