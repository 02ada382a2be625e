/**
 * `npm run bench:cost`: what one create costs in CPU, process by process,
 * beside what the raw two-insert transaction costs Postgres. CPU time, unlike
 * latency, barely moves when other work shares the two cores, so this is the
 * figure to compare across runs on a busy machine. Reads utime + stime from
 * /proc for each of our processes, the bench's own nats-server, and Postgres
 * (below, split by the pool that spent it), and minor page faults beside
 * them. The "after" reading is taken as soon as the outbox and the job queue
 * are empty (waitUntilSettled), so it carries none of the idle stack's CPU,
 * and the bench's own nats-server is counted with the rest.
 */
import { execFileSync } from "node:child_process";
import { readdirSync, statSync } from "node:fs";
import path from "node:path";
import { createRawTables, rawWriteThroughput } from "./baselines.js";
import { procUsage } from "./cpu.js";
import { load } from "./load.js";
import { summariseProfiles } from "./profile.js";
import { log, machine, startBenchStack, waitUntilSettled } from "./stack.js";
import { round } from "./stats.js";

const creates = Number(process.env.COST_CREATES ?? 3000);
// COST_RATE: creates per second (default 150). At higher rates the relay and the notifier batch more, so a create costs less.
const rate = Number(process.env.COST_RATE ?? 150);


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
  return new Map(rows.map((r) => [r.pid, { label: r.label, cpuMs: procUsage(r.pid).cpuMs }]));
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
  const pg = postgresPids().map((pid) => procUsage(pid, true));
  const api = procUsage(stack.api.child.pid);
  const relay = procUsage(stack.relay.child.pid);
  const notifier = procUsage(stack.notifier.child.pid);
  const nats = procUsage(stack.natsPid);
  return {
    api: api.cpuMs,
    relay: relay.cpuMs,
    notifier: notifier.cpuMs,
    postgres: pg.reduce((sum, u) => sum + u.cpuMs, 0),
    nats: nats.cpuMs,
    // Minor page faults: on the PVM guests these VMs are, each costs about 15 µs (a first-touch probe in C on such a VM).
    apiFaults: api.faults,
    relayFaults: relay.faults,
    notifierFaults: notifier.faults,
    postgresFaults: pg.reduce((sum, u) => sum + u.faults, 0),
    natsFaults: nats.faults,
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

log(`API: ${creates} creates at ${rate}/s, then until the outbox and the job queue are empty`);
const settle = async () => log(`settled in ${round(await waitUntilSettled(stack.pool), 0)} ms`);
// Warm-up at the same rate, so the pools' connections are open before the first reading: a backend born
// mid-run would be counted as churn, not as the API's.
await load({ baseUrl: stack.baseUrl, rate, durationSec: 2, kind: "create", connections: 64 });
await settle();
const [before, pgBefore] = [await snapshot(), await postgresByPid()];
const result = await load({ baseUrl: stack.baseUrl, rate, durationSec: creates / rate, kind: "create", connections: 64 });
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
