import type { PoolClient } from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EventType } from "../../lib/events.js";
import { beginAndClaimUnpublishedBatch, CLAIM_BY_INDEX_SCAN, claimSql, markPublishedAndCommit } from "../../lib/outbox.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";

/**
 * The relay's claim steps over the index entries that published rows leave
 * behind instead of rechecking each of those rows in the heap: with few
 * unpublished rows in its statistics the planner picks a bitmap scan, which
 * never marks such entries dead, so every claim would visit every row
 * published since the last vacuum (lib/outbox.ts CLAIM_BY_INDEX_SCAN).
 */
let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
});

/**
 * Pages of outbox_event (heap, and the partial index of unpublished rows)
 * read so far, from the cumulative statistics, with this backend's own
 * pending counts flushed first. The outbox is partitioned by day (migration
 * 000022): the counts are summed over its partitions and theirs.
 */
async function pagesRead(client: PoolClient): Promise<{ heap: number; index: number }> {
  await client.query(`select pg_stat_force_next_flush()`);
  const { rows } = await client.query<{ heap: number; index: number }>(
    `select (select sum(heap_blks_hit + heap_blks_read) from pg_statio_user_tables
             where relid in (select relid from pg_partition_tree('outbox_event') where isleaf))::int as heap,
       (select sum(idx_blks_hit + idx_blks_read) from pg_statio_user_indexes
             where indexrelid in (select relid from pg_partition_tree('outbox_event_unpublished_idx') where isleaf))::int as index`,
  );
  return rows[0]!;
}

/** Every scan node of a JSON plan, with its relation and index. */
function scans(plan: unknown): Array<{ type: string; relation?: string; index?: string }> {
  const found: Array<{ type: string; relation?: string; index?: string }> = [];
  const walk = (node: Record<string, unknown>) => {
    const type = node["Node Type"] as string;
    if (/Scan/.test(type)) found.push({ type, relation: node["Relation Name"] as string, index: node["Index Name"] as string });
    for (const child of (node.Plans as Array<Record<string, unknown>> | undefined) ?? []) walk(child);
  };
  walk((plan as Array<{ Plan: Record<string, unknown> }>)[0]!.Plan);
  return found;
}

describe("the relay's claim", () => {
  it("scans each day's partial index of unpublished rows, in order, and no table", async () => {
    const client = await db.pool.connect();
    try {
      // Rows in several days, one of them outside every partition (the default's).
      await client.query(
        `insert into outbox_event (type, occurred_at) select $1, now() - make_interval(days => d) from generate_series(0, 3) d
         union all select $1, now() - interval '400 days'`,
        [EventType.AnimalLostReported],
      );
      await client.query(`analyze outbox_event`);
      for (const after of [null, { cursorAt: "2026-01-01T00:00:00.000000Z", id: "00000000-0000-4000-8000-000000000000" }]) {
        await client.query(`begin; ${CLAIM_BY_INDEX_SCAN}`);
        const { rows } = await client.query(`explain (format json) ${claimSql(100, after)}`);
        await client.query("rollback");
        const found = scans(rows[0]["QUERY PLAN"]);
        expect(found.length).toBeGreaterThan(1);
        for (const scan of found) {
          expect(scan).toEqual({ type: "Index Scan", relation: expect.stringMatching(/^outbox_event_(p\d{8}|default)$/), index: expect.stringMatching(/_occurred_at_id_idx$/) });
        }
        expect(found.map((f) => f.relation)).toContain("outbox_event_default");
      }
      // Past a cursor, the days before the cursor's are pruned from the plan.
      const today = new Date().toISOString().slice(0, 10);
      const yesterday = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);
      await client.query(`begin; ${CLAIM_BY_INDEX_SCAN}`);
      const { rows: pastCursor } = await client.query(
        `explain (format json) ${claimSql(100, { cursorAt: `${today}T00:00:00.000000Z`, id: "00000000-0000-4000-8000-000000000000" })}`,
      );
      await client.query("rollback");
      const relations = scans(pastCursor[0]["QUERY PLAN"]).map((f) => f.relation);
      expect(relations).toContain(`outbox_event_p${today.replaceAll("-", "")}`);
      expect(relations).not.toContain(`outbox_event_p${yesterday.replaceAll("-", "")}`);
    } finally {
      client.release();
    }
  });

  it("reads no heap page of the rows published before it, once one claim has passed them", async () => {
    // Every page read of outbox_event in this test is this one session's, so the counters between the two
    // readings are the claim's alone: another backend's pending counts could be flushed in between.
    const client = await db.pool.connect();
    try {
      // A partitioned table has no storage of its own: autovacuum is turned off on each partition.
      const { rows: parts } = await client.query<{ name: string }>(
        `select relid::regclass::text as name from pg_partition_tree('outbox_event') where isleaf`,
      );
      for (const { name } of parts) await client.query(`alter table ${name} set (autovacuum_enabled = false)`);
      await client.query(
        `insert into outbox_event (type, payload) select $1, jsonb_build_object('n', n) from generate_series(1, 3000) as n`,
        [EventType.AnimalLostReported],
      );
      await client.query(`update outbox_event set published_at = now()`);
      // No statistics, as on a Postgres whose autovacuum is off (this machine's): the planner guesses a few
      // dozen unpublished rows, and picked a bitmap scan for them.

      expect(await beginAndClaimUnpublishedBatch(client, 100)).toEqual([]);
      await markPublishedAndCommit(client, []);

      const [fresh] = (
        await client.query<{ id: string }>(`insert into outbox_event (type, payload) values ($1, '{}') returning id`, [EventType.AnimalLostReported])
      ).rows;
      // A scan marks those entries dead only when no open snapshot can still see the rows, and in CI, with other
      // test files at work on the same server, such a snapshot outlived the first claim (2,937 pages read by the
      // next) and once five more tries over a second (2,931). So the claim gets tries for up to 15 s: each locks
      // the fresh row, and the transaction id that takes lets Postgres recompute its horizon for the next. A
      // bitmap scan never marks them: it reads all 45 pages on every try.
      let claimed: Array<{ id: string }> = [];
      let heapPages = Infinity;
      let indexPages = Infinity;
      const deadline = Date.now() + 15_000;
      for (let attempt = 0; heapPages > 2 && Date.now() < deadline; attempt++) {
        if (attempt > 0) await new Promise((r) => setTimeout(r, 200));
        const before = await pagesRead(client);
        claimed = await beginAndClaimUnpublishedBatch(client, 100);
        await client.query("rollback");
        const after = await pagesRead(client);
        heapPages = after.heap - before.heap;
        indexPages = after.index - before.index;
      }
      if (heapPages > 2) {
        const { rows: holders } = await client.query(
          `select datname, application_name, state, backend_xmin, age(backend_xmin) as age from pg_stat_activity
           where backend_xmin is not null order by age(backend_xmin) desc limit 5`,
        );
        console.log("[claim-plan] oldest snapshots on the server:", JSON.stringify(holders));
      }

      expect(claimed.map((r) => r.id)).toEqual([fresh!.id]);
      // The fresh row's own page, and no other.
      expect(heapPages).toBeLessThanOrEqual(2);
      expect(indexPages).toBeLessThan(30);
    } finally {
      client.release();
    }
  });
});
