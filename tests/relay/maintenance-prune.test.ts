import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EventType } from "../../lib/events.js";
import { pruneMaintenance } from "../../jobs/scheduled/maintenance.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
});

describe("hourly maintenance prunes only rows that carry no state", () => {
  it("deletes rate-limit buckets idle for over two hours and keeps recent ones", async () => {
    await db.pool.query(
      `insert into rate_limit_bucket (key, tokens, updated_at) values
         ('report-create:old', 0, now() - interval '3 hours'),
         ('report-create:recent', 0, now() - interval '10 minutes')`,
    );
    const result = await pruneMaintenance(db.pool, 7);
    expect(result.buckets).toBe(1);
    const { rows } = await db.pool.query(`select key from rate_limit_bucket order by key`);
    expect(rows).toEqual([{ key: "report-create:recent" }]);
  });

  it("drops outbox days past the retention whose rows are all published, and keeps a day with an unpublished row", async () => {
    await db.pool.query(
      `insert into outbox_event (type, occurred_at, published_at) values
         ($1, now() - interval '30 days', now() - interval '29 days'),
         ($1, now() - interval '30 days', null),
         ($1, now() - interval '20 days', now() - interval '20 days'),
         ($1, now() - interval '1 day', now() - interval '1 day')`,
      [EventType.AnimalLostReported],
    );
    const result = await pruneMaintenance(db.pool, 7);
    expect(result.outboxDaysDropped).toHaveLength(1);
    expect(result.outboxDaysStuck).toHaveLength(1);
    const { rows } = await db.pool.query(
      `select published_at is null as unpublished, occurred_at < now() - interval '7 days' as old from outbox_event order by occurred_at, published_at`,
    );
    // The stuck day keeps both its rows, the published one too: a day goes whole or not at all.
    expect(rows).toEqual([
      { unpublished: false, old: true },
      { unpublished: true, old: true },
      { unpublished: false, old: false },
    ]);
  });
});
