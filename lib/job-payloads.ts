import { z } from "zod";

/**
 * Every graphile-worker task that something queues: its name, its payload's
 * zod schema, its attempts, and how its job key is built. lib/queue.ts
 * queues through it, and a task's entry point in jobs/ parses its payload
 * with the same schema (parsePayload), so a producer can only write a job
 * its task can read. The payload types are declared to graphile-worker from
 * here (GraphileWorker.Tasks, below), so `Task<name>` is typed too.
 *
 * Task names follow graphile/starter's `<subject>__<action>`; they are stored
 * in job rows and crontab lines. Tasks nothing queues, only a crontab
 * (alerts__digest, alerts__sweep, maintenance__prune, report__lifetime), are
 * named in their jobs/ file next to their crontab line.
 *
 * It imports only zod: every process and jobs/ import it.
 */

export const NOTIFICATION_DELIVER_TASK = "notification__deliver";
export const NOTIFICATION_DELIVER_BATCH_TASK = "notification__deliver_batch";
/** The most notifications one notification__deliver_batch job delivers. */
export const DELIVERY_BATCH_MAX = 100;
export const MATCH_SUBJECT_TASK = "match__subject";
export const ALERTS_FANOUT_TASK = "alerts__fanout";
export const PHOTO_PROCESS_TASK = "photo__process";
export const PHOTO_DELETE_TASK = "photo__delete_objects";
export const PARTNER_PHOTO_FETCH_TASK = "partner__photo_fetch";

export const MATCH_SUBJECT_KINDS = ["lost", "found", "sighting"] as const;

/** A fan-out's job key: the report and the event that started it; `start` for the start's own. */
export interface FanoutKeyRef {
  reportId: string;
  eventId: string;
  start?: true;
}

interface QueuedTask<S extends z.ZodType, R> {
  payload: S;
  /** graphile-worker's attempts of the job, unless the caller gives its own. */
  maxAttempts: number;
  /**
   * The job key's parts after the task name, from the payload unless the
   * task names another reference (`R`). One job waits per key: a second
   * enqueue replaces a waiting one, and moves the key off one a worker holds.
   */
  key: (ref: R) => readonly string[];
}

const queued = <S extends z.ZodType, R = z.output<S>>(task: QueuedTask<S, R>) => task;

const photoPayload = z.object({ photoId: z.uuid() });

export const QUEUED_TASKS = {
  /** Queued with each notification not written sent (lib/queue.ts enqueueDeliveries). */
  [NOTIFICATION_DELIVER_TASK]: queued({
    payload: z.object({ notificationId: z.uuid() }),
    // Delivery retries happen inside the job; these cover only the job itself failing (Postgres unreachable).
    maxAttempts: 5,
    key: (job) => [job.notificationId],
  }),
  /**
   * Queued by the alert fan-out for its new rows, a batch of them per job
   * (lib/queue.ts enqueueDeliveryBatches): one lock, read, update and unlock
   * statement for the batch instead of four per notification
   * (docs/decisions/0084). A retry is a notification__deliver job of its own.
   * The batches are disjoint, so the first id keys the job.
   */
  [NOTIFICATION_DELIVER_BATCH_TASK]: queued({
    payload: z.object({ notificationIds: z.array(z.uuid()).min(1).max(DELIVERY_BATCH_MAX) }),
    maxAttempts: 5,
    key: (job) => [job.notificationIds[0]!],
  }),
  /** Queued by the notifier's reactions when a report or an unlinked sighting is recorded or changed. */
  [MATCH_SUBJECT_TASK]: queued({
    payload: z.object({ kind: z.enum(MATCH_SUBJECT_KINDS), id: z.uuid() }),
    maxAttempts: 10,
    key: (subject) => [subject.kind, subject.id],
  }),
  /**
   * One batch of an alert fan-out. The start (batch 0, queued by the
   * consumer's reaction) also names the report and the event type, to record
   * the fan-out. The batches of one fan-out share its key, so re-queuing one
   * (the stall sweep, a replay) replaces a waiting job instead of adding a
   * second; the start's key differs (`:start`), so a redelivered event
   * replaces only a start still waiting. A failed batch is retried by
   * graphile-worker, and re-queued by the stall sweep after that.
   */
  [ALERTS_FANOUT_TASK]: queued({
    payload: z.object({
      fanoutId: z.uuid(),
      batch: z.number().int().min(0),
      reportId: z.uuid().optional(),
      eventType: z.string().min(1).max(200).optional(),
    }),
    maxAttempts: 20,
    key: (ref: FanoutKeyRef) => (ref.start ? [ref.reportId, ref.eventId, "start"] : [ref.reportId, ref.eventId]),
  }),
  /** Queued by the API with each upload; the last attempt marks the photo failed instead of throwing. */
  [PHOTO_PROCESS_TASK]: queued({ payload: photoPayload, maxAttempts: 5, key: (job) => [job.photoId] }),
  /** Queued by DELETE /v1/photos/{id}: removes the stored objects no live photo names. */
  [PHOTO_DELETE_TASK]: queued({ payload: photoPayload, maxAttempts: 10, key: (job) => [job.photoId] }),
  /**
   * Queued by POST /partners/v2/animals/{id}/photos, one per URL: fetches it
   * under the SSRF guard (lib/safe-fetch.ts) and hands it to photo__process.
   * A refused fetch fails the photo at once; the last attempt fails it too.
   */
  [PARTNER_PHOTO_FETCH_TASK]: queued({ payload: z.object({ fetchId: z.uuid() }), maxAttempts: 3, key: (job) => [job.fetchId] }),
};

type QueuedTasks = typeof QUEUED_TASKS;
export type TaskName = keyof QueuedTasks;
/** What a producer queues for task T. */
export type Payload<T extends TaskName> = z.input<QueuedTasks[T]["payload"]>;
/** What task T's job reads, parsed. */
export type ParsedPayload<T extends TaskName> = z.output<QueuedTasks[T]["payload"]>;
/** What task T's job key is built from: its payload, or the task's own reference. */
export type KeyRef<T extends TaskName> = Parameters<QueuedTasks[T]["key"]>[0];

export type MatchSubjectRef = ParsedPayload<typeof MATCH_SUBJECT_TASK>;
export type FanoutJobPayload = ParsedPayload<typeof ALERTS_FANOUT_TASK>;

/** The first line of a task's entry point (jobs/): its payload, parsed with the schema it was queued with. */
export function parsePayload<T extends TaskName>(task: T, payload: unknown): ParsedPayload<T> {
  return QUEUED_TASKS[task].payload.parse(payload) as ParsedPayload<T>;
}

type QueuedPayloads = { [T in TaskName]: Payload<T> };

declare global {
  namespace GraphileWorker {
    // eslint-disable-next-line @typescript-eslint/no-empty-object-type
    interface Tasks extends QueuedPayloads {}
  }
}
