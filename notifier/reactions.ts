import { EventType, parseEventData, type EventEnvelope } from "../lib/events.js";
import type { QueuedJob } from "../jobs/queued-job.js";
import { MATCH_SUBJECT_TASK, type MatchSubjectRef } from "../jobs/matching/task.js";
import { fanoutStartJob } from "../jobs/fanout/fanout.js";

/**
 * Durable work an event starts besides its notifications: graphile-worker
 * jobs the consumer queues in the same transaction as the event's
 * notifications, before the ack. The job key (jobs/registry.ts) makes a
 * redelivered or repeated event replace a job still waiting rather than add
 * another. The consumer's subject filter covers these types as well as
 * notifier/handlers.ts's.
 */
export type { QueuedJob };

export type EventReaction<T extends EventType> = (event: EventEnvelope<T>) => QueuedJob[];
export type ReactionRegistry = { [T in EventType]?: EventReaction<T> };

const match = (subject: MatchSubjectRef): QueuedJob => ({ task: MATCH_SUBJECT_TASK, payload: subject });

/** A PATCH that moves a lost report, or changes its species, may bring it into new subscribers' alerts. */
const ALERTING_CHANGES = new Set(["location", "animal.species"]);
/** A report's photos take part in its matching (their hashes): a photo ready or deleted re-runs it. An animal has no matching. */
const rematchParent = ({ data }: { data: { parentType: string; parentId: string } }): QueuedJob[] =>
  data.parentType === "lost_report"
    ? [match({ kind: "lost", id: data.parentId })]
    : data.parentType === "found_report"
      ? [match({ kind: "found", id: data.parentId })]
      : [];

export const eventReactions: ReactionRegistry = {
  [EventType.AnimalLostReported]: ({ id, type, data }) => [
    match({ kind: "lost", id: data.reportId }),
    // Neighbourhood alerts (jobs/fanout/): the fan-out's first job.
    fanoutStartJob({ reportId: data.reportId, eventId: id, eventType: type }),
  ],
  [EventType.AnimalFoundReported]: ({ data }) => [match({ kind: "found", id: data.reportId })],
  // A PATCH (a moved report, a corrected breed) re-runs matching: a re-run updates, never duplicates.
  // A moved lost report alerts the subscribers it now reaches; the ledger keeps anyone alerted before from a second one.
  [EventType.ReportUpdated]: ({ id, type, data }) => [
    match({ kind: data.reportKind, id: data.reportId }),
    ...(data.reportKind === "lost" && data.changed.some((field) => ALERTING_CHANGES.has(field))
      ? [fanoutStartJob({ reportId: data.reportId, eventId: id, eventType: type })]
      : []),
  ],
  // A sighting linked to a lost report needs no matching (contract).
  [EventType.SightingReported]: ({ data }) => (data.lostReportId ? [] : [match({ kind: "sighting", id: data.sightingId })]),
  [EventType.PhotoReady]: rematchParent,
  [EventType.PhotoDeleted]: rematchParent,
};

/** The jobs one raw event starts, or null when no reaction takes its type; its data is parsed with the catalogue's schema. */
export function reactionJobs(registry: ReactionRegistry, event: { id: string; type: string; occurredAt: string; data: unknown }): QueuedJob[] | null {
  const reaction = registry[event.type as EventType] as EventReaction<EventType> | undefined;
  if (!reaction) return null;
  const type = event.type as EventType;
  return reaction({ id: event.id, type, occurredAt: event.occurredAt, data: parseEventData(type, event.data, event.id) });
}
