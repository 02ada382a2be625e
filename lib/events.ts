/**
 * Event types (bus subjects), one registry. The relay publishes every type;
 * the notifier's subject filter is built from the types it handles
 * (notifier/handlers.ts).
 */
export const EventType = {
  AnimalLostReported: "events.animal.lost_reported.v1",
  AnimalFoundReported: "events.animal.found_reported.v1",
  LostReportResolved: "events.safety.lost_report_resolved.v1",
  FoundReportResolved: "events.safety.found_report_resolved.v1",
  LostReportCancelled: "events.safety.lost_report_cancelled.v1",
  SightingReported: "events.safety.sighting_reported.v1",
  RelayMessageReceived: "events.safety.relay_message_received.v1",
} as const;

export type EventType = (typeof EventType)[keyof typeof EventType];

/** Subjects of the JetStream stream. Every event type lives under it. */
export const STREAM_SUBJECTS = ["events.>"] as const;

/** The body of every bus message (contract: `{id, type, occurredAt, data}`). */
export interface EventEnvelope<T = Record<string, unknown>> {
  id: string;
  type: EventType;
  occurredAt: string;
  data: T;
}
