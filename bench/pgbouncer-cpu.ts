/**
 * `npx tsx bench/pgbouncer-cpu.ts`: what one create costs in CPU, straight to
 * Postgres with named statements (the default), with DATABASE_NAMED_STATEMENTS
 * =false, and through PgBouncer (transaction pooling, no named statements,
 * settings from the role). One process runs three apps on one database and
 * sends them sequential creates in alternating rounds, so load from other work
 * falls on all three alike. Per create: Postgres backend CPU (from /proc, the
 * backends found by their application_name), pgbouncer's CPU, this process's
 * CPU, and the wall-clock median. CPU per create is the comparison to trust
 * on a busy machine; the wall clock is reported with the load average.
 */
import { readFileSync, writeFileSync, mkdirSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { pino } from "pino";
import { buildApp } from "../api/app.js";
import { busClient, connectBus, ensureStream, relayWaker } from "../lib/bus.js";
import { loadApiConfig } from "../lib/config.js";
import { createPool, type Pool } from "../lib/db.js";
import { createMetricsRegistry } from "../lib/metrics.js";
import { migrateUp } from "../lib/migrate.js";
import { canStartNatsServer, TestNatsServer } from "../tests/helpers/nats-server.js";
import { startPgBouncer } from "../tests/helpers/pgbouncer.js";
import { resultStamp, round } from "./stats.js";

const DATABASE = "ass_bench_pgbouncer_cpu";
const PER_ROUND = Number(process.env.BENCH_PER_ROUND ?? 300);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const root = path.resolve(import.meta.dirname, "..");
const logger = pino({ level: "warn" });

/** CPU seconds (user + system) of a process so far; 0 once it is gone. */
function cpuSeconds(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
    // utime + stime, in clock ticks (100 a second on Linux: getconf CLK_TCK).
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return 0;
  }
}

const adminUrl = new URL(process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres");
const dbUrl = new URL(adminUrl);
dbUrl.pathname = `/${DATABASE}`;
const admin = new pg.Client({ connectionString: adminUrl.toString() });
await admin.connect();
await admin.query(`drop database if exists ${DATABASE} with (force)`);
await admin.query(`create database ${DATABASE}`);
// What DATABASE_SESSION_SETTINGS=role needs (lib/db.ts ROLE_SETTINGS), here for the database; the direct pools' startup parameters override it.
await admin.query(`alter database ${DATABASE} set statement_timeout = '10s'`);
await admin.query(`alter database ${DATABASE} set jit = off`);
await migrateUp(dbUrl.toString());

const nats = canStartNatsServer() ? await TestNatsServer.start() : null;
const natsUrl = nats?.url ?? process.env.NATS_URL ?? "nats://127.0.0.1:4222";
const bouncer = await startPgBouncer({ upstream: { host: adminUrl.hostname, port: Number(adminUrl.port || 5432) }, poolSize: 4 });
const nc = await connectBus(natsUrl, "bench", logger);
await ensureStream(nc, "EVENTS");

interface Variant {
  name: string;
  url: string;
  namedStatements: boolean;
  sessionSettings: "startup" | "role";
}
const variants: Variant[] = [
  { name: "direct", url: dbUrl.toString(), namedStatements: true, sessionSettings: "startup" },
  { name: "direct-unnamed", url: dbUrl.toString(), namedStatements: false, sessionSettings: "startup" },
  { name: "pgbouncer", url: bouncer.through(dbUrl.toString()), namedStatements: false, sessionSettings: "role" },
];

const apps = await Promise.all(
  variants.map(async (v) => {
    const env = {
      API_ENV: "development",
      API_DEV_AUTH_BYPASS: "true",
      DATABASE_URL: v.url,
      NATS_URL: natsUrl,
      NATS_STREAM: "EVENTS",
      LOG_LEVEL: "warn",
      API_METRICS_ADDR: "127.0.0.1:0",
      PHOTO_STORAGE_DIR: `${os.tmpdir()}/ass-bench-pgbouncer-cpu`,
    };
    const config = loadApiConfig(env);
    const pool: Pool = createPool({
      connectionString: v.url,
      max: 4,
      applicationName: `cpu-${v.name}`,
      logger,
      namedStatements: v.namedStatements,
      sessionSettings: v.sessionSettings,
    });
    const app = await buildApp({ config, pool, js: busClient(nc), wakeRelay: relayWaker(nc), logger, metrics: createMetricsRegistry("api") });
    await app.ready();
    return { variant: v, app, pool };
  }),
);

let seq = 0;
const body = {
  animal: { name: "Rex", species: "dog", breed: "Beagle", colors: ["brown", "white"], microchipId: "CHIP-12345" },
  lastSeenAt: "2025-11-20T08:00:00Z",
  location: { lat: 48.8566, lon: 2.3522 },
  description: "Wearing a red collar",
  verificationDetail: "scar under the left ear",
};
async function creates(app: (typeof apps)[number]["app"], n: number): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    seq += 1;
    const started = performance.now();
    const res = await app.inject({
      method: "POST",
      url: "/v1/safety/lost-reports",
      remoteAddress: `10.${(seq >> 16) & 255}.${(seq >> 8) & 255}.${seq & 255}`,
      headers: { "x-debug-actor": `bench-${process.pid}-${seq}` },
      payload: body,
    });
    times.push(performance.now() - started);
    if (res.statusCode !== 201) throw new Error(`create: ${res.statusCode} ${res.body}`);
  }
  return times;
}

