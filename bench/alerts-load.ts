import os from "node:os";
import { setTimeout as sleep } from "node:timers/promises";
import { ALERTS_FANOUT_TASK } from "../jobs/fanout/task.js";
import { DELIVERY_TASKS } from "../jobs/delivery/task.js";
import { runDigest } from "../jobs/scheduled/alerts-digest.js";
import { subscriberLikePoints, type LatLon } from "./alerts-seed.js";
import { postgresBackends, withCpu } from "./cpu.js";
import { load, runId, type LoadResult } from "./load.js";
import { log, type BenchStack } from "./stack.js";
import { percentile, round, type Summary } from "./stats.js";

/**
 * The load item of the alert bench: lost reports offered at 10/s for 30 s
 * through the API by the open-loop generator (bench/loadgen.ts), at points
 * that follow the subscribers (1 in 5 in the dense city), first before any
 * subscription exists (the quiet figure), then with them all seeded, while
 * their fan-outs run. Measured: the writes' latency, and whether the fan-out
 * keeps up (per report, create → fan-out finished and → last notification
 * row; the backlog when the load stops; the time to drain it after).
 */

export const LOAD = { rate: 10, seconds: 30 };
const POINTS = subscriberLikePoints(LOAD.rate * LOAD.seconds);
/** Far from every subscriber (the South Atlantic): writes that start no fan-out. */
const NOWHERE: LatLon[] = Array.from({ length: 50 }, (_, i) => ({ lat: -40 + i * 0.1, lon: -30 }));

export interface WriteFigures extends Summary {
  statuses: Record<string, number>;
  late: number;
  loadAverage: number[];
}

const loadAverage = () => os.loadavg().map((l) => round(l, 2));

function offer(stack: BenchStack, name: string, points: LatLon[], seconds = LOAD.seconds): Promise<LoadResult> {
  return load({ baseUrl: stack.baseUrl, rate: LOAD.rate, durationSec: seconds, kind: "create", connections: 16, points, runId: `${runId}-${name}` });
}

const figures = (result: LoadResult): WriteFigures => ({ ...result.latency, statuses: result.statuses, late: result.late, loadAverage: loadAverage() });

/** Warms the API's create path and a generator (not counted), then offers the load quiet: before seeding, so no fan-out has anyone to reach. */
export async function quietWrites(stack: BenchStack): Promise<WriteFigures> {
  await offer(stack, "warm", NOWHERE, 10);
  const quiet = figures(await offer(stack, "quiet", POINTS));
  log(`writes, quiet (no subscriptions): ${JSON.stringify(quiet)}`);
  return quiet;
}

/** The same rate with everything seeded, far from every subscriber: what the grown database alone costs the writes. */
export async function seededWritesNoFanout(stack: BenchStack): Promise<WriteFigures> {
  const result = figures(await offer(stack, "nowhere", NOWHERE));
  log(`writes, seeded, starting no fan-out: ${JSON.stringify(result)}`);
  return result;
}

interface Backlog {
  atSecond: number;
  /** Reports of the load whose fan-out has not started (event on its way, or its start job waiting). */
  notStarted: number;
  fanoutsRunning: number;
  fanoutJobs: number;
  /** Recipients claimed by running fan-outs and not yet decided. */
  pendingRecipients: number;
  deliveryJobs: number;
}

async function backlog(stack: BenchStack, reporters: string, since: number): Promise<Backlog> {
  const { rows } = await stack.pool.query<Omit<Backlog, "atSecond">>(
    `select
       (select count(*)::int from safety_lost_report r
        where r.reporter_id like $1 and not exists (select 1 from alert_fanout f where f.report_id = r.id)) as "notStarted",
       (select count(*)::int from alert_fanout where status = 'running') as "fanoutsRunning",
       (select coalesce(sum(recipients - notified - deferred - skipped), 0)::int from alert_fanout where status = 'running') as "pendingRecipients",
       (select count(*)::int from graphile_worker.jobs where task_identifier = $2) as "fanoutJobs",
       (select count(*)::int from graphile_worker.jobs where task_identifier = $3) as "deliveryJobs"`,
    [reporters, ALERTS_FANOUT_TASK, DELIVERY_TASKS.email.one],
  );
  return { atSecond: round((performance.now() - since) / 1000, 1), ...rows[0]! };
}

const spread = (ms: number[]) => ({
  count: ms.length,
  p50: round(percentile(ms, 50), 0),
  p95: round(percentile(ms, 95), 0),
  max: ms.length ? round(Math.max(...ms), 0) : null,
});

