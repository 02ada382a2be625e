import type { Queryable } from "../lib/db.js";
import { QUEUED_TASKS, type KeyRef, type Payload, type TaskName } from "./registry.js";
import { DELIVERY_BATCH_MAX, type Channel } from "../lib/notifications.js";
import { deliverBatchTask, deliverTask } from "./delivery/task.js";

/**
 * The graphile-worker relations jobs/job-state.ts reads, named here with the
 * functions this file calls, so one file names graphile-worker's schema. The
 * private tables may change in any release (its migration 000016 renamed jobs
 * to _private_jobs, 000017 added the jobs view): job-state.ts says why each is read.
 */
export const WORKER_RELATIONS = {
  jobs: "graphile_worker.jobs",
  privateJobs: "graphile_worker._private_jobs",
  privateTasks: "graphile_worker._private_tasks",
  knownCrontabs: "graphile_worker._private_known_crontabs",
} as const;

/** A job as it was queued, to be added again (requeue). */
export interface StoredJob<T extends TaskName = TaskName> {
  task: T;
  key: string;
  payload: unknown;
  maxAttempts: number;
}

/**
 * The one way to queue a graphile-worker job: in the caller's transaction,
 * through graphile-worker's add_jobs(), so the job commits or rolls back
 * with the write that needs it. The task must be in QUEUED_TASKS
 * (jobs/registry.ts): its payload's type is inferred from the task's
 * schema, and the payload is parsed with it before anything is written. The
 * job key is built here from the task's key parts, never passed in as text
 * (requeue keeps the key a queued job has). The only module that calls
 * graphile-worker's SQL functions; reading job state is jobs/job-state.ts.
 */

export interface JobOptions {
  /** Attempts before graphile-worker gives up; the task's own (QUEUED_TASKS) when left out. */
  maxAttempts?: number;
  /** graphile-worker runs lower numbers first; 0 when left out. */
  priority?: number;
  /**
   * Not before then; now when left out. A string is a timestamptz as
   * Postgres wrote it (lib/db.ts exactTime), which keeps the microseconds a
   * Date drops.
   */
  runAt?: Date | string;
}

/** A task whose key is built from its payload may take another reference; one whose key is not must be given one. */
type KeyOption<T extends TaskName> = Payload<T> extends KeyRef<T> ? { key?: KeyRef<T> } : { key: KeyRef<T> };
export type EnqueueOptions<T extends TaskName> = JobOptions & KeyOption<T>;
type OptionsArgument<T extends TaskName> = Payload<T> extends KeyRef<T> ? [options?: EnqueueOptions<T>] : [options: EnqueueOptions<T>];

/** One job for enqueueMany: any queued task with its payload, and its options when it needs them. */
export type JobSpec<T extends TaskName = TaskName> = {
  [K in T]: { task: K; payload: Payload<K> } & (Payload<K> extends KeyRef<K> ? { options?: EnqueueOptions<K> } : { options: EnqueueOptions<K> });
}[T];

/** A task's key reference with an SQL expression for each of its required parts (jobKeySql). */
export type SqlKeyRef<T extends TaskName> = { [K in keyof KeyRef<T> as undefined extends KeyRef<T>[K] ? never : K]-?: string };

type KeyParts<R> = (ref: R) => readonly string[];

/** The job key of task T for `ref`: `<task>:<part>:<part>…`. */
export function jobKey<T extends TaskName>(task: T, ref: KeyRef<T>): string {
  const parts = (QUEUED_TASKS[task].key as KeyParts<KeyRef<T>>)(ref);
  if (parts.some((part) => typeof part !== "string" || part === "")) throw new Error(`job key of ${task}: a part is missing`);
  return [task, ...parts].join(":");
}

/** The same key as jobKey, as an SQL expression of the parts' expressions (for a statement that joins on it). */
export function jobKeySql<T extends TaskName>(task: T, ref: SqlKeyRef<T>): string {
  const parts = (QUEUED_TASKS[task].key as unknown as KeyParts<SqlKeyRef<T>>)(ref);
  return [`'${task}'`, ...parts.map((expression) => `(${expression})::text`)].join(` || ':' || `);
}

/** A job as add_jobs takes it; the payload is JSON. */
interface JobRow {
  task: string;
  payload: string;
  key: string;
  maxAttempts: number;
  priority: number | null;
  runAt: Date | string | null;
}

function jobRow<T extends TaskName>(task: T, payload: Payload<T>, options: EnqueueOptions<T> | undefined): JobRow {
  const spec = QUEUED_TASKS[task];
  if (!spec) throw new Error(`${task} is not a queued task (jobs/registry.ts)`);
  const parsed = spec.payload.parse(payload);
  return {
    task,
    payload: JSON.stringify(parsed),
    key: jobKey(task, (options?.key ?? parsed) as KeyRef<T>),
    maxAttempts: options?.maxAttempts ?? spec.maxAttempts,
    priority: options?.priority ?? null,
    runAt: options?.runAt ?? null,
  };
}

/**
 * One add_jobs call for the lot, one job per key, the last winning: add_jobs
 * refuses a key twice in one call ("ON CONFLICT DO UPDATE command cannot
 * affect row a second time"), which failed the whole call, for ever, when
 * two events about one report (two PATCHes) reached the consumer together.
 */