async function backendPids(name: string): Promise<number[]> {
  const { rows } = await admin.query<{ pid: number }>(`select pid from pg_stat_activity where datname = $1 and application_name = $2`, [DATABASE, `cpu-${name}`]);
  return rows.map((r) => r.pid);
}

const totals = new Map(variants.map((v) => [v.name, { n: 0, postgres: 0, pgbouncer: 0, node: 0, times: [] as number[] }]));
for (const a of apps) await creates(a.app, 50); // warm-up: pools filled, statements prepared, JIT of the JavaScript done
const loadBefore = os.loadavg();
for (let r = 0; r < ROUNDS; r++) {
  for (const a of apps) {
    const pids = await backendPids(a.variant.name);
    const pgBefore = pids.reduce((s, pid) => s + cpuSeconds(pid), 0);
    const bouncerBefore = cpuSeconds(bouncer.pid);
    const nodeBefore = process.cpuUsage();
    const times = await creates(a.app, PER_ROUND);
    const node = process.cpuUsage(nodeBefore);
    const after = await backendPids(a.variant.name);
    const t = totals.get(a.variant.name)!;
    t.n += PER_ROUND;
    t.postgres += after.reduce((s, pid) => s + cpuSeconds(pid), 0) - pgBefore;
    t.pgbouncer += cpuSeconds(bouncer.pid) - bouncerBefore;
    t.node += (node.user + node.system) / 1e6;
    t.times.push(...times);
  }
}
const loadAfter = os.loadavg();

const percentile = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;
const results: Record<string, unknown> = { date: new Date().toISOString(), perRound: PER_ROUND, rounds: ROUNDS, loadBefore, loadAfter };
console.log(`load average before ${loadBefore.map((l) => round(l, 2)).join(" ")}, after ${loadAfter.map((l) => round(l, 2)).join(" ")}`);
console.log("| variant | creates | Postgres CPU / create | pgbouncer CPU / create | API process CPU / create | wall p50 / p95 |\n|---|---|---|---|---|---|");
for (const [name, t] of totals) {
  const row = {
    creates: t.n,
    postgresMsPerCreate: round((t.postgres / t.n) * 1000, 3),
    pgbouncerMsPerCreate: name === "pgbouncer" ? round((t.pgbouncer / t.n) * 1000, 3) : null,
    nodeMsPerCreate: round((t.node / t.n) * 1000, 3),
    wallP50: round(percentile(t.times, 50), 2),
    wallP95: round(percentile(t.times, 95), 2),
  };
  results[name] = row;
  console.log(
    `| ${name} | ${row.creates} | ${row.postgresMsPerCreate} ms | ${row.pgbouncerMsPerCreate ?? "—"}${row.pgbouncerMsPerCreate === null ? "" : " ms"} | ${row.nodeMsPerCreate} ms | ${row.wallP50} / ${row.wallP95} ms |`,
  );
}
mkdirSync(path.join(root, "bench/results"), { recursive: true });
const file = path.join(root, "bench/results", `pgbouncer-cpu-${resultStamp()}.json`);
writeFileSync(file, JSON.stringify(results, null, 2));
console.error(`results written to ${path.relative(root, file)}`);

for (const a of apps) {
  await a.app.close();
  await a.pool.end();
}
await nc.close();
await bouncer.stop();
await nats?.dispose();
await admin.query(`drop database if exists ${DATABASE} with (force)`);
await admin.end();
