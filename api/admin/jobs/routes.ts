import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { AuditAction, AuditObject, writeAuditEvent } from "../../../lib/audit.js";
import { withTransaction } from "../../../lib/db.js";
import { listJobs } from "../../../jobs/job-state.js";
import { problems } from "../../../lib/problems.js";
import type { AppDeps } from "../../deps.js";
import { requireActor } from "../../plugins/auth.js";
import { problemResponses } from "../../plugins/openapi.js";
import { decodeCursor, toPage } from "../../pagination.js";
import { JobIdParams, JobItem, JobPage, JobReasonBody, JobsCursor, JobsQuery, JobsSummary } from "./schemas.js";
import { ACTION_FROM, actOnJob, knownTasks, summaryReader, toJobItem, type JobAction } from "./store.js";

const STATES_TEXT =
  "queued = due and not locked, scheduled = due later, running = locked by a worker, failed = attempts used up";

const audited: Record<JobAction, AuditAction> = { retry: AuditAction.JobRetried, fail: AuditAction.JobFailed };

export const adminJobRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, { pool, config }) => {
  const summaries = summaryReader(pool, config.API_JOBS_SUMMARY_MAX_AGE_MS);
  app.get(
    "/v1/admin/jobs/summary",
    {
      schema: {
        tags: ["admin"],
        summary: "graphile-worker's jobs by task and state, and the cron items' last runs",
        description: `For each task with a job in the queue: how many are queued, scheduled, running and failed (${STATES_TEXT}), and how long its oldest queued job has been due. Then every crontab item a worker registered, with when it last ran. ` +
          "The counts are kept for API_JOBS_SUMMARY_MAX_AGE_MS (2 s unless set) and shared by the requests meanwhile; asOf says when they were read, and a retry or fail drops them.",
        response: { 200: JobsSummary, ...problemResponses(401, 403) },
      },
    },
    async () => summaries.read(),
  );

  app.get(
    "/v1/admin/jobs",
    {
      schema: {
        tags: ["admin"],
        summary: "List graphile-worker jobs of a task and/or state",
        description:
          `Jobs by id, oldest first, of one task and/or one state (${STATES_TEXT}). An unknown task is refused with 400 listing the known ones; ` +
          "a cursor works only with the filter it was issued for. The payload is masked like the outbox's stuck listing, and lastError is cut at 2,000 characters.",
        querystring: JobsQuery,
        response: { 200: JobPage, ...problemResponses(400, 401, 403) },
      },
    },
    async (request) => {
      const { task = null, state = null, limit, cursor } = request.query;
      const after = decodeCursor(cursor, JobsCursor);
      if (after && (after.task !== task || after.state !== state)) {
        throw problems.validation("query.cursor: was issued for another task or state", [
          { path: "query.cursor", message: "was issued for another task or state" },
        ]);
      }
      if (task !== null) {
        const known = await knownTasks(pool);
        if (!known.includes(task)) {
          const message = `must be one of: ${known.join(", ")}`;
          throw problems.validation(`query.task: ${message}`, [{ path: "query.task", message }]);
        }
      }
      // One row more than the page: it only tells toPage that another page exists.
      const rows = await listJobs(pool, { task, state, afterId: after?.id ?? null, limit: limit + 1 });
      return toPage(rows, limit, toJobItem, (row) => ({ id: row.id, task, state }));
    },
  );

  app.get(
    "/v1/admin/jobs/:id",
    {
      schema: {
        tags: ["admin"],
        summary: "One graphile-worker job, with its last error",
        params: JobIdParams,
        response: { 200: JobItem, ...problemResponses(400, 401, 403, 404) },
      },
    },
    async (request) => {
      const [row] = await listJobs(pool, { id: request.params.id, limit: 1 });
      if (!row) throw problems.notFound("job");
      return toJobItem(row);
    },
  );

  const action = (name: JobAction, summary: string, description: string) =>
    app.post(
      `/v1/admin/jobs/:id/${name}`,
      {
        schema: {
          tags: ["admin"],
          summary,
          description,
          params: JobIdParams,
          body: JobReasonBody,
          response: { 200: JobItem, ...problemResponses(400, 401, 403, 404, 409) },
        },
      },
      async (request) => {
        const actor = requireActor(request);
        const { id } = request.params;
        const { reason } = request.body;
        const done = await withTransaction(pool, async (client) => {
          const outcome = await actOnJob(client, id, name, reason);
          if ("refused" in outcome) {
            if (outcome.refused === "not-found") throw problems.notFound("job");
            throw problems.conflict(`this job is ${outcome.state}: only a ${ACTION_FROM[name].join(" or ")} job can be ${name === "retry" ? "retried" : "failed"}`);
          }
          await writeAuditEvent(client, {
            actorId: actor.id,
            action: audited[name],
            objectType: AuditObject.WorkerJob,
            objectId: String(id),
            metadata: { task: outcome.job.task, fromState: outcome.before.state, attempts: outcome.before.attempts, reason },
          });
          return toJobItem(outcome.job);
        });
        // After the commit: a summary read now shows the action.
        summaries.invalidate();
        return done;
      },
    );

  action(
    "retry",
    "Run a failed or scheduled job now, its attempts reset",
    "Through graphile-worker's reschedule_jobs: run_at now, attempts 0. A queued job is 409 (it runs anyway), so is a running one; an unknown job is 404. " +
      "Audited as admin.job.retried with the reason, in the same transaction.",
  );
  action(
    "fail",
    "Fail a queued or scheduled job for good",
    "Through graphile-worker's permanently_fail_jobs: attempts set to the maximum, last error 'failed by an operator: <reason>'. A running or already " +
      "failed job is 409; an unknown job is 404. Audited as admin.job.failed with the reason, in the same transaction.",
  );
};
