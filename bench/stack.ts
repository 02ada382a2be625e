import os from "node:os";
import path from "node:path";
import pg from "pg";
import { migrateUp } from "../lib/migrate.js";
import { canStartNatsServer, freePort, TestNatsServer, waitForPort } from "../tests/helpers/nats-server.js";
import { ServiceProcess } from "../tests/helpers/processes.js";
import { round } from "./stats.js";

/**
 * The three processes for the benchmark and the soak, against the
 * configured Postgres (a database of their own) and a NATS server of their
 * own (NATS_URL when no nats-server binary is found). The API trusts the
 * loopback peer as a proxy, so each simulated client is keyed by its
 * X-Forwarded-For address — the ordinary trusted-proxy setting.
 */
export interface BenchStack {
  baseUrl: string;
  /** The first API's metrics listener (API_METRICS_ADDR), where its /metrics is served. */
  metricsUrl: string;
  /** Every API instance's URL; one unless started with `apiInstances`. */
  baseUrls: string[];
  dbUrl: string;
  natsUrl: string;
  /** The bench's own nats-server, when it started one (bench:cost counts its CPU). */
  natsPid: number | undefined;
  pool: pg.Pool;
  api: ServiceProcess;
  relay: ServiceProcess;
  notifier: ServiceProcess;
  ports: { api: number; apiMetrics: number; relay: number; notifier: number };
  /** Inspector ports, when started with `{ inspect: true }` (the soak's post-GC heap readings). */
  inspectPorts: { api: number; relay: number; notifier: number } | null;
  restartRelay(): Promise<void>;
  stopRelay(): Promise<void>;
  stopNotifier(): Promise<void>;
  restartNotifier(): Promise<void>;
  stop(): Promise<void>;
}

/** The VAPID pair of the bench's processes (web-push's generateVAPIDKeys made it), which its local push service checks. */
export const BENCH_VAPID = {
  publicKey: "BC6apSkxwqDM4prWYpjQVFHGAq6VSYlQIRcA9igLV9MiWIUPvDEn8-m4ykMIoAN-HgRtVRtAMeLQ-_LtoQFxZMg",
  privateKey: "vOL8GdN3rkoVXeIdJK-ZzSYFACe7-mn6uU66MPNm3vo",
};

/** The integration key the bench's partner scenario calls /partners with (bench/partners.ts). */
export const BENCH_PARTNER_KEY = "bench-partner-integration-key";

export function log(message: string): void {
  console.error(`[${new Date().toISOString().slice(11, 19)}] ${message}`);
}

export function machine() {
  return { cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model, memoryGiB: round(os.totalmem() / 2 ** 30, 1), node: process.version };
}

export interface BenchStackOptions {
  /** --inspect on loopback for each process (the soak's live-heap readings). */
  inspect?: boolean;
  /** --cpu-prof into <profileDir>/<process>/ (bench/profile.ts summarises them). */
  profileDir?: string;
  /** Extra environment for the API (the write-path probe's variants). */
  apiEnv?: Record<string, string>;
  /** API processes, each on its own port (the load generator spreads requests over `baseUrls`, as a balancer would). */
  apiInstances?: number;
  /** `alter database … set` before any process connects (the statement census's log_statement). */
  databaseSettings?: Record<string, string>;
  /**
   * RELAY_NICE and NOTIFIER_NICE as `npm run dev` sets them by default; BENCH_RELAY_NICE and
   * BENCH_NOTIFIER_NICE override, 0 for equal priority with the API.
   */
  relayNice?: number;
  notifierNice?: number;
  /** The candidate covering index for the jobs summary on graphile-worker's jobs table (JOBS_SUMMARY_INDEX), before any process starts. */
  jobsSummaryIndex?: boolean;
}

/**
 * A covering index for the jobs summary (jobs/job-state.ts jobCounts) on
 * graphile-worker's jobs table: every column the count reads, so that with
 * the visibility map set it is an index-only scan of the queued jobs rather
 * than a scan of the table. Not in the service's schema: bench/jobs-summary.ts
 * and bench/write-path.ts measure it (BENCH_JOBS_INDEX=1, the write-path
 * variant `jobs-summary-index`).
 */
