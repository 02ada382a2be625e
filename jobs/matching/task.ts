import type { Task } from "graphile-worker";
import { z } from "zod";
import { queued } from "../define.js";

export const MATCH_SUBJECT_TASK = "match__subject";
export const MATCH_SUBJECT_KINDS = ["lost", "found", "sighting"] as const;

export const MATCHING_QUEUED_TASKS = {
  /** Queued by the notifier's reactions when a report or an unlinked sighting is recorded or changed. */
  [MATCH_SUBJECT_TASK]: queued({
    payload: z.object({ kind: z.enum(MATCH_SUBJECT_KINDS), id: z.uuid() }),
    maxAttempts: 10,
    key: (subject) => [subject.kind, subject.id],
  }),
};

export type MatchSubjectRef = z.output<(typeof MATCHING_QUEUED_TASKS)[typeof MATCH_SUBJECT_TASK]["payload"]>;

/**
 * Queued by the notifier when a report or an unlinked sighting is recorded or
 * changed (notifier/reactions.ts); the notifier's matcher does the work.
 */
export function matchSubjectTask(match: (subject: MatchSubjectRef) => Promise<void>): Task {
  return async (payload) => match(MATCHING_QUEUED_TASKS[MATCH_SUBJECT_TASK].payload.parse(payload));
}
