/**
 * One vs two instances of the API, the relay and the notifier on this
 * machine: `npx tsx bench/scale-out.ts` (about two minutes; SCALE_STEP_SECONDS
 * and SCALE_ROWS shorten or lengthen it). Each configuration gets a fresh
 * database and NATS server from bench/stack.ts, then:
 *   - capacity: creates stepped up (SCALE_STEP_SECONDS a step) until p95 > 50 ms
 *     or an error; the load comes from two load generators at half the rate
 *     each, one per API when there are two, both on the one API otherwise, so
 *     load generation costs the same in both;
 *   - saturation: creates offered at SCALE_SATURATION_RATE (1,500/s) for
 *     SCALE_STEP_SECONDS, far past capacity: the 201s per second of the span
 *     from the first intended send to the last answer is the throughput ceiling,
 *     a figure less sensitive to a noisy neighbour than a p95 threshold;
 *   - relay drain: a backlog of SCALE_ROWS rows, rate from the first row
 *     published to the last (process start-up excluded);
 *   - notifier: SCALE_ROWS / 2 relay-message events on the stream before the
 *     notifiers start, rate from the first notification row to the last.
 * CPU seconds per second of every one of our processes and of the database's
 * Postgres backends are sampled over each capacity step, to show which one
 * is the limit. Results go to bench/results/scale-out-<date>.json.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { EventType } from "../lib/events.js";
import { freePort, waitForPort } from "../tests/helpers/nats-server.js";
import { ServiceProcess, type ProcessName } from "../tests/helpers/processes.js";
import { postgresBackends, withCpu } from "./cpu.js";
import { load, type LoadResult } from "./load.js";
import { log, machine, startBenchStack, type BenchStack } from "./stack.js";
import { round, summarize } from "./stats.js";

const root = path.resolve(import.meta.dirname, "..");
const stepSeconds = Number(process.env.SCALE_STEP_SECONDS ?? 5);
const rows = Number(process.env.SCALE_ROWS ?? 20_000);
const steps = [100, 200, 300, 400, 500, 600, 700, 800, 1000, 1200];
const saturationRate = Number(process.env.SCALE_SATURATION_RATE ?? 1500);

/** The settings bench/stack.ts gives its processes, for the second instance of each. */
function env(stack: BenchStack, name: ProcessName, addr: string) {
  return {
    DATABASE_URL: stack.dbUrl,
    NATS_URL: stack.natsUrl,
    NATS_STREAM: "EVENTS",
    API_ENV: "development",
    API_DEV_AUTH_BYPASS: "true",
    API_TRUSTED_PROXY_CIDRS: "127.0.0.1/32",
    LOG_LEVEL: "warn",
    DATABASE_POOL_SIZE: "20",
    // Several APIs share this host: each takes a free port for its metrics.
    API_METRICS_ADDR: "127.0.0.1:0",
    [name === "api" ? "API_HTTP_ADDR" : name === "relay" ? "RELAY_HEALTH_ADDR" : "NOTIFIER_HEALTH_ADDR"]: addr,
  };
}

async function startProcess(stack: BenchStack, name: ProcessName): Promise<{ process: ServiceProcess; port: number }> {
  const port = await freePort();
  const process = ServiceProcess.start(name, env(stack, name, `127.0.0.1:${port}`));
  await waitForPort(port, 60_000);
  return { process, port };
}

async function waitFor(check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error("timed out");
}

