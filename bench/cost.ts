/**
 * `npm run bench:cost`: what one create costs in CPU, process by process,
 * beside what the raw two-insert transaction costs Postgres. CPU time, unlike
 * latency, barely moves when other work shares the two cores, so this is the
 * figure to compare across runs on a busy machine. Reads utime + stime from
 * /proc for each of our processes and for Postgres (below); nats-server is
 * left out.
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

function cpuMs(pid: number | undefined): number {
  if (!pid) return 0;
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
    return (Number(fields[11]) + Number(fields[12])) * TICK_MS;
  } catch {
    return 0;
  }
}

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

async function snapshot() {
  const pg = postgresPids().reduce((sum, pid) => sum + cpuMs(pid), 0);
  return {
    api: cpuMs(stack.api.child.pid),
    relay: cpuMs(stack.relay.child.pid),
    notifier: cpuMs(stack.notifier.child.pid),
    postgres: pg,
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
const before = await snapshot();
const result = await load({ baseUrl: stack.baseUrl, rate: 150, durationSec: creates / 150, kind: "create", connections: 64 });
const settled = async () =>
  (await stack.pool.query(`select (select count(*) from outbox_event where published_at is null) + (select count(*) from graphile_worker.jobs where run_at <= now()) as n`)).rows[0].n === "0";
for (let i = 0; i < 600 && !(await settled()); i++) await new Promise((r) => setTimeout(r, 100));
const api = perEvent(before, await snapshot(), result.statuses["201"] ?? 1);

const out = { date: new Date().toISOString(), machine: machine(), rawTps: round(rawTps, 0), rawPerTx: raw, perCreate: api, creates: result.statuses };
console.log(JSON.stringify(out, null, 2));
console.log(
  `CPU ms per create: API ${api.api}, relay ${api.relay}, notifier ${api.notifier}, Postgres ${api.postgres}; ` +
    `raw two-insert transaction: Postgres ${raw.postgres} (client excluded)`,
);
await stack.stop();
if (profileDir) summariseProfiles(profileDir, path.resolve(import.meta.dirname, ".."));