async function addJobs(client: Queryable, rows: JobRow[]): Promise<void> {
  const jobs = [...new Map(rows.map((row) => [row.key, row])).values()];
  if (jobs.length === 0) return;
  await client.query(
    `select from graphile_worker.add_jobs(
       array(select (task, payload, null, run_at, max_attempts, job_key, priority, null)::graphile_worker.job_spec
             from unnest($1::text[], $2::json[], $3::timestamptz[], $4::int[], $5::text[], $6::int[])
                  as j(task, payload, run_at, max_attempts, job_key, priority)))`,
    [
      jobs.map((j) => j.task),
      jobs.map((j) => j.payload),
      jobs.map((j) => j.runAt),
      jobs.map((j) => j.maxAttempts),
      jobs.map((j) => j.key),
      jobs.map((j) => j.priority),
    ],
  );
}

/** Queues one job in the caller's transaction (a pool queues it on its own). */
export async function enqueue<T extends TaskName>(client: Queryable, task: T, payload: Payload<T>, ...[options]: OptionsArgument<T>): Promise<void> {
  await addJobs(client, [jobRow(task, payload, options as EnqueueOptions<T> | undefined)]);
}

/** Queues jobs in the caller's transaction in one round trip; of two with one key, the later one is queued. */
export async function enqueueMany(client: Queryable, jobs: readonly JobSpec[]): Promise<void> {
  await addJobs(
    client,
    jobs.map((job) => jobRow(job.task, job.payload, job.options as EnqueueOptions<TaskName> | undefined)),
  );
}

/** A notification a delivery job sends: its channel names the job's task (jobs/delivery/task.ts). */
export interface PendingDelivery {
  id: string;
  channel: Channel;
}

/**
 * Delivery jobs for new or replayed notifications, one add_jobs call for the
 * lot, each on its channel's task: the consumer, the digests, the stall
 * sweep, a replay and a retry queue them.
 */
export async function enqueueDeliveries(client: Queryable, deliveries: readonly PendingDelivery[], options: { priority?: number } = {}): Promise<void> {
  await enqueueMany(
    client,
    deliveries.map(({ id, channel }) => ({ task: deliverTask(channel), payload: { notificationId: id }, options })),
  );
}

/**
 * Delivery jobs for the alert fan-out's and the digest's new rows: `size`
 * notifications of one channel per batch job, in one add_jobs call. A batch
 * job takes its notifications' locks, reads, updates and unlocks them a
 * statement each (jobs/delivery/delivery.ts createBatchDelivery).
 */
export async function enqueueDeliveryBatches(
  client: Queryable,
  deliveries: readonly PendingDelivery[],
  options: { priority?: number; size: number },
): Promise<void> {
  const { size: asked, ...jobOptions } = options;
  const size = Math.max(1, Math.min(asked, DELIVERY_BATCH_MAX));
  const byChannel = new Map<Channel, string[]>();
  for (const { id, channel } of deliveries) {
    const ids = byChannel.get(channel);
    if (ids) ids.push(id);
    else byChannel.set(channel, [id]);
  }
  const jobs: JobSpec[] = [];
  for (const [channel, ids] of byChannel) {
    for (let i = 0; i < ids.length; i += size) {
      jobs.push({ task: deliverBatchTask(channel), payload: { notificationIds: ids.slice(i, i + size) }, options: jobOptions });
    }
  }
  await enqueueMany(client, jobs);
}

/**
 * Adds again, under their keys, jobs read from the queue (job-state.ts
 * lockedJobs): graphile-worker moves a key from a job a worker holds to the
 * new one. Their payloads are parsed as a new job's would be.
 */
export async function requeue(client: Queryable, jobs: readonly StoredJob[]): Promise<void> {
  await addJobs(
    client,
    jobs.map((job) => ({
      task: job.task,
      payload: JSON.stringify(QUEUED_TASKS[job.task].payload.parse(job.payload)),
      key: job.key,
      maxAttempts: job.maxAttempts,
      priority: null,
      runAt: null,
    })),
  );
}

/** Deletes jobs that are not locked (or whose lock has expired), as graphile-worker does with a job that succeeded. */
export async function completeJobs(client: Queryable, ids: readonly number[]): Promise<void> {
  await client.query(`select from graphile_worker.complete_jobs($1::bigint[])`, [ids]);
}

/**
 * Makes a job not locked by a worker run now with its attempts reset,
 * through graphile-worker's reschedule_jobs (the operator's retry). False
 * when no such job is free to change: gone, or a worker took it meanwhile.
 */
export async function retryJob(client: Queryable, id: number): Promise<boolean> {
  const { rowCount } = await client.query(`select from graphile_worker.reschedule_jobs(array[$1::bigint], run_at => now(), attempts => 0)`, [id]);
  return (rowCount ?? 0) > 0;
}

/**
 * Fails a job not locked by a worker for good (attempts used up, `error` as
 * its last error), through graphile-worker's permanently_fail_jobs. False
 * when no such job is free to change.
 */
export async function failJob(client: Queryable, id: number, error: string): Promise<boolean> {
  const { rowCount } = await client.query(`select from graphile_worker.permanently_fail_jobs(array[$1::bigint], $2::text)`, [id, error]);
  return (rowCount ?? 0) > 0;
}
