import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EventType } from "../../lib/events.js";
import { pruneMaintenance, SMS_USAGE_KEPT_DAYS } from "../../jobs/scheduled/maintenance.js";
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

  it(`deletes the SMS counters of days over ${SMS_USAGE_KEPT_DAYS} days old, and keeps the last week's and today's`, async () => {
    await db.pool.query(
      `with n as (insert into sms_number (phone) values ('+4917612999001') returning id)
       insert into sms_daily_usage (day, number_id, texts, segments)
       select (now() at time zone 'UTC')::date - d, n.id, 1, 2 from n, unnest(array[0, 7, 8, 30]) as d`,
    );
    await db.pool.query(
      `insert into sms_daily_segments (day, segments) select (now() at time zone 'UTC')::date - d, 2 from unnest(array[0, 7, 8, 30]) as d`,
    );
    const result = await pruneMaintenance(db.pool, 7);
    expect(result.smsUsageRows).toBe(4);
    const ages = `select (now() at time zone 'UTC')::date - day as age from %s order by age`;
    expect((await db.pool.query(ages.replace("%s", "sms_daily_usage"))).rows).toEqual([{ age: 0 }, { age: 7 }]);
    expect((await db.pool.query(ages.replace("%s", "sms_daily_segments"))).rows).toEqual([{ age: 0 }, { age: 7 }]);
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
