/**
 * `npm run soak`: a mixed load at 50 requests/s for 10 minutes (SOAK_SECONDS
 * to change it) against the three processes: creates, alerts reads, report
 * views and relay messages. It samples RSS and event-loop delay of every
 * process from its /metrics at the start and the end, its live heap (after a
 * full collection, through the inspector) every minute, and counts errors:
 * non-2xx answers (429s from the per-report relay cap included as errors
 * only if unexpected) and error-level log lines, over the whole run and over
 * its first and last minute (errors that only start late point at a slow
 * leak or an exhausted resource). The report names the commit it measured
 * and ends with a PASS or FAIL verdict line; the exit status follows it.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { liveHeapMiB } from "./inspector.js";
import { load } from "./load.js";
import { log, machine, startBenchStack } from "./stack.js";
import { resultStamp, round } from "./stats.js";

const seconds = Number(process.env.SOAK_SECONDS ?? 600);
const root = path.resolve(import.meta.dirname, "..");
const MINUTE_MS = 60_000;

/** The commit under test, so a result file can be traced to the code it measured. */
function gitCommit(): string {
  try {
    return execFileSync("git", ["rev-parse", "HEAD"], { cwd: root, encoding: "utf8" }).trim();
  } catch {
    return "unknown (not a git checkout)";
  }
}
const commit = gitCommit();

const stack = await startBenchStack("ass_soak", { inspect: true });
const inspectPorts = stack.inspectPorts!;
const { rows } = await stack.pool.query<{ id: string }>(
  `insert into safety_lost_report (reporter_id, species, animal_name, last_seen_at, location, coarse_location, expires_at)
   select 'soak-owner-' || n, 'cat', 'Soak ' || n, now(), st_makepoint(5 + n / 1000.0, 45)::geography, st_makepoint(5 + n / 1000.0, 45)::geography,
     now() + interval '30 days'
   from generate_series(1, 1000) n returning id`,
);
const lostReportIds = rows.map((r) => r.id);

interface Sample {
  rssMiB: number;
  heapUsedMiB: number;
  /** Heap in use right after a full collection: what the process retains. */
  liveHeapMiB: number;
  eventLoopP99Ms: number;
}

async function sample(port: number, inspectPort: number): Promise<Sample> {
  const live = await liveHeapMiB(inspectPort);
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const value = (name: string) => Number(text.split("\n").find((l) => l.startsWith(name))?.split(" ").at(-1) ?? NaN);
  return {
    rssMiB: round(value("process_resident_memory_bytes") / 2 ** 20, 1),
    heapUsedMiB: round(value("nodejs_heap_size_used_bytes") / 2 ** 20, 1),
    liveHeapMiB: live,
    eventLoopP99Ms: round(value("nodejs_eventloop_lag_p99_seconds") * 1000, 2),
  };
}

async function sampleAll(): Promise<Record<string, Sample>> {
  return {
    api: await sample(stack.ports.apiMetrics, inspectPorts.api),
    relay: await sample(stack.ports.relay, inspectPorts.relay),
    notifier: await sample(stack.ports.notifier, inspectPorts.notifier),
  };
}

log(`soak: 50 rps mixed for ${seconds} s`);
// Warm up for a few seconds so start figures are not the cold start's.
await load({ baseUrl: stack.baseUrl, rate: 20, durationSec: 5, kind: "alerts", connections: 8 });
const start = await sampleAll();
const mid: Array<Record<string, Sample>> = [];
const sampler = setInterval(() => void sampleAll().then((s) => mid.push(s)), MINUTE_MS);
const loadStartedAt = Date.now();
const mixes = [
  { kind: "create", rate: 10 },
  { kind: "alerts", rate: 20 },
  { kind: "view", rate: 10, lostReportIds },
  { kind: "relay-message", rate: 10, lostReportIds },
];
const results = await Promise.all(mixes.map((mix) => load({ baseUrl: stack.baseUrl, durationSec: seconds, connections: 16, ...mix })));
clearInterval(sampler);
await new Promise((r) => setTimeout(r, 3_000));
const end = await sampleAll();

