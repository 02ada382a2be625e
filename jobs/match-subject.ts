import type { Task } from "graphile-worker";
import { MATCH_SUBJECT_TASK, parsePayload, type MatchSubjectRef } from "../lib/job-payloads.js";

/**
 * Queued by the notifier when a report or an unlinked sighting is recorded or
 * changed (notifier/reactions.ts); the notifier's matcher does the work.
 */
export function matchSubjectTask(match: (subject: MatchSubjectRef) => Promise<void>): Task<typeof MATCH_SUBJECT_TASK> {
  return async (payload) => match(parsePayload(MATCH_SUBJECT_TASK, payload));
}
