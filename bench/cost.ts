/**
 * `npm run bench:cost`: what one create costs in CPU, process by process,
 * beside what the raw two-insert transaction costs Postgres. CPU time, unlike
 * latency, barely moves when other work shares the two cores, so this is the
 * figure to compare across runs on a busy machine. Reads utime + stime from
 * /proc for each of our processes, the bench's own nats-server, and Postgres
 * (below, split by the pool that spent it), and minor page faults beside
 * them. Until session 24 the settle wait below never saw its count as 0 (pg
 * returns count(*) as a number here, lib/db.ts), so every reading included a
 * minute of the idle stack's CPU, and nats-server was left out.
 */
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { createRawTables, rawWriteThroughput } from "./baselines.js";
import { load } from "./load.js";
import { summariseProfiles } from "./profile.js";
import { log, machine, startBenchStack } from "./stack.js";
import { round } from "./stats.js";

const TICK_MS = 10; // USER_HZ is 100 on Linux
const creates = Number(process.env.COST_CREATES ?? 3000);

/**
 * A process's CPU time (utime + stime) and minor page faults, from /proc;
 * with `reaped`, those of its children it has waited for too (cutime,
 * cstime, cminflt), so a Postgres backend that exits mid-run keeps counting
 * through the postmaster that reaped it.
 */
function usage(pid: number | undefined, reaped = false): { cpuMs: number; faults: number } {
  if (!pid) return { cpuMs: 0, faults: 0 };
  try {
    const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ").map(Number);
    const ticks = f[11]! + f[12]! + (reaped ? f[13]! + f[14]! : 0);
    return { cpuMs: ticks * TICK_MS, faults: f[7]! + (reaped ? f[8]! : 0) };
  } catch {
    return { cpuMs: 0, faults: 0 };
  }
}
const cpuMs = (pid: number | undefined) => usage(pid).cpuMs;
const faults = (pid: number | undefined) => usage(pid).faults;

// COST_PROFILE=<dir>: also write each process's CPU profile there, with a top-20 summary (bench/profile.ts).
const profileDir = process.env.COST_PROFILE;
const stack = await startBenchStack("ass_bench_cost", { profileDir });
/**
 * Every process of the postgres user: backends come and go with the pools'
 * idle timeouts (a reading over pg_stat_activity's pids lost the CPU of those
 * that exited), and the WAL writer's and checkpointer's work is part of a
 * write's cost. Another database's work on the same server counts too, so
 * run this on an otherwise idle Postgres.
 */
function postgresPids(): number[] {
  return readdirSync("/proc")
    .filter((d) => /^\d+$/.test(d))
    .filter((d) => {
      try {
        return statSync(`/proc/${d}`).uid === postgresUid;
      } catch {
        return false;
      }
    })
    .map(Number);
}
const postgresUid = Number(execFileSync("id", ["-u", "postgres"]).toString().trim());

/** Each live Postgres process's CPU, by pid, with what it is: its pool's application_name, or its backend type. */
async function postgresByPid(): Promise<Map<number, { label: string; cpuMs: number }>> {
  const { rows } = await stack.pool.query<{ pid: number; label: string }>(
    `select pid, coalesce(nullif(application_name, ''), backend_type) as label from pg_stat_activity`,
  );
  return new Map(rows.map((r) => [r.pid, { label: r.label, cpuMs: cpuMs(r.pid) }]));
}

/**
 * Postgres's CPU between two readings by what spent it, over the processes
 * alive at both; `churn` is the rest: backends that started or exited
 * between them (pool connections opened and closed), autovacuum workers.
 */
function postgresSplit(a: Map<number, { label: string; cpuMs: number }>, b: Map<number, { label: string; cpuMs: number }>, total: number) {
  const split: Record<string, number> = {};
  let kept = 0;
  for (const [pid, after] of b) {
    const before = a.get(pid);
    if (!before) continue;
    split[after.label] = (split[after.label] ?? 0) + after.cpuMs - before.cpuMs;
    kept += after.cpuMs - before.cpuMs;
  }
  return { ...split, churn: total - kept };
}