const expected: Record<string, number> = { create: 201, alerts: 200, view: 200, "relay-message": 202 };
const traffic = results.map((r, i) => {
  const { kind, rate } = mixes[i]!;
  const want = expected[kind];
  const ok = r.statuses[String(want)] ?? 0;
  const errorsIn = (statuses: number[]) => statuses.filter((s) => s !== want).length;
  // Request i of a load was due i / rate seconds after its start, so its index places it in time.
  const perMinute = rate * 60;
  return {
    kind,
    sent: r.sent,
    ok,
    errors: r.sent - ok,
    errorsFirstMinute: errorsIn(r.raw.statuses.slice(0, perMinute)),
    errorsLastMinute: errorsIn(r.raw.statuses.slice(Math.max(0, r.raw.statuses.length - perMinute))),
    p99Ms: r.latency.p99,
    statuses: r.statuses,
  };
});
const errorLines = [stack.api, stack.relay, stack.notifier].flatMap((p) =>
  p.lines.filter((l) => typeof l.level === "number" && l.level >= 50),
);
const errorLogs = errorLines.length;
// pino stamps each line with epoch milliseconds; the windows are the first and last 60 s of the load.
const loadEndedAt = loadStartedAt + seconds * 1000;
const errorLogsFirstMinute = errorLines.filter((l) => Number(l.time) < loadStartedAt + MINUTE_MS).length;
const errorLogsLastMinute = errorLines.filter((l) => Number(l.time) >= loadEndedAt - MINUTE_MS).length;
// Live heap at the end against live heap after the first minute, once caches, pools and
// prepared statements have filled: heap-used or RSS alone rise and fall with the collector.
const baseline = mid[0] ?? start;
const leak = Object.entries(end).filter(([name, s]) => s.liveHeapMiB > baseline[name]!.liveHeapMiB * 1.2 + 5).map(([name]) => name);

console.log("| process | RSS start → end (MiB) | live heap after GC: start, 1 min → end (MiB) | event-loop p99 start → end (ms) |");
console.log("|---|---|---|---|");
for (const name of Object.keys(start)) {
  const [a, m, b] = [start[name]!, baseline[name]!, end[name]!];
  console.log(`| ${name} | ${a.rssMiB} → ${b.rssMiB} | ${a.liveHeapMiB}, ${m.liveHeapMiB} → ${b.liveHeapMiB} | ${a.eventLoopP99Ms} → ${b.eventLoopP99Ms} |`);
}
console.log("\n| traffic | sent | ok | errors | errors first minute | errors last minute | p99 (ms) |\n|---|---|---|---|---|---|---|");
for (const t of traffic) {
  console.log(`| ${t.kind} | ${t.sent} | ${t.ok} | ${t.errors} | ${t.errorsFirstMinute} | ${t.errorsLastMinute} | ${t.p99Ms} |`);
}
const totalErrors = traffic.reduce((n, t) => n + t.errors, 0) + errorLogs;
const errorsFirstMinute = traffic.reduce((n, t) => n + t.errorsFirstMinute, 0) + errorLogsFirstMinute;
const errorsLastMinute = traffic.reduce((n, t) => n + t.errorsLastMinute, 0) + errorLogsLastMinute;
const passed = leak.length === 0 && totalErrors === 0;
console.log(`\nerror-level log lines: ${errorLogs} (first minute ${errorLogsFirstMinute}, last minute ${errorLogsLastMinute})`);
console.log(`errors (answers + log lines): ${totalErrors}; first minute ${errorsFirstMinute}, last minute ${errorsLastMinute}`);
console.log(`commit: ${commit}`);
// Thresholds: no process's live heap grows past 1.2 × its 1-minute figure + 5 MiB, and no error at all.
console.log(
  `verdict: ${passed ? "PASS" : "FAIL"} (heap growth: ${leak.length === 0 ? "none suspected" : `leak suspected in ${leak.join(", ")}`}; errors: ${totalErrors})`,
);

mkdirSync(path.join(root, "bench/results"), { recursive: true });
writeFileSync(
  path.join(root, "bench/results", `soak-${resultStamp()}.json`),
  JSON.stringify(
    {
      date: new Date().toISOString(),
      commit,
      machine: machine(),
      seconds,
      start,
      mid,
      end,
      traffic,
      errorLogs,
      errorLogsFirstMinute,
      errorLogsLastMinute,
      errorsFirstMinute,
      errorsLastMinute,
      leak,
      verdict: passed ? "PASS" : "FAIL",
    },
    null,
    2,
  ),
);
await stack.stop();
process.exit(passed ? 0 : 1);
