import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { busClient } from "../../lib/bus.js";
import { EventType } from "../../lib/events.js";
import { claimSql, markPublishedSql } from "../../lib/outbox.js";
import { OutboxRelay } from "../../relay/outbox-relay.js";
import { TEST_STREAM } from "../helpers/app.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import { readStream } from "../helpers/stream.js";

/**
 * Within a drain, each claim starts past the last row the drain claimed, so
 * it does not walk the index entries that the rows published before it left
 * behind; a row it passes over is taken by the next drain.
 */
let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
});

const relay = () =>
  new OutboxRelay({ pool: h.db.pool, js: busClient(h.api.nc), logger: pino({ level: "silent" }), publishTimeoutMs: 5_000, retryIntervalMs: 200, lanes: 4 });

const insertEvents = (n: number) =>
  h.db.pool.query(`insert into outbox_event (type, payload) select $1, jsonb_build_object('n', n) from generate_series(1, $2::int) as n`, [
    EventType.AnimalLostReported,
    n,
  ]);

/** Shared buffers a claim touches, by Postgres' own count. */
async function claimBuffers(sql: string): Promise<number> {
  const { rows } = await h.db.pool.query(`explain (analyze, buffers, format json) ${sql}`);
  const plan = rows[0]["QUERY PLAN"][0].Plan;
  return plan["Shared Hit Blocks"] + plan["Shared Read Blocks"];
}

describe("the relay's claim within a drain", () => {
  it("starts past the last claimed row instead of walking the entries of the rows published before it", async () => {
    await insertEvents(40_100);
    const { rows: first } = await h.db.pool.query<{ id: string; cursorAt: string }>(claimSql(40_000, null));
    await h.db.pool.query(markPublishedSql(first.map((r) => r.id)));
    const last = first.at(-1)!;
    // Twice each: the first scan over a published row's entry marks it dead, as the relay's earlier claims would have.
    for (let i = 0; i < 2; i++) await claimBuffers(claimSql(100, null));
    const fromStart = await claimBuffers(claimSql(100, null));
    const pastCursor = await claimBuffers(claimSql(100, { cursorAt: last.cursorAt, id: last.id }));
    // Locking the 100 rows reads about 200 buffers either way; the 40,000 dead entries fill over 150 index pages more.
    expect(fromStart - pastCursor).toBeGreaterThan(150);

    const { rows: rest } = await h.db.pool.query(claimSql(100, { cursorAt: last.cursorAt, id: last.id }));
    expect(rest).toHaveLength(100);
  });

  it("refuses a cursor that is not a claimed row's exact time and id", () => {
    expect(() => claimSql(100, { cursorAt: "2026-11-25 10:00", id: "x'; drop table outbox_event; --" })).toThrow(/not a claim cursor/);
  });

  it("publishes a row committed late with an older time in the next drain", async () => {
    await h.db.pool.query(`update outbox_event set published_at = now() where published_at is null`);
    const late = await h.db.pool.connect();
    try {
      // occurred_at is the transaction's start: this row is older than the backlog, and committed after its drain.
      await late.query("begin");
      const { rows } = await late.query<{ id: string }>(
        `insert into outbox_event (type, payload) values ($1, '{"late":true}') returning id`,
        [EventType.AnimalLostReported],
      );
      const lateId = rows[0]!.id;
      await insertEvents(250);
      const before = (await readStream(h.api.nc, TEST_STREAM)).length;
      const drains = relay();
      await drains.drain();
      expect((await readStream(h.api.nc, TEST_STREAM)).length - before).toBe(250);

      await late.query("commit");
      await drains.drain();
      const published = (await readStream(h.api.nc, TEST_STREAM)).slice(before).map((m) => m.body.id);
      expect(published).toHaveLength(251);
      expect(published.at(-1)).toBe(lateId);
      const left = await h.db.pool.query(`select count(*)::int as n from outbox_event where published_at is null`);
      expect(left.rows[0].n).toBe(0);
    } finally {
      late.release();
    }
  });
});
