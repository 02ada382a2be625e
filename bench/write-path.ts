/**
 * `npm run bench:write-path`: hypotheses about what the create path costs,
 * each measured instead of taken on faith. Every variant gets a fresh stack
 * (database, NATS, processes) and the same load: 20 s of creates at 15/s,
 * then capacity steps of 8 s until p95 passes 50 ms or an error appears.
 * The raw two-insert transaction (bench/baselines.ts) is measured before and
 * after, so drift in the machine shows. BENCH_VARIANTS=a,b picks variants.
 * Results: bench/results/write-path-<date>-<HHMM>.json.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { createRawTables, rawWriteThroughput } from "./baselines.js";
import { load } from "./load.js";
import { log, machine, startBenchStack, type BenchStackOptions } from "./stack.js";
import { resultStamp, round } from "./stats.js";

interface Variant {
  name: string;
  what: string;
  options?: BenchStackOptions;
  /** Processes stopped before the load: do they compete with the API for the cores? */
  stopped?: Array<"relay" | "notifier">;
}

const variants: Variant[] = [
  { name: "default", what: "as `npm run bench` runs it: pool 20, LOG_LEVEL warn, relay and notifier running at nice 10 (as npm run dev)" },
  { name: "log-info", what: "LOG_LEVEL info: the request log lines (incoming, completed) and the outbox line, written synchronously", options: { apiEnv: { LOG_LEVEL: "info" } } },
  { name: "pool-5", what: "DATABASE_POOL_SIZE 5", options: { apiEnv: { DATABASE_POOL_SIZE: "5" } } },
  { name: "pool-10", what: "DATABASE_POOL_SIZE 10 (the setting's default)", options: { apiEnv: { DATABASE_POOL_SIZE: "10" } } },
  { name: "pool-40", what: "DATABASE_POOL_SIZE 40", options: { apiEnv: { DATABASE_POOL_SIZE: "40" } } },
  { name: "api-alone", what: "relay and notifier stopped during the load", stopped: ["relay", "notifier"] },
  { name: "no-notifier", what: "the notifier stopped during the load: the relay publishes, nothing consumes", stopped: ["notifier"] },
  { name: "equal-priority", what: "relay and notifier at the API's priority (nice 0), without the default's nice 10", options: { relayNice: 0, notifierNice: 0 } },
  { name: "notifier-nice", what: "only the notifier at nice 10, the relay at the API's priority", options: { relayNice: 0 } },
  { name: "two-apis", what: "two API processes behind round-robin", options: { apiInstances: 2 } },
  {
    name: "jobs-summary-index",
    what: "as default, with the jobs summary's covering index on graphile-worker's jobs table (bench/stack.ts JOBS_SUMMARY_INDEX)",
    options: { jobsSummaryIndex: true },
  },
];
const picked = process.env.BENCH_VARIANTS?.split(",");
// BENCH_STEPS=800,1000,…: other capacity steps (the API alone holds past the default 1,200/s on a fast VM).
const steps = process.env.BENCH_STEPS?.split(",").map(Number) ?? [100, 200, 300, 400, 500, 600, 700, 800, 1000, 1200];
const root = path.resolve(import.meta.dirname, "..");

async function rawTps(): Promise<number> {
  const stack = await startBenchStack("ass_bench_raw");
  await stack.stopRelay();
  await createRawTables(stack.pool);
  const tps = await rawWriteThroughput(stack.pool, { clients: 10, seconds: 10 });
  await stack.stop();
  return round(tps, 0);
}

const results: Record<string, unknown> = { date: new Date().toISOString(), machine: machine() };
const rows: string[][] = [];
log("raw two-insert baseline (before)");
const rawBefore = await rawTps();
for (const variant of variants.filter((v) => !picked || picked.includes(v.name))) {
  log(`variant ${variant.name}: ${variant.what}`);
  const stack = await startBenchStack("ass_bench_wp", variant.options);
  if (variant.stopped?.includes("relay")) await stack.stopRelay();
  if (variant.stopped?.includes("notifier")) await stack.stopNotifier();
  const quiet = await load({ baseUrls: stack.baseUrls, baseUrl: stack.baseUrl, rate: 15, durationSec: 20, kind: "create", connections: 16 });
  const capacity: Array<{ rate: number; p95: number; errors: number }> = [];
  let held = 0;
  for (const rate of steps) {
    const step = await load({ baseUrls: stack.baseUrls, baseUrl: stack.baseUrl, rate, durationSec: 8, kind: "create", connections: 128 });
    const errors = step.sent - (step.statuses["201"] ?? 0);
    capacity.push({ rate, p95: step.latency.p95, errors });
    log(`  ${rate}/s: p95 ${step.latency.p95} ms, errors ${errors}`);
    if (step.latency.p95 > 50 || errors > 0) break;
    held = rate;
  }
  await stack.stop();
  results[variant.name] = { what: variant.what, writeAt15: quiet.latency, capacity, held };
  rows.push([variant.name, `${quiet.latency.p50} / ${quiet.latency.p95} ms`, `${held} /s`, capacity.map((c) => `${c.rate}:${c.p95}`).join(" ")]);
}
log("raw two-insert baseline (after)");
const rawAfter = await rawTps();
results.raw = { before: rawBefore, after: rawAfter };
console.log(`raw two-insert tx/s, 10 clients: before ${rawBefore}, after ${rawAfter}`);
console.log("| variant | write @15/s p50 / p95 | held (p95 ≤ 50 ms) | steps (rate:p95 ms) |\n|---|---|---|---|");
for (const r of rows) console.log(`| ${r.join(" | ")} |`);
mkdirSync(path.join(root, "bench/results"), { recursive: true });
const file = path.join(root, "bench/results", `write-path-${resultStamp()}.json`);
writeFileSync(file, JSON.stringify(results, null, 2));
log(`results written to ${path.relative(root, file)}`);
