import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { viaPgBouncer } from "../helpers/pgbouncer-route.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import { call, createLostReport, freshActor } from "../safety/helpers.js";

// Only in the `pgbouncer` project (vitest.config.ts): it checks the routing that the route files there rely on.
let h: Harness;

beforeAll(async () => {
  h = await startHarness();
});

afterAll(async () => {
  await h?.close();
});

/** A statement on the admin console of the project's pgbouncer (tests/setup/pgbouncer.ts). */
async function pgbouncerConsole<R>(statement: string): Promise<R[]> {
  const client = new pg.Client({ connectionString: `postgres://postgres@127.0.0.1:${inject("pgbouncerPort")}/pgbouncer` });
  await client.connect();
  try {
    return (await client.query(statement)).rows as R[];
  } finally {
    await client.end();
  }
}

describe("in the pgbouncer project, the API", () => {
  it("goes through the project's pgbouncer in transaction pooling, without named statements, with the role's statement_timeout", async () => {
    expect(viaPgBouncer()).toBe(true);
    expect(new URL(h.api.config.DATABASE_URL).port).toBe(String(inject("pgbouncerPort")));
    expect(h.api.config.DATABASE_NAMED_STATEMENTS).toBe(false);
    expect(h.api.config.DATABASE_SESSION_SETTINGS).toBe("role");
    const transactions = async () => {
      const stats = await pgbouncerConsole<{ database: string; total_xact_count: string }>("SHOW STATS");
      return Number(stats.find((row) => row.database === h.db.name)?.total_xact_count ?? 0);
    };
    const before = await transactions();

    const id = await createLostReport(h.api, freshActor());
    const res = await call(h.api, { method: "GET", url: `/v1/safety/lost-reports/${id}` });
    expect(res.statusCode, res.body).toBe(200);

    // pgbouncer counted the create's and the read's transactions on the file's database, in a transaction-mode pool.
    expect(await transactions()).toBeGreaterThan(before);
    const pools = await pgbouncerConsole<{ database: string; pool_mode: string }>("SHOW POOLS");
    expect(pools.find((row) => row.database === h.db.name)?.pool_mode).toBe("transaction");
    const { rows } = await h.api.pool.query<{ statement_timeout: string; jit: string }>(
      `select current_setting('statement_timeout') as statement_timeout, current_setting('jit') as jit`,
    );
    expect(rows[0]).toEqual({ statement_timeout: "10s", jit: "off" });
  });
});
