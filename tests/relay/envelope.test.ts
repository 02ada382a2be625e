import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EventType } from "../../lib/events.js";
import { claimSql, lockOutboxEvent } from "../../lib/outbox.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";

/**
 * Postgres writes the envelope the relay publishes: the event's id, type,
 * occurredAt (ISO 8601, UTC, milliseconds) and its payload as data, whatever
 * the payload holds.
 */
let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
});

const payload = {
  name: 'Rex "the" dog \\ 🐕 <b>',
  lines: "one\ntwo\tthree\u0001",
  nested: { list: [1, 2.5, -0.125, null, true, false, "x"], empty: {}, none: [] },
  lat: 51.123456789,
  big: 12345678901234,
};

describe("the envelope the relay publishes", () => {
  it("carries the row's id, type, occurredAt to the millisecond and payload, as JSON", async () => {
    const { rows } = await db.pool.query<{ id: string }>(
      `insert into outbox_event (type, payload, occurred_at) values ($1, $2::jsonb, '2026-11-25 10:11:12.345987+00') returning id`,
      [EventType.AnimalLostReported, JSON.stringify(payload)],
    );
    const id = rows[0]!.id;
    const claimed = await db.pool.query<{ id: string; type: string; envelope: string }>(claimSql(1, null));
    expect(claimed.rows[0]!.id).toBe(id);
    expect(JSON.parse(claimed.rows[0]!.envelope)).toEqual({
      id,
      type: EventType.AnimalLostReported,
      occurredAt: "2026-11-25T10:11:12.345Z",
      data: payload,
    });

    const client = await db.pool.connect();
    try {
      await client.query("begin");
      const locked = await lockOutboxEvent(client, id);
      expect(locked!.envelope).toBe(claimed.rows[0]!.envelope);
      await client.query("rollback");
    } finally {
      client.release();
    }
  });

  it("writes an occurredAt that Date reads back as the row's time, cut to the millisecond as pg's Date is", async () => {
    const { rows } = await db.pool.query<{ at: Date }>(
      `insert into outbox_event (type, payload, occurred_at) values ($1, '{}', '1999-12-31 23:59:59.999999+00') returning occurred_at as at`,
      [EventType.AnimalLostReported],
    );
    // The oldest row is claimed first.
    const { rows: claimed } = await db.pool.query<{ envelope: string }>(claimSql(1, null));
    const occurredAt = JSON.parse(claimed[0]!.envelope).occurredAt;
    expect(occurredAt).toBe("1999-12-31T23:59:59.999Z");
    expect(new Date(occurredAt).getTime()).toBe(rows[0]!.at.getTime());
  });
});
