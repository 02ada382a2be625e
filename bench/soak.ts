/**
 * `npm run soak`: a mixed load at 50 requests/s for 10 minutes (SOAK_SECONDS
 * to change it) against the three processes: creates, alerts reads, report
 * views and relay messages. It samples RSS and event-loop delay of every
 * process from its /metrics at the start and the end, and counts errors:
 * non-2xx answers (429s from the per-report relay cap included as errors
 * only if unexpected) and error-level log lines.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { load } from "./load.js";
import { log, machine, startBenchStack } from "./stack.js";
import { round } from "./stats.js";

const seconds = Number(process.env.SOAK_SECONDS ?? 600);
const root = path.resolve(import.meta.dirname, "..");

const stack = await startBenchStack("ass_soak");
const { rows } = await stack.pool.query<{ id: string }>(
  `insert into safety_lost_report (reporter_id, species, animal_name, last_seen_at, location, coarse_location)
   select 'soak-owner-' || n, 'cat', 'Soak ' || n, now(), st_makepoint(5 + n / 1000.0, 45)::geography, st_makepoint(5 + n / 1000.0, 45)::geography
   from generate_series(1, 1000) n returning id`,
);
const lostReportIds = rows.map((r) => r.id);

interface Sample {
  rssMiB: number;
  heapUsedMiB: number;
  eventLoopP99Ms: number;
}

async function sample(port: number): Promise<Sample> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const value = (name: string) => Number(text.split("\n").find((l) => l.startsWith(name))?.split(" ").at(-1) ?? NaN);
  return {
    rssMiB: round(value("process_resident_memory_bytes") / 2 ** 20, 1),
    heapUsedMiB: round(value("nodejs_heap_size_used_bytes") / 2 ** 20, 1),
    eventLoopP99Ms: round(value("nodejs_eventloop_lag_p99_seconds") * 1000, 2),
  };
}

async function sampleAll(): Promise<Record<string, Sample>> {
  return {
    api: await sample(stack.ports.api),
    relay: await sample(stack.ports.relay),
    notifier: await sample(stack.ports.notifier),
  };
}

log(`soak: 50 rps mixed for ${seconds} s`);
// Warm up for a few seconds so start figures are not the cold start's.
await load({ baseUrl: stack.baseUrl, rate: 20, durationSec: 5, kind: "alerts", connections: 8 });
const start = await sampleAll();
const mid: Array<Record<string, Sample>> = [];
const sampler = setInterval(() => void sampleAll().then((s) => mid.push(s)), 60_000);
const results = await Promise.all([
  load({ baseUrl: stack.baseUrl, rate: 10, durationSec: seconds, kind: "create", connections: 16 }),
  load({ baseUrl: stack.baseUrl, rate: 20, durationSec: seconds, kind: "alerts", connections: 16 }),
  load({ baseUrl: stack.baseUrl, rate: 10, durationSec: seconds, kind: "view", connections: 16, lostReportIds }),
  load({ baseUrl: stack.baseUrl, rate: 10, durationSec: seconds, kind: "relay-message", connections: 16, lostReportIds }),
]);
clearInterval(sampler);
await new Promise((r) => setTimeout(r, 3_000));
const end = await sampleAll();

const kinds = ["create", "alerts", "view", "relay-message"];
const expected: Record<string, number> = { create: 201, alerts: 200, view: 200, "relay-message": 202 };
const traffic = results.map((r, i) => {
  const ok = r.statuses[String(expected[kinds[i]!])] ?? 0;
  return { kind: kinds[i]!, sent: r.sent, ok, errors: r.sent - ok, p99Ms: r.latency.p99, statuses: r.statuses };
});
const errorLogs = [stack.api, stack.relay, stack.notifier].reduce(
  (n, p) => n + p.lines.filter((l) => typeof l.level === "number" && l.level >= 50).length,
  0,
);
// Heap after the run against heap at the start: RSS alone rises and falls with the allocator.
const leak = Object.entries(end).filter(([name, s]) => s.heapUsedMiB > start[name]!.heapUsedMiB * 1.5 + 20).map(([name]) => name);

console.log("| process | RSS start → end (MiB) | heap used start → end (MiB) | event-loop p99 start → end (ms) |");
console.log("|---|---|---|---|");
for (const name of Object.keys(start)) {
  const [a, b] = [start[name]!, end[name]!];
  console.log(`| ${name} | ${a.rssMiB} → ${b.rssMiB} | ${a.heapUsedMiB} → ${b.heapUsedMiB} | ${a.eventLoopP99Ms} → ${b.eventLoopP99Ms} |`);
}
console.log("\n| traffic | sent | ok | errors | p99 (ms) |\n|---|---|---|---|---|");
for (const t of traffic) console.log(`| ${t.kind} | ${t.sent} | ${t.ok} | ${t.errors} | ${t.p99Ms} |`);
const totalErrors = traffic.reduce((n, t) => n + t.errors, 0) + errorLogs;
console.log(`\nerror-level log lines: ${errorLogs}; verdict: ${leak.length === 0 && totalErrors === 0 ? "no leak, no error" : `leak suspected in ${leak.join(", ") || "none"}, ${totalErrors} errors`}`);

mkdirSync(path.join(root, "bench/results"), { recursive: true });
writeFileSync(
  path.join(root, "bench/results", `soak-${new Date().toISOString().slice(0, 10)}.json`),
  JSON.stringify({ date: new Date().toISOString(), machine: machine(), seconds, start, mid, end, traffic, errorLogs, leak }, null, 2),
);
await stack.stop();
process.exit(leak.length === 0 && totalErrors === 0 ? 0 : 1);
