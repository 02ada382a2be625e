import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pg from "pg";
import { EventType } from "../../lib/events.js";
import { migrateUp } from "../../lib/migrate.js";
import { startTestBus, type TestBus } from "../helpers/nats.js";
import { TestPgCluster } from "../helpers/pg-cluster.js";
import type { ServiceProcess } from "../helpers/processes.js";
import { createLostReport, Stack } from "../helpers/stack.js";
import { eventually } from "../helpers/stream.js";

let cluster: TestPgCluster;
let bus: TestBus;
let stack: Stack;
let pool: pg.Pool;
let notifier: ServiceProcess;

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
  notifier = await stack.start("notifier");
  pool = new pg.Pool({ connectionString: cluster.url("animal_safety"), max: 2 });
  pool.on("error", () => undefined);
}, 120_000);

afterAll(async () => {
  await stack?.stopAll();
  await pool?.end();
  await bus?.dispose();
  await cluster?.dispose();
});

// The API limits each client address to 20 requests/s, /healthz included, and trusts the loopback
// peer as a proxy: each kind of probe gets an address of its own so the test never throttles itself.
const PROBE_ADDRESS = { "x-forwarded-for": "10.7.0.1" };
const HEALTH_POLL_ADDRESS = { "x-forwarded-for": "10.7.0.2" };

async function status(path: string): Promise<number> {
  try {
    return (await fetch(`${stack.baseUrl}${path}`, { headers: PROBE_ADDRESS, signal: AbortSignal.timeout(5_000) })).status;
  } catch {
    return 0;
  }
}

/** One create, with when it started and the media type of its answer; a hang ends at 5 s as status 0. */
interface Write {
  startedAt: number;
  status: number;
  ms: number;
  contentType: string;
}

let writeCounter = 0;
async function write(): Promise<Write> {
  const n = ++writeCounter;
  const startedAt = Date.now();
  try {
    const res = await fetch(`${stack.baseUrl}/v1/safety/lost-reports`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-debug-actor": `pgfault-${n}`, "x-forwarded-for": `10.8.${(n >> 8) & 255}.${n & 255}` },
      body: JSON.stringify({ animal: { species: "dog", name: `pgfault ${n}` }, lastSeenAt: "2026-11-20T08:00:00Z", location: { lat: 45, lon: 5 } }),
      signal: AbortSignal.timeout(5_000),
    });
    await res.arrayBuffer();
    return { startedAt, status: res.status, ms: Date.now() - startedAt, contentType: res.headers.get("content-type") ?? "" };
  } catch {
    return { startedAt, status: 0, ms: Date.now() - startedAt, contentType: "" };
  }
}

/** The contact messages' notifications (each lost report written under load also gives its owner a report_guide). */
async function notifications(): Promise<number> {
  const { rows } = await pool.query(`select count(*)::int as n from notification where kind = 'relay_message'`);
  return rows[0].n;
}

async function insertContactMessageEvents(count: number): Promise<void> {
  await pool.query(
    `insert into outbox_event (type, payload)
     select $1, jsonb_build_object('recipientActorId', 'owner-' || n, 'lostReportId', gen_random_uuid(),
       'relayMessageId', gen_random_uuid(), 'message', 'seen ' || n, 'fromContact', 'finder@example.org')
     from generate_series(1, $2::int) n`,
    [EventType.ContactMessageReceived, count],
  );
}

