import { setTimeout as sleep } from "node:timers/promises";
import type { TaskList } from "graphile-worker";
import pg from "pg";
import { pino } from "pino";
import { createPool, type Pool } from "../lib/db.js";
import { JOB_FAMILIES, type JobFamily } from "../lib/job-families.js";
import { startWorker, type SupervisedWorker } from "../lib/worker.js";
import { familyTasks, SCHEDULED_CRONTAB, startFamilies, type FamilyDeps } from "../jobs/families.js";
import { createObjectStorage } from "../lib/storage/index.js";
import { runScenarioScript, type Scenario, type ScenarioRow } from "./scenario-script.js";

/**
 * What the job families cost when nothing is queued: the notifier's seven
 * runners, each with a pool of its own, against the three runners on one
 * pool it had before (main: deliveries, matching and crons; fan-out; photos),
 * in the same run. Measured in this process (its CPU while idle) and in
 * Postgres (the connections each layout holds, and the statements a second
 * its polling sends).
 */

const logger = pino({ level: "silent" });

async function statements(admin: pg.Client, database: string): Promise<number> {
  const { rows } = await admin.query<{ n: string }>(`select xact_commit + xact_rollback as n from pg_stat_database where datname = $1`, [database]);
  return Number(rows[0]!.n);
}

async function connections(admin: pg.Client, prefix: string): Promise<number> {
  const { rows } = await admin.query<{ n: number }>(`select count(*)::int as n from pg_stat_activity where application_name like $1`, [`${prefix}%`]);
  return rows[0]!.n;
}

interface IdleCost {
  cpuMsPerSecond: number;
  connections: number;
  transactionsPerSecond: number;
}

async function measureIdle(admin: pg.Client, database: string, prefix: string, seconds: number): Promise<IdleCost> {
  // Let the runners settle: their first fetches and the cron's first tick.
  await sleep(3_000);
  const cpu0 = process.cpuUsage();
  const tx0 = await statements(admin, database);
  await sleep(seconds * 1000);
  const cpu = process.cpuUsage(cpu0);
  const tx = (await statements(admin, database)) - tx0;
  return {
    cpuMsPerSecond: (cpu.user + cpu.system) / 1000 / seconds,
    connections: await connections(admin, prefix),
    transactionsPerSecond: tx / seconds,
  };
}

export const familiesScenario: Scenario = async (stack, { quick }) => {
  const seconds = quick ? 10 : 30;
  const database = new URL(stack.dbUrl).pathname.slice(1);
  const admin = new pg.Client({ connectionString: stack.dbUrl });
  await admin.connect();
  const storage = createObjectStorage({ PHOTO_STORAGE_DIR: ".data/bench-families-photos" });
  const pools: Pool[] = [];
  const pool = (name: string, max: number) => {
    const p = createPool({ connectionString: stack.dbUrl, max, applicationName: name, logger });
    pools.push(p);
    return p;
  };
  const deps = (p: Pool): FamilyDeps => ({ pool: p, logger, deliverers: {}, storage, reportTtlDays: 30, outboxRetentionDays: 7 });
  // The bench stack's own notifier runs its families too: stop it, so only the layouts measured here poll.
  await stack.stopNotifier();
  try {
    // Before: three runners on one pool of 10 (the main runner with 5 slots and a local queue of 20).
    const shared = pool("bench-three", 10);
    const d = deps(shared);
    const main: TaskList = { ...familyTasks("delivery-email", d), ...familyTasks("delivery-push", d), ...familyTasks("delivery-sms", d), ...familyTasks("matching", d), ...familyTasks("scheduled", d) };
    const three: SupervisedWorker[] = [
      await startWorker({ pool: shared, logger, taskList: main, crontab: SCHEDULED_CRONTAB, concurrency: 5, localQueueSize: 20 }),
      await startWorker({ pool: shared, logger, taskList: familyTasks("fanout", d), concurrency: 1 }),
      await startWorker({ pool: shared, logger, taskList: { ...familyTasks("photos", d), ...familyTasks("partner-photos", d) }, concurrency: 2 }),
    ];
    const before = await measureIdle(admin, database, "bench-three", seconds);
    await Promise.all(three.map((r) => r.stop()));
    await shared.end();

    // After: seven families, each with its own runner and pool, at the notifier's default slots.
    const slots: Record<JobFamily, number> = { "delivery-email": 32, "delivery-push": 32, "delivery-sms": 32, fanout: 1, matching: 2, photos: 2, "partner-photos": 4, scheduled: 2 };
    const families = await startFamilies(deps(pool("bench-unused", 1)), JOB_FAMILIES, (f) => slots[f], (f, max) => pool(`bench-family-${f}`, max));
    const after = await measureIdle(admin, database, "bench-family-", seconds);
    await families.stop();

    const rows: ScenarioRow[] = [
      ["job families idle: notifier CPU", `${after.cpuMsPerSecond.toFixed(2)} ms/s`, `${before.cpuMsPerSecond.toFixed(2)} ms/s (three runners)`, "—", `${seconds} s idle, after 3 s to settle`],
      ["job families idle: Postgres connections", String(after.connections), `${before.connections} (three runners, one pool)`, "—", "pg_stat_activity by application_name, idle"],
      ["job families idle: Postgres transactions", `${after.transactionsPerSecond.toFixed(1)}/s`, `${before.transactionsPerSecond.toFixed(1)}/s (three runners)`, "—", "the runners' polls, pg_stat_database"],
    ];
    return { rows, results: { seconds, before, after } };
  } finally {
    await Promise.all(pools.map((p) => p.end().catch(() => undefined)));
    await admin.end();
    await storage.close();
    await stack.restartNotifier();
  }
};

await runScenarioScript(import.meta.url, "bench:families", "ass_bench_families", familiesScenario);
