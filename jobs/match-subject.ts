import type { Task } from "graphile-worker";
import { z } from "zod";

export const MATCH_SUBJECT_TASK = "match_subject";
export const MATCH_SUBJECT_KINDS = ["lost", "found", "sighting"] as const;
export type MatchSubjectRef = { kind: (typeof MATCH_SUBJECT_KINDS)[number]; id: string };

declare global {
  namespace GraphileWorker {
    interface Tasks {
      match_subject: MatchSubjectRef;
    }
  }
}

const Payload = z.object({ kind: z.enum(MATCH_SUBJECT_KINDS), id: z.uuid() });

/**
 * Queued by the notifier when a report or an unlinked sighting is recorded or
 * changed (notifier/reactions.ts); the notifier's matcher does the work.
 */
export function matchSubjectTask(match: (subject: MatchSubjectRef) => Promise<void>): Task<"match_subject"> {
  return async (payload) => match(Payload.parse(payload));
}
