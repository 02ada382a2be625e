import { z } from "zod";
import { JOB_STATES } from "../../../jobs/job-state.js";
import { page, PageQuery } from "../../pagination.js";

/** lastError is cut here: a stack trace can run to megabytes, and the listing shows its head. */
export const LAST_ERROR_MAX = 2000;

export const JobState = z.enum(JOB_STATES).describe(
  "queued: due and not locked; scheduled: due later (new, or waiting out a retry's backoff); running: locked by a worker; failed: attempts used up.",
);

/** A graphile-worker job id: a positive whole number. */
export const JobIdParams = z.object({
  id: z
    .string()
    .regex(/^[1-9][0-9]{0,14}$/, "must be a job id: a positive whole number")
    .transform(Number),
});

export const JobsQuery = PageQuery.extend({
  task: z.string().trim().min(1).max(200).optional().describe("A task identifier; GET /v1/admin/jobs/summary lists them."),
  state: JobState.optional(),
});

/** The listing's key: the last job's id, and the filter it was issued for (another filter's cursor is refused). */
export const JobsCursor = z.object({ id: z.number().int().positive(), task: z.string().nullable(), state: JobState.nullable() });

export const JobReasonBody = z.object({ reason: z.string().trim().min(1).max(2000) }).meta({ id: "JobActionReason" });

export const JobItem = z
  .object({
    id: z.number().int(),
    task: z.string(),
    state: JobState,
    attempts: z.number().int(),
    maxAttempts: z.number().int(),
    runAt: z.string(),
    lockedAt: z.string().nullable(),
    lockedBy: z.string().nullable(),
    lastError: z.string().nullable().describe(`The last attempt's error, cut at ${LAST_ERROR_MAX} characters.`),
    createdAt: z.string(),
    payload: z.unknown().describe("The payload, masked like the outbox's stuck listing: no precise coordinates, contacts or message texts."),
  })
  .meta({ id: "WorkerJob" });
export type JobItem = z.output<typeof JobItem>;

export const JobPage = page(JobItem);

export const TaskJobs = z.object({
  task: z.string(),
  queued: z.number().int(),
  scheduled: z.number().int(),
  running: z.number().int(),
  failed: z.number().int(),
  oldestQueuedSeconds: z.number().int().describe("How long the task's longest-waiting queued job has been due; 0 when none is queued."),
});

export const CronItem = z.object({
  identifier: z.string().describe("The crontab item: its task, unless its line names another identifier."),
  knownSince: z.string(),
  lastRun: z.string().nullable().describe("When it was last queued; null when never."),
});

export const JobsSummary = z
  .object({
    asOf: z
      .string()
      .describe("When these counts were read: a summary is kept and shared for a few seconds (API_JOBS_SUMMARY_MAX_AGE_MS), a retry or fail drops it."),
    tasks: z.array(TaskJobs).describe("Every task with a job in the queue, by name."),
    cron: z.array(CronItem),
  })
  .meta({ id: "WorkerJobsSummary" });
export type JobsSummary = z.output<typeof JobsSummary>;
