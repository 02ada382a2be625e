/**
 * The alerts search on a streaming replica against the same search on the
 * primary, in one run. A private primary (tests/helpers/pg-cluster.ts) is
 * migrated and seeded with open lost reports over the country-sized area of
 * `npm run bench`'s alerts scenario, then copied into a hot standby with
 * `pg_basebackup -R`. Two API processes share the bench stack's bus: one on
 * the primary alone, one with DATABASE_REPLICA_URL. The same paced alerts
 * load (15 rps, radius 25 km) is offered to each in turn, primary first,
 * twice, so both see the same phases of a shared host. The replica's API's
 * db_reads_total{target} says who answered.
 * bench/run.ts runs it as one of its scenarios; `npx tsx bench/replica-reads.ts`
 * runs it alone (BENCH_REPLICA_REPORTS sets the seed, default 1,000,000; 100,000
 * with BENCH_QUICK=1).
 */
import { readdirSync, readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { migrateUp } from "../lib/migrate.js";
import { freePort, waitForPort } from "../tests/helpers/nats-server.js";
import { TestPgCluster } from "../tests/helpers/pg-cluster.js";
import { ServiceProcess } from "../tests/helpers/processes.js";
import { procUsage } from "./cpu.js";
import { load } from "./load.js";
import { runScenarioScript, type ScenarioRow } from "./scenario-script.js";
import { log, type BenchStack } from "./stack.js";
import { round, type Summary } from "./stats.js";
import { seedOpenLostReports } from "./alerts-seed.js";

const DB = "animal_safety";
const RADIUS_KM = 25;
const RATE = 15;

const triple = (s: Summary) => `${s.p50} / ${s.p95} / ${s.p99} ms`;
const loadAverage = () => os.loadavg().map((l) => round(l, 2));

async function startApi(stack: BenchStack, env: Record<string, string>): Promise<{ process: ServiceProcess; baseUrl: string; metricsUrl: string }> {
  const [port, metricsPort] = [await freePort(), await freePort()];
  const child = ServiceProcess.start("api", {
    API_ENV: "development",
    API_DEV_AUTH_BYPASS: "true",
    API_TRUSTED_PROXY_CIDRS: "127.0.0.1/32",
    NATS_URL: stack.natsUrl,
    NATS_STREAM: "EVENTS",
    LOG_LEVEL: "warn",
    DATABASE_POOL_SIZE: "20",
    API_HTTP_ADDR: `127.0.0.1:${port}`,
    API_METRICS_ADDR: `127.0.0.1:${metricsPort}`,
    ...env,
  });
  await waitForPort(port, 30_000);
  return { process: child, baseUrl: `http://127.0.0.1:${port}`, metricsUrl: `http://127.0.0.1:${metricsPort}` };
}

/**
 * CPU ms used so far by one private cluster: its live processes (the
 * postmaster's children) plus what the postmaster reaped of those that
 * exited (a pool's backend closed after 30 s idle). Both clusters are idle
 * but for the load offered to them, the heartbeat and its replay.
 */
function clusterCpuMs(cluster: TestPgCluster): number {
  const postmaster = Number(readFileSync(path.join(cluster.dir, "data", "postmaster.pid"), "utf8").split("\n")[0]);
  let total = procUsage(postmaster, true).cpuMs;
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const ppid = Number(readFileSync(`/proc/${entry}/stat`, "utf8").split(") ")[1]!.split(" ")[1]);
      if (ppid === postmaster) total += procUsage(Number(entry)).cpuMs;
    } catch {
      // Exited meanwhile: the postmaster's reaped time has it.
    }
  }
  return total;
}

async function readsBy(metricsUrl: string): Promise<Record<string, number>> {
  const text = await (await fetch(`${metricsUrl}/metrics`)).text();
  const value = (target: string) => Number(text.split("\n").find((l) => l.startsWith(`db_reads_total{`) && l.includes(`target="${target}"`))?.split(" ").at(-1) ?? NaN);
  return { replica: value("replica"), primary: value("primary") };
}

