import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EventType } from "../../lib/events.js";
import { insertNotifications, type NewNotification } from "../../lib/notification-rows.js";
import { maintainPartitions, NOTIFICATION_PARTITIONS } from "../../jobs/scheduled/maintenance.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";

/**
 * Notifications are partitioned by month on their source event's time
 * (migration 000022), and the key that keeps one notification per (source
 * event, recipient, channel) contains that time: every copy of an event
 * carries the same occurredAt, so a redelivery lands in the same partition
 * and conflicts, whenever it arrives and wherever the first copy went.
 */
let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
});

const notification = (sourceEventId: string, occurredAt: string, recipientActorId: string, channel: NewNotification["channel"]): NewNotification => ({
  recipientActorId,
  kind: "sighting",
  subject: "Someone saw your dog",
  body: "Near the park",
  data: {},
  sourceKey: `sighting:${sourceEventId}`,
  sourceEventId,
  sourceOccurredAt: occurredAt,
  eventType: EventType.SightingReported,
  channel,
});

async function rowsOf(sourceEventId: string) {
  const { rows } = await db.pool.query<{ part: string; recipient: string; channel: string; sourceOccurredAt: string }>(
    `select tableoid::regclass::text as part, recipient_actor_id as recipient, channel,
       to_char(source_occurred_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as "sourceOccurredAt"
     from notification where source_event_id = $1::uuid order by recipient_actor_id, channel`,
    [sourceEventId],
  );
  return rows;
}

describe("one notification per (source event, recipient, channel) on the partitioned table", () => {
  it("writes a redelivered event's notifications once, in the partition of the event's month", async () => {
    const eventId = randomUUID();
    const occurredAt = new Date().toISOString();
    const batch = [notification(eventId, occurredAt, "owner-1", "in_app"), notification(eventId, occurredAt, "owner-1", "email")];
    expect(await insertNotifications(db.pool, batch)).toHaveLength(2);
    expect(await insertNotifications(db.pool, batch)).toEqual([]);
    // Another recipient of the same event is another notification.
    expect(await insertNotifications(db.pool, [notification(eventId, occurredAt, "owner-2", "in_app")])).toHaveLength(1);
    const month = occurredAt.slice(0, 7).replace("-", "");
    expect(await rowsOf(eventId)).toEqual([
      { part: `notification_p${month}`, recipient: "owner-1", channel: "email", sourceOccurredAt: occurredAt },
      { part: `notification_p${month}`, recipient: "owner-1", channel: "in_app", sourceOccurredAt: occurredAt },
      { part: `notification_p${month}`, recipient: "owner-2", channel: "in_app", sourceOccurredAt: occurredAt },
    ]);
  });

  it("keeps an event from the last millisecond of a month to its month, before and after the default partition is split", async () => {
    const eventId = randomUUID();
    // Handled long after: its rows' created_at are this month's, their partition the event's.
    const occurredAt = "2019-03-31T23:59:59.999Z";
    const batch = [notification(eventId, occurredAt, "owner-3", "in_app")];
    expect(await insertNotifications(db.pool, batch)).toHaveLength(1);
    expect((await rowsOf(eventId)).map((r) => r.part)).toEqual(["notification_default"]);
    expect(await insertNotifications(db.pool, batch)).toEqual([]);

    const run = await maintainPartitions(db.pool, NOTIFICATION_PARTITIONS);
    expect(run.created).toContain("notification_p201903");
    expect(await insertNotifications(db.pool, batch)).toEqual([]);
    expect(await rowsOf(eventId)).toEqual([
      { part: "notification_p201903", recipient: "owner-3", channel: "in_app", sourceOccurredAt: occurredAt },
    ]);
  });
});