export const JOBS_SUMMARY_INDEX = `create index if not exists jobs_summary_bench_idx
  on graphile_worker._private_jobs (task_id, run_at) include (locked_at, attempts, max_attempts)`;

export async function startBenchStack(
  database: string,
  { inspect = false, profileDir, apiEnv = {}, apiInstances = 1, databaseSettings = {},
    relayNice = Number(process.env.BENCH_RELAY_NICE ?? 10), notifierNice = Number(process.env.BENCH_NOTIFIER_NICE ?? 10),
    jobsSummaryIndex = process.env.BENCH_JOBS_INDEX === "1" }: BenchStackOptions = {},
): Promise<BenchStack> {
  const adminUrl = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
  const url = new URL(adminUrl);
  url.pathname = `/${database}`;
  const dbUrl = url.toString();
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`drop database if exists ${database} with (force)`);
  await admin.query(`create database ${database}`);
  for (const [name, value] of Object.entries(databaseSettings)) await admin.query(`alter database ${database} set ${name} = '${value}'`);
  await admin.end();
  await migrateUp(dbUrl);
  if (jobsSummaryIndex) {
    const pool = new pg.Pool({ connectionString: dbUrl, max: 1 });
    await pool.query(JOBS_SUMMARY_INDEX);
    await pool.end();
  }

  let nats: TestNatsServer | null = null;
  let natsUrl = process.env.NATS_URL ?? "nats://127.0.0.1:4222";
  if (canStartNatsServer()) {
    nats = await TestNatsServer.start();
    natsUrl = nats.url;
  }
  const ports = { api: await freePort(), apiMetrics: await freePort(), relay: await freePort(), notifier: await freePort() };
  const inspectPorts = inspect ? { api: await freePort(), relay: await freePort(), notifier: await freePort() } : null;
  const nodeOptions = (name: "api" | "relay" | "notifier", extra = "") =>
    [
      extra,
      inspectPorts ? `--inspect=127.0.0.1:${inspectPorts[name]}` : "",
      profileDir ? `--cpu-prof --cpu-prof-dir=${path.join(profileDir, name)}` : "",
    ]
      .filter(Boolean)
      .join(" ");
  const env = {
    DATABASE_URL: dbUrl,
    NATS_URL: natsUrl,
    NATS_STREAM: "EVENTS",
    API_ENV: "development",
    API_DEV_AUTH_BYPASS: "true",
    API_TRUSTED_PROXY_CIDRS: "127.0.0.1/32",
    LOG_LEVEL: "warn",
    DATABASE_POOL_SIZE: "20",
    // The photo scenario's objects (local backend), never the repository's .data/photos.
    PHOTO_STORAGE_DIR: `${os.tmpdir()}/ass-bench-photos-${process.pid}`,
    RELAY_NICE: String(relayNice),
    NOTIFIER_NICE: String(notifierNice),
    // The alert bench's fan-out settings, when it is run to compare them (bench/alerts-fanout.ts).
    ...(process.env.NOTIFIER_FANOUT_CONCURRENCY ? { NOTIFIER_FANOUT_CONCURRENCY: process.env.NOTIFIER_FANOUT_CONCURRENCY } : {}),
    ...(process.env.NOTIFIER_FANOUT_DUTY ? { NOTIFIER_FANOUT_DUTY: process.env.NOTIFIER_FANOUT_DUTY } : {}),
    ...(process.env.NOTIFIER_CONSUME_CONCURRENCY ? { NOTIFIER_CONSUME_CONCURRENCY: process.env.NOTIFIER_CONSUME_CONCURRENCY } : {}),
    // The push part's delivery rate with more delivery jobs at once (bench/alerts-fanout.ts).
    ...(process.env.NOTIFIER_DELIVERY_CONCURRENCY ? { NOTIFIER_DELIVERY_CONCURRENCY: process.env.NOTIFIER_DELIVERY_CONCURRENCY } : {}),
    // The photo jobs at once, when the partner bench compares them (bench/partners.ts).
    ...(process.env.NOTIFIER_PHOTO_CONCURRENCY ? { NOTIFIER_PHOTO_CONCURRENCY: process.env.NOTIFIER_PHOTO_CONCURRENCY } : {}),
    // The partner scenario (bench/partners.ts): its integration key, and its local photo server allow-listed.
    PARTNER_API_KEYS: BENCH_PARTNER_KEY,
    PARTNER_PHOTO_FETCH_ALLOW: "127.0.0.1",
    // The push part of the alert bench (bench/alerts-fanout.ts): a fixed VAPID pair, and its local push service allow-listed.
    VAPID_PUBLIC_KEY: BENCH_VAPID.publicKey,
    VAPID_PRIVATE_KEY: BENCH_VAPID.privateKey,
    VAPID_SUBJECT: "mailto:bench@animal-safety.example",
    PUSH_ENDPOINT_ALLOW: "127.0.0.1",
  };
  const startRelay = async () => {
    const relay = ServiceProcess.start("relay", { ...env, RELAY_HEALTH_ADDR: `127.0.0.1:${ports.relay}`, NODE_OPTIONS: nodeOptions("relay") });
    await waitForPort(ports.relay, 30_000);
    return relay;
  };
  const startNotifier = () =>
    ServiceProcess.start("notifier", { ...env, NOTIFIER_HEALTH_ADDR: `127.0.0.1:${ports.notifier}`, NODE_OPTIONS: nodeOptions("notifier") });
  const extraApiPorts = await Promise.all(Array.from({ length: apiInstances - 1 }, () => freePort()));
  // Extra APIs take any free port for their metrics; only the first one's is scraped.
  const startApi = (port: number, metricsPort = 0) =>
    ServiceProcess.start("api", { ...env, ...apiEnv, API_HTTP_ADDR: `127.0.0.1:${port}`, API_METRICS_ADDR: `127.0.0.1:${metricsPort}`, NODE_OPTIONS: nodeOptions("api", process.env.BENCH_API_NODE_OPTIONS) });
  const extraApis = extraApiPorts.map((port) => startApi(port));
  const stack: BenchStack = {
    baseUrl: `http://127.0.0.1:${ports.api}`,
    metricsUrl: `http://127.0.0.1:${ports.apiMetrics}`,
    baseUrls: [ports.api, ...extraApiPorts].map((port) => `http://127.0.0.1:${port}`),
    dbUrl,
    natsUrl,
    natsPid: nats?.pid,
    pool: new pg.Pool({ connectionString: dbUrl, max: 20 }),
    api: startApi(ports.api, ports.apiMetrics),
    notifier: startNotifier(),
    relay: await startRelay(),
    ports,
    inspectPorts,
    async stopRelay() {
      await stack.relay.stop();
    },
    async restartRelay() {
      stack.relay = await startRelay();
    },
    async stopNotifier() {
      await stack.notifier.stop();
    },
    async restartNotifier() {
      stack.notifier = startNotifier();
      await waitForPort(ports.notifier, 30_000);
    },
    async stop() {
      await stack.pool.end();
      await Promise.all([stack.api.stop(), ...extraApis.map((api) => api.stop()), stack.relay.stop(), stack.notifier.stop()]);
      await nats?.dispose();
    },
  };
  // A bench that throws or is interrupted must not leave its processes running (and loading the next run's machine).
  for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, () => process.exit(130));
  process.once("exit", () => {
    for (const child of [stack.api, ...extraApis, stack.relay, stack.notifier]) child.child.kill("SIGKILL");
    try {
      if (nats?.pid) process.kill(nats.pid, "SIGKILL");
    } catch {
      // already gone
    }
  });
  for (const port of [ports.api, ...extraApiPorts, ports.notifier]) await waitForPort(port, 30_000);
  return stack;
}

/**
 * Waits (at most a minute) until the outbox and the job queue are empty,
 * after a load; returns how long it took. Postgres's count comes back as a
 * number here (lib/db.ts parses bigint), so it is compared as one: against
 * the string "0" the wait would never end early, and every reading taken
 * after it would carry a minute of the idle stack's CPU.
 */
export async function waitUntilSettled(pool: pg.Pool): Promise<number> {
  const start = performance.now();
  const pending = async () => {
    const { rows } = await pool.query(
      `select (select count(*) from outbox_event where published_at is null) + (select count(*) from graphile_worker.jobs where run_at <= now()) as n`,
    );
    return Number(rows[0].n);
  };
  for (let i = 0; i < 600 && (await pending()) > 0; i++) await new Promise((r) => setTimeout(r, 100));
  return performance.now() - start;
}
