import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EventType } from "../../lib/events.js";
import { exactTime } from "../../lib/db.js";
import { claimedSpan, markPublishedSql } from "../../lib/outbox.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";

/**
 * The relay marks a claimed batch published by primary key, also when the
 * planner's statistics were taken with no backlog and a large one has built
 * up since (a bus outage): the partial index of unpublished rows then looks
 * empty, and an update that could use it walked every backlog entry per batch.
 */
let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
});

const insertEvents = (n: number, published: boolean) =>
  db.pool.query(
    `insert into outbox_event (type, payload, published_at)
     select $1, jsonb_build_object('lostReportId', gen_random_uuid()), case when $3 then now() end from generate_series(1, $2::int)`,
    [EventType.LostReportResolved, n, published],
  );

describe("the relay's mark of a published batch", () => {
  it("goes by primary key when a backlog has built up since the statistics were taken", async () => {
    await insertEvents(20_000, true);
    await db.pool.query(`vacuum analyze outbox_event`);
    await insertEvents(20_000, false);
    const { rows: claimed } = await db.pool.query<{ id: string }>(
      `select id from outbox_event where published_at is null order by occurred_at, id limit 100`,
    );
    // The outbox is partitioned by day (migration 000022): each partition's key index is <partition>_pkey, and
    // its partial index of unpublished rows <partition>_occurred_at_id_idx.
    const { rows } = await db.pool.query(`explain (format json) ${markPublishedSql(claimed.map((r) => r.id))}`);
    const plan = JSON.stringify(rows[0]["QUERY PLAN"]);
    expect(plan).toMatch(/"Index Name":"outbox_event_p\d{8}_pkey"/);
    expect(plan).not.toContain("occurred_at_id_idx");

    const marked = await db.pool.query(`${markPublishedSql(claimed.map((r) => r.id))} returning id`);
    expect(marked.rowCount).toBe(100);
  });

  it("with the claimed span, touches only the partitions of the batch's days", async () => {
    const { rows: claimed } = await db.pool.query<{ id: string; cursorAt: string }>(
      `select id, ${exactTime("occurred_at")} as "cursorAt" from outbox_event where published_at is null order by occurred_at, id limit 100`,
    );
    const sql = markPublishedSql(
      claimed.map((r) => r.id),
      claimedSpan(claimed),
    );
    const { rows } = await db.pool.query(`explain (format json) ${sql}`);
    const plan = JSON.stringify(rows[0]["QUERY PLAN"]);
    const scanned = new Set([...plan.matchAll(/"Relation Name":"(outbox_event_[a-z0-9]+)"/g)].map((m) => m[1]));
    const { rows: days } = await db.pool.query<{ name: string }>(
      `select distinct tableoid::regclass::text as name from outbox_event where id = any($1::uuid[])`,
      [claimed.map((r) => r.id)],
    );
    expect([...scanned].sort()).toEqual(days.map((d) => d.name).sort());
    expect(plan).not.toContain("outbox_event_default");
    const marked = await db.pool.query(`${sql} returning id`);
    expect(marked.rowCount).toBe(100);
  });
});
