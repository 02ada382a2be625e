import { describe, expect, it } from "vitest";
import { backoffMs, DELIVERY_ATTEMPTS } from "../../jobs/delivery/delivery.js";
import { EventType } from "../../lib/events.js";
import { planFilter, serverAtLeast } from "../../notifier/consumer.js";
import { describeSmtpFailure } from "../../jobs/delivery/deliverers/email.js";
import { InvalidEventError } from "../../lib/events.js";
import { draftNotifications, handledSubjects, notificationHandlers } from "../../notifier/handlers.js";
import { reasonCategory } from "../../lib/notifications.js";
import { contactMessageEnvelope } from "./support.js";

describe("reasonCategory is derived from last_error", () => {
  it.each([
    ["no deliverer configured for channel email", "permanent"],
    ["no email address configured for recipient", "permanent"],
    ["smtp 550: Can't send mail - all recipients were rejected: 550 mailbox unavailable", "permanent"],
    ["smtp 554: provider rejected the message", "permanent"],
    ["provider rejected: invalid recipient", "permanent"],
    ["ESOCKET: connect ECONNREFUSED 127.0.0.1:2525", "transient"],
    ["ECONNRESET: socket hang up", "transient"],
    ["ETIMEDOUT: Connection timeout", "transient"],
    ["smtp 421: service not available, try later", "transient"],
    ["smtp 451: temporary local problem", "transient"],
    ["something nobody planned for", "transient"],
  ])("%s is %s", (lastError, category) => {
    expect(reasonCategory(lastError)).toBe(category);
  });

  it("a notification with no error yet is transient", () => {
    expect(reasonCategory(null)).toBe("transient");
  });
});

describe("SMTP failures are written so the classifier can read them", () => {
  it("prefixes a server answer with smtp <code> and a socket failure with its error code", () => {
    expect(describeSmtpFailure(Object.assign(new Error("rejected"), { code: "EENVELOPE", responseCode: 550 }))).toBe(
      "smtp 550: rejected",
    );
    expect(describeSmtpFailure(Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:1"), { code: "ESOCKET" }))).toBe(
      "ESOCKET: connect ECONNREFUSED 127.0.0.1:1",
    );
  });
});

describe("delivery retries: 3 attempts, exponential backoff capped at 2 s", () => {
  it("waits 250 ms, then 500 ms, doubling up to 2 s and never more", () => {
    expect(DELIVERY_ATTEMPTS).toBe(3);
    expect([1, 2, 3, 4, 5, 6, 10].map(backoffMs)).toEqual([250, 500, 1000, 2000, 2000, 2000, 2000]);
  });
});

describe("the consumer's subject filter is derived from the handler registry", () => {
  it("the registry's subjects are the filter: one subject alone, several as filter_subjects on 2.10+", () => {
    const subjects = handledSubjects(notificationHandlers);
    expect(subjects).toContain(EventType.ContactMessageReceived);
    expect(subjects).toContain(EventType.SightingReported);
    expect(planFilter([EventType.ContactMessageReceived], "2.9.25")).toEqual({
      filter: { filter_subject: EventType.ContactMessageReceived },
      skipsUnhandled: false,
    });
    expect(planFilter(subjects, "2.10.0")).toEqual({ filter: { filter_subjects: subjects }, skipsUnhandled: false });
  });

  it("several subjects use filter_subjects on NATS 2.10 and later", () => {
    const subjects = [EventType.ContactMessageReceived, EventType.SightingReported];
    expect(planFilter(subjects, "2.10.0")).toEqual({ filter: { filter_subjects: subjects }, skipsUnhandled: false });
    expect(planFilter(subjects, "2.11.4")).toEqual({ filter: { filter_subjects: subjects }, skipsUnhandled: false });
  });

  it("several subjects on NATS before 2.10 widen to events.> and skip unhandled types", () => {
    const subjects = [EventType.ContactMessageReceived, EventType.SightingReported];
    expect(planFilter(subjects, "2.9.25")).toEqual({ filter: { filter_subject: "events.>" }, skipsUnhandled: true });
    expect(planFilter(subjects, undefined)).toEqual({ filter: { filter_subject: "events.>" }, skipsUnhandled: true });
  });

  it("compares server versions by major and minor", () => {
    expect(serverAtLeast("2.10.0", 2, 10)).toBe(true);
    expect(serverAtLeast("3.0.0", 2, 10)).toBe(true);
    expect(serverAtLeast("2.9.99", 2, 10)).toBe(false);
    expect(serverAtLeast("garbage", 2, 10)).toBe(false);
  });
});

describe("the contact message handler builds the recipient's notification", () => {
  it("addresses the report owner, keys it by the contact message and includes the message and the unverified contact", () => {
    const event = contactMessageEnvelope("owner-1");
    const [draft, ...more] = draftNotifications(notificationHandlers, event)!;
    const data = event.data;
    expect(more).toHaveLength(0);
    expect(draft!.kind).toBe("relay_message");
    expect(draft!.data).toEqual({ lostReportId: data.lostReportId, relayMessageId: data.relayMessageId, fromContact: data.fromContact });
    expect(draft!.recipientActorId).toBe("owner-1");
    expect(draft!.sourceKey).toBe(`relay_message:${data.relayMessageId}`);
    expect(draft!.body).toContain(data.message);
    expect(draft!.body).toContain(data.fromContact);
    expect(draft!.body).toMatch(/not verified/);
  });

  it("refuses data without a recipient as an invalid event", () => {
    const event = contactMessageEnvelope("owner-1");
    delete (event.data as Record<string, unknown>).recipientActorId;
    expect(() => draftNotifications(notificationHandlers, event)).toThrow(InvalidEventError);
  });
});
