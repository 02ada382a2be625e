import { z } from "zod";
import { EventType, type EventEnvelope } from "../lib/events.js";

/** What a handler makes of one event; the consumer adds channel and source event id. */
export interface NotificationDraft {
  recipientActorId: string;
  /** What the notification is about; see the `superseded` replay rule. */
  sourceKey: string;
  subject: string;
  body: string;
}

/** The event's data does not fit its handler: the message can never succeed. */
export class InvalidEventError extends Error {
  override name = "InvalidEventError";
}

export type EventHandler = (event: EventEnvelope) => NotificationDraft;
export type HandlerRegistry = Partial<Record<EventType, EventHandler>>;

const RelayMessageData = z.object({
  recipientActorId: z.string().min(1).max(200),
  lostReportId: z.uuid(),
  relayMessageId: z.uuid(),
  message: z.string().min(1).max(2000),
  fromContact: z.string().min(1).max(200),
});

function parseData<T extends z.ZodType>(schema: T, event: EventEnvelope): z.output<T> {
  const parsed = schema.safeParse(event.data);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new InvalidEventError(`${event.type} ${event.id}: data.${issue.path.join(".")}: ${issue.message}`);
  }
  return parsed.data;
}

const relayMessageReceived: EventHandler = (event) => {
  const data = parseData(RelayMessageData, event);
  return {
    recipientActorId: data.recipientActorId,
    sourceKey: `relay_message:${data.relayMessageId}`,
    subject: "Someone sent a message about your lost animal",
    // fromContact is whatever the sender typed; the text says so, because we never verified it.
    body: `${data.message}\n\nReply to (given by the sender, not verified): ${data.fromContact}`,
  };
};

/**
 * Every event type the notifier turns into notifications. The consumer's
 * subject filter is derived from these keys, so a new entry here is all it
 * takes to consume a new type.
 */
export const notificationHandlers: HandlerRegistry = {
  [EventType.RelayMessageReceived]: relayMessageReceived,
};

export function handledSubjects(registry: HandlerRegistry): string[] {
  return Object.keys(registry).sort();
}
