import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pg from "pg";
import { migrateUp } from "../../lib/migrate.js";
import { startTestBus, type TestBus } from "../helpers/nats.js";
import { TestPgCluster } from "../helpers/pgCluster.js";
import { createLostReport, Stack, type WriteOutcome } from "../helpers/stack.js";
import { eventually } from "../helpers/stream.js";

let cluster: TestPgCluster;
let bus: TestBus;
let stack: Stack;
let pool: pg.Pool;

beforeAll(async () => {
  cluster = await TestPgCluster.create();
  const admin = new pg.Client({ connectionString: cluster.url() });
  await admin.connect();
  await admin.query("create database animal_safety");
  await admin.end();
  await migrateUp(cluster.url("animal_safety"));
  bus = await startTestBus();
  stack = new Stack(cluster.url("animal_safety"), bus.url);
  await stack.start("api");
  await stack.start("relay");
  pool = new pg.Pool({ connectionString: cluster.url("animal_safety"), max: 2 });
  pool.on("error", () => undefined);
}, 120_000);

afterAll(async () => {
  await stack?.stopAll();
  await pool?.end();
  await bus?.dispose();
  await cluster?.dispose();
});

async function status(path: string): Promise<number> {
  try {
    return (await fetch(`${stack.baseUrl}${path}`, { signal: AbortSignal.timeout(5_000) })).status;
  } catch {
    return 0;
  }
}

describe("fault: Postgres restarts under load", () => {
  it("keeps /healthz 200, turns /readyz 503 within 2.5 s, fails writes fast with 503, and recovers with no restart and no half-written rows", async () => {
    const outcomes: WriteOutcome[] = [];
    let writing = true;
    const writer = (async () => {
      while (writing) {
        outcomes.push(await createLostReport(stack.baseUrl, "pgfault"));
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    await new Promise((r) => setTimeout(r, 1_000));
    expect(await status("/readyz")).toBe(200);
    const pids = stack.processes.map((p) => p.child.pid);

    const stoppedAt = Date.now();
    await cluster.stop("fast");
    console.log("[postgres-restart] Postgres stopped");
    await eventually(async () => ((await status("/readyz")) === 503 ? true : undefined), 5_000, 50);
    const notReadyAfter = (Date.now() - stoppedAt) / 1000;
    console.log(`[postgres-restart] /readyz 503 after ${notReadyAfter.toFixed(2)} s`);
    expect(notReadyAfter).toBeLessThanOrEqual(2.5);
    expect(await status("/healthz")).toBe(200);

    const duringOutage = outcomes.length;
    await new Promise((r) => setTimeout(r, 4_000));
    const outageWrites = outcomes.slice(duringOutage);
    console.log(
      `[postgres-restart] ${outageWrites.length} writes during the outage: statuses ${[...new Set(outageWrites.map((o) => o.status))].join(",")}, slowest ${Math.max(...outageWrites.map((o) => o.ms)).toFixed(0)} ms`,
    );
    expect(outageWrites.length).toBeGreaterThan(0);
    for (const write of outageWrites) {
      expect(write.status).toBe(503);
      expect(write.ms).toBeLessThan(3_000);
    }
    expect(await status("/healthz")).toBe(200);

    await cluster.start();
    console.log("[postgres-restart] Postgres started again");
    await eventually(async () => ((await status("/readyz")) === 200 ? true : undefined), 15_000, 100);
    const recovered = await eventually(async () => {
      const write = await createLostReport(stack.baseUrl, "pgfault-after");
      return write.status === 201 ? write : undefined;
    }, 15_000, 200);
    expect(recovered.id).toBeDefined();
    writing = false;
    await writer;

    expect(stack.processes.map((p) => p.child.pid)).toEqual(pids);
    expect(stack.processes.every((p) => p.child.exitCode === null)).toBe(true);

    await eventually(async () => {
      const { rows } = await pool.query(`select count(*)::int as n from outbox_event where published_at is null`);
      return rows[0].n === 0 ? true : undefined;
    }, 20_000);
    const { rows: orphans } = await pool.query(
      `select r.id from safety_lost_report r
       full join outbox_event o on o.payload->>'reportId' = r.id::text
       where r.id is null or o.id is null`,
    );
    expect(orphans).toEqual([]);
    const created = outcomes.filter((o) => o.status === 201).length + 1;
    const { rows } = await pool.query(`select count(*)::int as n from safety_lost_report`);
    console.log(`[postgres-restart] ${created} writes answered 201; ${rows[0].n} reports stored; relay drained`);
    expect(rows[0].n).toBe(created);
  }, 120_000);
});
