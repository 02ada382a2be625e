/**
 * `npm run bench:statements`: the statements (round trips) one create costs,
 * process by process, counted from Postgres's own log. The bench database is
 * created with `log_statement = all`; every executed statement is one line in
 * the server log, and pg_stat_activity, polled throughout, names the process
 * behind each backend pid. An idle window first gives the background rate
 * (heartbeats, worker polls), which is taken off the per-create figures.
 *
 * Needs read access to the server log (STATEMENTS_LOG, default Debian's
 * /var/log/postgresql/postgresql-15-main.log, with its default prefix
 * `%m [%p] %q%u@%d`).
 */
import { openSync, readSync, statSync, closeSync } from "node:fs";
import { load } from "./load.js";
import { log, startBenchStack, waitUntilSettled } from "./stack.js";
import { round } from "./stats.js";

const DATABASE = "ass_bench_statements";
const logPath = process.env.STATEMENTS_LOG ?? "/var/log/postgresql/postgresql-15-main.log";
const rate = Number(process.env.STATEMENTS_RATE ?? 20);
const seconds = Number(process.env.STATEMENTS_SECONDS ?? 20);
const idleSeconds = 10;

const stack = await startBenchStack(DATABASE, { databaseSettings: { log_statement: "all" } });
const processOf = new Map<number, string>();
const poll = setInterval(() => {
  stack.pool
    .query<{ pid: number; application_name: string }>(`select pid, application_name from pg_stat_activity where datname = $1`, [DATABASE])
    .then(({ rows }) => rows.forEach((r) => processOf.set(r.pid, r.application_name || "(unnamed)")))
    .catch(() => undefined);
}, 50);

function readFrom(offset: number): string {
  const size = statSync(logPath).size;
  const fd = openSync(logPath, "r");
  const buffer = Buffer.alloc(size - offset);
  readSync(fd, buffer, 0, buffer.length, offset);
  closeSync(fd);
  return buffer.toString("utf8");
}

const LINE = new RegExp(String.raw`^\S+ \S+ \S+ \[(\d+)\] \S+@${DATABASE} LOG:  (?:statement|execute [^:]*): (.*)$`);
type Census = Map<string, Map<string, number>>;

/** Statements per process, and per process per statement shape (whitespace collapsed, first 90 characters). */
function census(text: string, ownPids: Set<number>): Census {
  const byProcess: Census = new Map();
  for (const line of text.split("\n")) {
    const match = LINE.exec(line);
    if (!match) continue;
    const pid = Number(match[1]);
    if (ownPids.has(pid)) continue;
    const name = processOf.get(pid) ?? "(unknown)";
    const shape = match[2]!.replace(/\s+/g, " ").trim().slice(0, 90);
    const shapes = byProcess.get(name) ?? new Map<string, number>();
    shapes.set(shape, (shapes.get(shape) ?? 0) + 1);
    byProcess.set(name, shapes);
  }
  return byProcess;
}
const total = (shapes: Map<string, number> | undefined) => [...(shapes?.values() ?? [])].reduce((a, b) => a + b, 0);

// The bench's own pool (polls, settle checks) is not part of a create's cost.
const ownPids = new Set<number>();
const markOwn = async () => {
  const { rows } = await stack.pool.query<{ pid: number }>(`select pid from pg_stat_activity where datname = $1 and application_name = ''`, [DATABASE]);
  rows.forEach((r) => ownPids.add(r.pid));
};

log("warm-up: 100 creates");
await load({ baseUrl: stack.baseUrl, rate: 50, durationSec: 2, kind: "create", connections: 16 });
await new Promise((r) => setTimeout(r, 3000));
await markOwn();

log(`idle: ${idleSeconds} s`);
let offset = statSync(logPath).size;
await new Promise((r) => setTimeout(r, idleSeconds * 1000));
const idle = census(readFrom(offset), ownPids);

log(`load: ${rate}/s for ${seconds} s, then until the outbox and the job queue are empty`);
offset = statSync(logPath).size;
const started = Date.now();
const result = await load({ baseUrl: stack.baseUrl, rate, durationSec: seconds, kind: "create", connections: 16 });
await waitUntilSettled(stack.pool);
// Let the last jobs' completions land in the log.
await new Promise((r) => setTimeout(r, 1500));
await markOwn();
const windowSec = (Date.now() - started) / 1000;
const loaded = census(readFrom(offset), ownPids);
clearInterval(poll);
const creates = result.statuses["201"] ?? 0;

const processes = [...new Set([...loaded.keys(), ...idle.keys()])].sort();
const rows = processes.map((name) => {
  const background = (total(idle.get(name)) / idleSeconds) * windowSec;
  return {
    process: name,
    statementsPerCreate: round(total(loaded.get(name)) / creates, 2),
    netOfBackground: round((total(loaded.get(name)) - background) / creates, 2),
    idlePerSecond: round(total(idle.get(name)) / idleSeconds, 2),
  };
});
console.log(`\n${creates} creates at ${rate}/s; ${round(windowSec, 1)} s window\n`);
console.log("| process | statements per create | net of idle background | idle statements/s |\n|---|---:|---:|---:|");
for (const r of rows) console.log(`| ${r.process} | ${r.statementsPerCreate} | ${r.netOfBackground} | ${r.idlePerSecond} |`);
for (const name of processes) {
  const shapes = [...(loaded.get(name) ?? new Map()).entries()].sort((a, b) => b[1] - a[1]).slice(0, 20);
  console.log(`\n${name}: top statements per create`);
  for (const [shape, count] of shapes) console.log(`  ${round(count / creates, 2).toString().padStart(6)}  ${shape}`);
}
await stack.stop();