describe("fault: Postgres restarts under load", () => {
  it("keeps every process's /healthz 200, turns /readyz 503 within 2.5 s, answers every write 201 or a fast 503 problem, and recovers with no restart, no half-written rows and a working notifier", async () => {
    // The notifier works before the outage, so "resumes" below compares like with like.
    await insertContactMessageEvents(5);
    await eventually(async () => ((await notifications()) === 5 ? true : undefined), 20_000);

    const outcomes: Write[] = [];
    let writing = true;
    const writer = (async () => {
      while (writing) {
        outcomes.push(await write());
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    // /healthz of every process, polled through the whole outage: it touches no dependency, so it never fails.
    const health: Array<{ process: string; at: number; status: number; ms: number; error?: string }> = [];
    let polling = true;
    const poller = (async () => {
      while (polling) {
        for (const p of stack.processes) {
          const port = (p as ServiceProcess & { port?: number }).port;
          const at = Date.now();
          try {
            const res = await fetch(`http://127.0.0.1:${port}/healthz`, { headers: HEALTH_POLL_ADDRESS, signal: AbortSignal.timeout(2_000) });
            health.push({ process: `${p.name}:${p.child.pid}`, at, status: res.status, ms: Date.now() - at });
          } catch (err) {
            const cause = (err as Error & { cause?: { code?: string } }).cause?.code;
            health.push({ process: `${p.name}:${p.child.pid}`, at, status: 0, ms: Date.now() - at, error: cause ?? (err as Error).name });
          }
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    await new Promise((r) => setTimeout(r, 1_000));
    expect(await status("/readyz")).toBe(200);
    const pids = stack.processes.map((p) => p.child.pid);
    // A process that dies during the outage fails the test below; its last words say why.
    for (const p of stack.processes) {
      void p.exited.then((code) => {
        if (code === 0) return;
        const lastWords = p.lines.filter((l) => Object.keys(l).length === 1 || (l.level as number) >= 40).slice(-40);
        console.log(`[postgres-restart] ${p.name} exited with ${code}; warnings, errors and stderr: ${JSON.stringify(lastWords)}`);
      });
    }

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
    for (const w of outageWrites) {
      expect(w.status).toBe(503);
      expect(w.ms).toBeLessThan(3_000);
    }
    expect(await status("/healthz")).toBe(200);

    await cluster.start();
    const restartedAt = Date.now();
    console.log("[postgres-restart] Postgres started again");
    await eventually(async () => ((await status("/readyz")) === 200 ? true : undefined), 15_000, 100);
    const recovered = await eventually(async () => {
      const w = await createLostReport(stack.baseUrl, "pgfault-after");
      return w.status === 201 ? w : undefined;
    }, 15_000, 200);
    expect(recovered.id).toBeDefined();
    writing = false;
    await writer;
    polling = false;
    await poller;

    // Every write started from the stop until Postgres was back, including the edges the
    // 4 s window above leaves out: it either landed (201) or failed fast as a problem (503), never a 500 or a hang.
    const edgeWrites = outcomes.filter((o) => o.startedAt >= stoppedAt && o.startedAt <= restartedAt);
    const byStatus = edgeWrites.reduce<Record<string, number>>((m, o) => ({ ...m, [o.status]: (m[o.status] ?? 0) + 1 }), {});
    console.log(`[postgres-restart] ${edgeWrites.length} writes started between stop and restart: ${JSON.stringify(byStatus)}`);
    expect(edgeWrites.length).toBeGreaterThan(outageWrites.length);
    expect(edgeWrites.filter((o) => o.status !== 201 && o.status !== 503)).toEqual([]);
    expect(edgeWrites.filter((o) => o.status === 503 && !o.contentType.startsWith("application/problem+json"))).toEqual([]);
    expect(edgeWrites.filter((o) => o.ms >= 3_000)).toEqual([]);

    // Times relative to the stop, so a failure shows where in the outage it fell.
    const healthFailures = health.filter((s) => s.status !== 200).map((s) => ({ ...s, at: s.at - stoppedAt }));
    console.log(`[postgres-restart] /healthz polled ${health.length} times across ${stack.processes.length} processes; ${healthFailures.length} not 200`);
    expect(new Set(health.map((s) => s.process.split(":")[0]))).toEqual(new Set(["api", "relay", "notifier"]));
    expect(healthFailures).toEqual([]);

    expect(stack.processes.map((p) => p.child.pid)).toEqual(pids);
    expect(stack.processes.every((p) => p.child.exitCode === null)).toBe(true);

    await eventually(async () => {
      const { rows } = await pool.query(`select count(*)::int as n from outbox_event where published_at is null`);
      return rows[0].n === 0 ? true : undefined;
    }, 20_000);
    // Only lost-report events pair with a report; the notifier's events inserted above have none.
    const { rows: orphans } = await pool.query(
      `select r.id from safety_lost_report r
       full join (select * from outbox_event where type = $1) o on o.payload->>'reportId' = r.id::text
       where r.id is null or o.id is null`,
      [EventType.AnimalLostReported],
    );
    expect(orphans).toEqual([]);
    const created = outcomes.filter((o) => o.status === 201).length + 1;
    const { rows } = await pool.query(`select count(*)::int as n from safety_lost_report`);
    console.log(`[postgres-restart] ${created} writes answered 201; ${rows[0].n} reports stored; relay drained`);
    expect(rows[0].n).toBe(created);

    // The same notifier process (never restarted) consumes events published after the outage.
    await insertContactMessageEvents(5);
    await eventually(async () => ((await notifications()) === 10 ? true : undefined), 30_000, 100);
    expect(notifier.child.exitCode).toBeNull();
    expect(notifier.child.pid).toBe(pids[2]);
  }, 120_000);
});