async function snapshot() {
  const pg = postgresPids().map((pid) => usage(pid, true));
  return {
    api: cpuMs(stack.api.child.pid),
    relay: cpuMs(stack.relay.child.pid),
    notifier: cpuMs(stack.notifier.child.pid),
    postgres: pg.reduce((sum, u) => sum + u.cpuMs, 0),
    nats: cpuMs(stack.natsPid),
    // Minor page faults: on the PVM guests these VMs are, each costs about 15 µs (bench/README.md, session 24).
    apiFaults: faults(stack.api.child.pid),
    relayFaults: faults(stack.relay.child.pid),
    notifierFaults: faults(stack.notifier.child.pid),
    postgresFaults: pg.reduce((sum, u) => sum + u.faults, 0),
    natsFaults: faults(stack.natsPid),
  };
}
type Snapshot = Awaited<ReturnType<typeof snapshot>>;
const perEvent = (a: Snapshot, b: Snapshot, n: number) =>
  Object.fromEntries(Object.keys(a).map((k) => [k, round((b[k as keyof Snapshot] - a[k as keyof Snapshot]) / n, 3)])) as Snapshot;

log("raw: two-insert transactions on trigger-less copies, relay stopped");
await stack.stopRelay();
await createRawTables(stack.pool);
await rawWriteThroughput(stack.pool, { clients: 10, seconds: 2 });
const rawBefore = await snapshot();
const rawTps = await rawWriteThroughput(stack.pool, { clients: 10, seconds: 6 });
const raw = perEvent(rawBefore, await snapshot(), Math.round(rawTps * 6));
await stack.restartRelay();

log(`API: ${creates} creates at 150/s, then until the outbox and the job queue are empty`);
const settled = async () =>
  Number((await stack.pool.query(`select (select count(*) from outbox_event where published_at is null) + (select count(*) from graphile_worker.jobs where run_at <= now()) as n`)).rows[0].n) === 0;
const settle = async () => {
  const start = performance.now();
  for (let i = 0; i < 600 && !(await settled()); i++) await new Promise((r) => setTimeout(r, 100));
  log(`settled in ${round(performance.now() - start, 0)} ms`);
};
// Warm-up at the same rate, so the pools' connections are open before the first reading: a backend born
// mid-run would be counted as churn, not as the API's.
await load({ baseUrl: stack.baseUrl, rate: 150, durationSec: 2, kind: "create", connections: 64 });
await settle();
const [before, pgBefore] = [await snapshot(), await postgresByPid()];
const result = await load({ baseUrl: stack.baseUrl, rate: 150, durationSec: creates / 150, kind: "create", connections: 64 });
await settle();
const [after, pgAfter] = [await snapshot(), await postgresByPid()];
const created = result.statuses["201"] ?? 1;
const api = perEvent(before, after, created);
const postgresPerCreate = Object.fromEntries(
  Object.entries(postgresSplit(pgBefore, pgAfter, after.postgres - before.postgres)).map(([k, ms]) => [k, round(ms / created, 3)]),
);

const out = { date: new Date().toISOString(), machine: machine(), rawTps: round(rawTps, 0), rawPerTx: raw, perCreate: api, postgresPerCreate, creates: result.statuses };
console.log(JSON.stringify(out, null, 2));
console.log(
  `CPU ms per create: API ${api.api}, relay ${api.relay}, notifier ${api.notifier}, Postgres ${api.postgres}, nats-server ${api.nats}; ` +
    `raw two-insert transaction: Postgres ${raw.postgres} (client excluded)`,
);
console.log(
  `minor page faults per create: API ${api.apiFaults}, relay ${api.relayFaults}, notifier ${api.notifierFaults}, Postgres ${api.postgresFaults}, nats-server ${api.natsFaults}; ` +
    `raw two-insert transaction: Postgres ${raw.postgresFaults}`,
);
console.log(`Postgres CPU ms per create, by what spent it: ${JSON.stringify(postgresPerCreate)}`);
await stack.stop();
if (profileDir) summariseProfiles(profileDir, path.resolve(import.meta.dirname, ".."));
