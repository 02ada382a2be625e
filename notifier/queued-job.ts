/** A graphile-worker job an event starts besides its notifications (notifier/reactions.ts); notifier/store.ts queues it. */
export interface QueuedJob {
  task: string;
  payload: Record<string, unknown>;
  jobKey: string;
  maxAttempts?: number;
}