async function run(instances: 1 | 2) {
  const database = `ass_scale_${instances}`;
  // The machine's load average when the configuration starts and ends: other work on a shared box shows up here.
  const loadAverage = { start: round(os.loadavg()[0]!, 2), end: 0 };
  log(`${instances}×: starting (load average ${loadAverage.start})`);
  const stack = await startBenchStack(database);
  const apis = [stack.baseUrl];
  const relays = [stack.relay];
  let notifiers = [stack.notifier];
  const extra: ServiceProcess[] = [];
  if (instances === 2) {
    const [api, relay, notifier] = await Promise.all((["api", "relay", "notifier"] as const).map((n) => startProcess(stack, n)));
    apis.push(`http://127.0.0.1:${api!.port}`);
    relays.push(relay!.process);
    notifiers.push(notifier!.process);
    extra.push(api!.process, relay!.process, notifier!.process);
  }
  const pool = stack.pool;
  const groups = () => ({
    api: [stack.api, ...extra.filter((p) => p.name === "api")].map((p) => p.child.pid!),
    relay: relays.map((p) => p.child.pid!),
    notifier: notifiers.map((p) => p.child.pid!),
    postgres: postgresBackends(database),
  });

  // Capacity ---------------------------------------------------------------
  // A warm-up per API first (JIT, pools, prepared statements), not counted.
  await Promise.all(apis.map((baseUrl) => load({ baseUrl, rate: 50, durationSec: 3, kind: "create", connections: 16 })));
  const capacity: Array<{ rate: number; p95: number; p99: number; errors: number; late: number; cpu: Record<string, number> }> = [];
  let held: number | null = null;
  for (const rate of steps) {
    const { result, cpu } = await withCpu(groups, () =>
      Promise.all([0, 1].map((i) => load({ baseUrl: apis[i % apis.length], rate: rate / 2, durationSec: stepSeconds, kind: "create", connections: 64 }))),
    );
    const merged = summarize(result.flatMap((r: LoadResult) => r.raw.latenciesMs));
    const sent = result.reduce((n, r) => n + r.sent, 0);
    const errors = sent - result.reduce((n, r) => n + (r.statuses["201"] ?? 0), 0);
    const late = result.reduce((n, r) => n + r.late, 0);
    capacity.push({ rate, p95: merged.p95, p99: merged.p99, errors, late, cpu });
    log(`  ${instances}× ${rate}/s: p95 ${merged.p95} ms, p99 ${merged.p99} ms, errors ${errors}, late ${late}, cpu ${JSON.stringify(cpu)}`);
    if (merged.p95 > 50 || errors > 0) break;
    held = rate;
  }
  await waitFor(async () => !(await pool.query(`select exists (select 1 from outbox_event where published_at is null) as x`)).rows[0].x, 120_000);

  // Saturation -----------------------------------------------------------------
  const half = saturationRate / 2;
  const { result: flood, cpu: saturationCpu } = await withCpu(groups, () =>
    Promise.all([0, 1].map((i) => load({ baseUrl: apis[i % apis.length], rate: half, durationSec: stepSeconds, kind: "create", connections: 64 }))),
  );
  // Request i was due at i / rate; its answer came latency_i later. The last answer ends the span.
  const spanMs = Math.max(...flood.flatMap((r) => r.raw.latenciesMs.map((ms, i) => (i * 1000) / half + ms)));
  const created = flood.reduce((n, r) => n + (r.statuses["201"] ?? 0), 0);
  const saturation = {
    offered: saturationRate,
    createdPerSecond: round(created / (spanMs / 1000), 0),
    failed: flood.reduce((n, r) => n + r.sent, 0) - created,
    cpu: saturationCpu,
  };
  log(`  ${instances}× saturation at ${saturationRate}/s offered: ${saturation.createdPerSecond} created/s, ${saturation.failed} failed, cpu ${JSON.stringify(saturationCpu)}`);
  await waitFor(async () => !(await pool.query(`select exists (select 1 from outbox_event where published_at is null) as x`)).rows[0].x, 300_000);

  // Relay drain --------------------------------------------------------------
  await Promise.all(relays.map((r) => r.stop()));
  const marker = `drain-${instances}`;
  await pool.query(
    `insert into outbox_event (type, payload) select $1, jsonb_build_object('n', n, 'bench', $3::text) from generate_series(1, $2::int) n`,
    [EventType.AnimalLostReported, rows, marker],
  );
  await stack.restartRelay();
  relays.splice(0, relays.length, stack.relay);
  if (instances === 2) relays.push((await startProcess(stack, "relay")).process);
  await waitFor(async () => !(await pool.query(`select exists (select 1 from outbox_event where published_at is null) as x`)).rows[0].x, 300_000);
  const { rows: span } = await pool.query<{ s: number }>(
    `select extract(epoch from max(published_at) - min(published_at))::float8 as s from outbox_event where payload->>'bench' = $1`,
    [marker],
  );
  const drainPerSecond = round(rows / Math.max(0.001, span[0]!.s), 0);
  log(`  ${instances}× relay drain: ${rows} rows in ${round(span[0]!.s, 2)} s = ${drainPerSecond}/s`);

  // Notifier -------------------------------------------------------------------
  await Promise.all(notifiers.map((n) => n.stop()));
  const events = Math.round(rows / 2);
  await pool.query(`insert into notification_preference (actor_id, channel) values ('scale-owner', 'in_app') on conflict do nothing`);
  await pool.query(
    `insert into outbox_event (type, payload)
     select $1, jsonb_build_object('recipientActorId', 'scale-owner', 'lostReportId', gen_random_uuid(),
       'relayMessageId', gen_random_uuid(), 'message', 'seen near the park ' || n, 'fromContact', 'finder@example.org')
     from generate_series(1, $2::int) n`,
    [EventType.ContactMessageReceived, events],
  );
  await waitFor(async () => !(await pool.query(`select exists (select 1 from outbox_event where published_at is null) as x`)).rows[0].x, 300_000);
  notifiers = (await Promise.all(Array.from({ length: instances }, () => startProcess(stack, "notifier")))).map((n) => n.process);
  const notified = async () => Number((await pool.query(`select count(*) as n from notification where recipient_actor_id = 'scale-owner'`)).rows[0].n);
  await waitFor(async () => (await notified()) >= events, 300_000);
  const { rows: nspan } = await pool.query<{ s: number }>(
    `select extract(epoch from max(created_at) - min(created_at))::float8 as s from notification where recipient_actor_id = 'scale-owner'`,
  );
  const notifierPerSecond = round(events / Math.max(0.001, nspan[0]!.s), 0);
  log(`  ${instances}× notifier: ${events} notifications in ${round(nspan[0]!.s, 2)} s = ${notifierPerSecond}/s`);

  await Promise.all([...relays, ...notifiers, ...extra].map((p) => p.stop()));
  await stack.stop();
  loadAverage.end = round(os.loadavg()[0]!, 2);
  return { instances, loadAverage, capacity, held, saturation, drainPerSecond, notifierPerSecond };
}

// SCALE_REPEAT=2 alternates 1×, 2×, 1×, 2×, so a neighbour's burst is less likely to land on one side only.
const repeat = Number(process.env.SCALE_REPEAT ?? 1);
const runs = [];
for (let i = 0; i < repeat; i++) runs.push(await run(1), await run(2));
const results = { date: new Date().toISOString(), machine: machine(), stepSeconds, rows, runs };
console.log("| instances | load avg start/end | creates held (p95 ≤ 50 ms) | creates/s at saturation | relay drain | notifier |");
console.log("|---|---|---|---|---|---|");
for (const r of results.runs) {
  console.log(
    `| ${r.instances} of each | ${r.loadAverage.start} / ${r.loadAverage.end} | ${r.held ?? "none"} /s | ${r.saturation.createdPerSecond} /s | ${r.drainPerSecond} events/s | ${r.notifierPerSecond} notifications/s |`,
  );
}
mkdirSync(path.join(root, "bench/results"), { recursive: true });
const file = path.join(root, "bench/results", `scale-out-${results.date.slice(0, 10)}.json`);
writeFileSync(file, JSON.stringify(results, null, 2));
log(`results written to ${path.relative(root, file)}`);