/** Per report of the load: create → fan-out row (the event's way), → finished, → its last nearby_lost row; city reports (≥ 1,000 recipients) apart. */
async function perReport(stack: BenchStack, reporters: string) {
  const { rows } = await stack.pool.query<{ recipients: number; notified: number; deferred: number; startMs: number; finishedMs: number; lastRowMs: number | null }>(
    `select f.recipients, f.notified, f.deferred,
       extract(epoch from f.created_at - r.created_at) * 1000 as "startMs",
       extract(epoch from f.finished_at - r.created_at) * 1000 as "finishedMs",
       extract(epoch from (select max(n.created_at) from notification n where n.source_event_id = f.event_id) - r.created_at) * 1000 as "lastRowMs"
     from safety_lost_report r join alert_fanout f on f.report_id = r.id
     where r.reporter_id like $1`,
    [reporters],
  );
  const group = (name: string, list: typeof rows) => ({
    name,
    reports: list.length,
    recipients: list.reduce((n, r) => n + r.recipients, 0),
    notified: list.reduce((n, r) => n + r.notified, 0),
    deferred: list.reduce((n, r) => n + r.deferred, 0),
    createToStartMs: spread(list.map((r) => r.startMs)),
    createToFinishedMs: spread(list.map((r) => r.finishedMs)),
    createToLastNotificationMs: spread(list.flatMap((r) => (r.lastRowMs === null ? [] : [r.lastRowMs]))),
  });
  return [group("city (≥ 1,000 recipients)", rows.filter((r) => r.recipients >= 1000)), group("elsewhere", rows.filter((r) => r.recipients < 1000))];
}

/** The load with every subscription seeded: writes, fan-out progress each 2 s, the backlog at the end, the drain after. */
export async function writesUnderFanout(stack: BenchStack, database: string, drainLimitSeconds = 900) {
  const name = "fanout";
  const reporters = `bench-${runId}-${name}-%`;
  const started = performance.now();
  const series: Backlog[] = [];
  const sampler = setInterval(() => void backlog(stack, reporters, started).then((b) => series.push(b)), 2_000);
  const groups = () => ({ api: [stack.api.child.pid!], notifier: [stack.notifier.child.pid!], relay: [stack.relay.child.pid!], postgres: postgresBackends(database) });
  const { result, cpu } = await withCpu(groups, () => offer(stack, name, POINTS));
  const writes = figures(result);
  const atEnd = await backlog(stack, reporters, started);
  log(`writes during fan-out: ${JSON.stringify(writes)}; backlog at the end: ${JSON.stringify(atEnd)}; cpu ${JSON.stringify(cpu)}`);

  const loadEnded = performance.now();
  let drainSeconds: number | null = null;
  while ((performance.now() - loadEnded) / 1000 < drainLimitSeconds) {
    const now = await backlog(stack, reporters, started);
    if (now.notStarted === 0 && now.fanoutsRunning === 0 && now.fanoutJobs === 0) {
      drainSeconds = round((performance.now() - loadEnded) / 1000, 1);
      break;
    }
    await sleep(500);
  }
  clearInterval(sampler);
  log(`fan-out drained ${drainSeconds === null ? `not within ${drainLimitSeconds} s` : `${drainSeconds} s after the load stopped`}`);
  const reports = await perReport(stack, reporters);
  for (const r of reports) log(`  ${JSON.stringify(r)}`);
  const recipients = reports.reduce((n, r) => n + r.recipients, 0);
  // Recipients decided (notified or deferred) per second, from the load's start until drained.
  const recipientsPerSecond = drainSeconds === null ? null : round(recipients / (LOAD.seconds + drainSeconds), 0);
  log(`fan-out: ${recipients} recipients, ${recipientsPerSecond} a second until drained`);
  return { writes, cpuDuringLoad: cpu, backlogAtEnd: atEnd, drainSeconds, recipientsPerSecond, reports, series, loadAverageAfterDrain: loadAverage() };
}

/**
 * The next morning's digest of the load's deferrals, as the notifier's cron
 * runs it (jobs/scheduled/alerts-digest.ts): it first writes the deferred ledger
 * rows the fan-outs left out, then one digest per subscriber. Its time, and
 * the ledger after it.
 */
export async function morningDigest(stack: BenchStack) {
  const { rows } = await stack.pool.query<{ day: string }>(`select to_char((now() at time zone 'utc')::date + 1, 'YYYY-MM-DD') as day`);
  const started = performance.now();
  const digest = await runDigest(stack.pool, rows[0]!.day);
  const seconds = round((performance.now() - started) / 1000, 1);
  const { rows: ledger } = await stack.pool.query<{ status: string; n: number }>(`select status, count(*)::int as n from alert_ledger group by 1 order by 1`);
  log(`next morning's digest: ${JSON.stringify(digest)} in ${seconds} s; ledger after it: ${JSON.stringify(ledger)}`);
  return { seconds, ...digest, ledger };
}