export async function replicaReadsScenario(stack: BenchStack, { quick = false }: { quick?: boolean }): Promise<{ rows: ScenarioRow[]; results: Record<string, unknown> }> {
  const reports = Number(process.env.BENCH_REPLICA_REPORTS ?? (quick ? 100_000 : 1_000_000));
  const seconds = quick ? 10 : 30;
  const primary = await TestPgCluster.create();
  let replica: TestPgCluster | undefined;
  const apis: ServiceProcess[] = [];
  try {
    const root = new pg.Client({ connectionString: primary.url() });
    await root.connect();
    await root.query(`create database ${DB}`);
    await root.end();
    await migrateUp(primary.url(DB));
    log(`replica: seeding ${reports.toLocaleString("en")} open lost reports on a private primary`);
    const pool = new pg.Pool({ connectionString: primary.url(DB), max: 2 });
    // The seed of bench/run.ts's alerts scenario.
    await seedOpenLostReports(pool, reports);
    await pool.end();
    log("replica: pg_basebackup -R into a hot standby");
    replica = await primary.createReplica();

    const onPrimary = await startApi(stack, { DATABASE_URL: primary.url(DB) });
    apis.push(onPrimary.process);
    const onReplica = await startApi(stack, { DATABASE_URL: primary.url(DB), DATABASE_REPLICA_URL: replica.url(DB) });
    apis.push(onReplica.process);
    const offer = (baseUrl: string) => load({ baseUrl, rate: RATE, durationSec: seconds, kind: "alerts", connections: 16, radiusKm: RADIUS_KM });
    // Warm both (not counted): the first searches read the index from disk.
    await offer(onPrimary.baseUrl);
    await offer(onReplica.baseUrl);
    const before = await readsBy(onReplica.metricsUrl);
    type Pass = { target: "primary" | "replica"; latency: Summary; statuses: Record<string, number>; loadAverage: number[]; postgresCpuMsPerSearch: number; apiCpuMsPerSearch: number };
    const passes: Pass[] = [];
    for (let pass = 0; pass < 2; pass++) {
      for (const [target, api] of [["primary", onPrimary], ["replica", onReplica]] as const) {
        // CPU per search, less noisy than wall time on shared cores: the cluster that answers, and the API process.
        const cluster = target === "primary" ? primary : replica;
        const [clusterBefore, apiBefore] = [clusterCpuMs(cluster), procUsage(api.process.child.pid).cpuMs];
        const result = await offer(api.baseUrl);
        const searches = Math.max(1, result.statuses["200"] ?? 0);
        const postgresCpuMsPerSearch = round((clusterCpuMs(cluster) - clusterBefore) / searches, 2);
        const apiCpuMsPerSearch = round((procUsage(api.process.child.pid).cpuMs - apiBefore) / searches, 2);
        passes.push({ target, latency: result.latency, statuses: result.statuses, loadAverage: loadAverage(), postgresCpuMsPerSearch, apiCpuMsPerSearch });
        log(
          `replica: alerts on the ${target}, pass ${pass + 1}: ${triple(result.latency)} ${JSON.stringify(result.statuses)}, ` +
            `Postgres ${postgresCpuMsPerSearch} CPU ms/search, API ${apiCpuMsPerSearch}, load ${loadAverage().join(" ")}`,
        );
      }
    }
    const after = await readsBy(onReplica.metricsUrl);
    const answered = { replica: after.replica! - before.replica!, primary: after.primary! - before.primary! };
    const of = (target: string) => passes.filter((p) => p.target === target);
    const p95s = (target: string) => of(target).map((p) => p.latency.p95).join(", ");
    const cpu = (target: string, key: "postgresCpuMsPerSearch" | "apiCpuMsPerSearch") => of(target).map((p) => p[key]).join(", ");
    const rows: ScenarioRow[] = [
      [
        `alerts on the replica @${RATE} rps, ${reports / 1000}k reports p50/p95/p99 (passes 1, 2)`,
        of("replica").map((p) => triple(p.latency)).join("; "),
        `on the primary ${of("primary").map((p) => triple(p.latency)).join("; ")}`,
        "within the noise of the primary",
        `2 alternating ${seconds} s passes each, primary first; replica API's statements answered by replica ${answered.replica}, by primary ${answered.primary}`,
      ],
      [
        "alerts: CPU ms per search, Postgres cluster; API (passes 1, 2)",
        `replica ${cpu("replica", "postgresCpuMsPerSearch")}; API ${cpu("replica", "apiCpuMsPerSearch")}`,
        `primary ${cpu("primary", "postgresCpuMsPerSearch")}; API ${cpu("primary", "apiCpuMsPerSearch")}`,
        "—",
        `p95 replica ${p95s("replica")} ms, primary ${p95s("primary")} ms`,
      ],
    ];
    return { rows, results: { reports, seconds, rate: RATE, radiusKm: RADIUS_KM, passes, answeredOnReplicaApi: answered } };
  } finally {
    await Promise.all(apis.map((api) => api.stop()));
    await replica?.dispose();
    await primary.dispose();
  }
}

await runScenarioScript(import.meta.url, "replica reads bench", "ass_bench_replica", replicaReadsScenario);
