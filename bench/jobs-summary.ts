/**
 * The jobs summary scenario: GET /v1/admin/jobs/summary with 1,000,000 jobs
 * completed and deleted behind it (a bloated jobs table, as after a burst
 * that the workers drained) and 100,000 queued, beside the same run's raw
 * statement (the bare count by task of graphile_worker.jobs, on a pool).
 * bench/run.ts runs it as one of its scenarios; `npm run bench:jobs` runs it
 * alone on a stack of its own (`ass_bench_jobs`).
 *
 * The relay and the notifier are stopped while it runs, so that no worker
 * takes the queued jobs, and started again after; the jobs are deleted then.
 *
 * It measures twice: right after the delete, and after a vacuum of the jobs
 * table. The bench's Postgres runs with autovacuum off (bench/README.md); a
 * deployment's autovacuum takes up a table with 1,000,000 dead rows within
 * its naptime (a minute), so the vacuumed figure is the one the queue shows
 * for as long as the 100,000 wait, the first only for that minute. The
 * vacuum runs after the 100,000 are queued, so the table keeps its 165 MiB.
 * BENCH_JOBS_INDEX=1 adds, before anything is queued, the covering index
 * JOBS_SUMMARY_INDEX (bench/stack.ts) that the summary can read alone;
 * BENCH_JOBS_INDEX=compare makes it after the vacuumed measurement, measures
 * again, drops it and measures once more, so that the three stand in one run.
 *
 * The route keeps its counts for API_JOBS_SUMMARY_MAX_AGE_MS (2 s here, the
 * default) and shares them (api/admin/jobs/store.ts summaryReader), so its
 * GETs are measured twice: sequential, and paced at 10 a second for 20 s
 * (several operators' screens polling), which spans ten recounts. Beside
 * them, the count every request made before (jobsSummary on the pool).
 */
import { setTimeout as sleep } from "node:timers/promises";
import { jobsSummary } from "../api/admin/jobs/store.js";
import { runScenarioScript } from "./scenario-script.js";
import { JOBS_SUMMARY_INDEX, log, type BenchStack } from "./stack.js";
import { round, summarize, type Summary } from "./stats.js";

const targets = { summaryP95Ms: 50 };
const TASKS = ["notification__deliver", "match__subject", "alerts__fanout", "photo__process", "photo__delete_objects"];

type Row = [scenario: string, figure: string, baseline: string, target: string, note: string];

let clients = 0;
/** Each request from an address of its own: the per-IP limiter is not what this measures. */
const operator = () => ({
  "x-debug-actor": "jobs-bench",
  "x-debug-roles": "platform_admin",
  "x-forwarded-for": `10.96.${(++clients >> 8) & 255}.${clients & 255}`,
});

/** Inserts `n` due jobs spread over TASKS, in batches of 100,000 (a bench fixture: graphile-worker's own table, no add_jobs). */
async function insertJobs(stack: BenchStack, n: number, runAt: string): Promise<void> {
  for (let done = 0; done < n; done += 100_000) {
    await stack.pool.query(
      `insert into graphile_worker._private_jobs (task_id, payload, run_at, max_attempts)
       select t.id, json_build_object('notificationId', gen_random_uuid()), ${runAt}, 5
       from generate_series(1, $1::int) g
       join graphile_worker._private_tasks t on t.identifier = ($2::text[])[1 + g % array_length($2::text[], 1)]`,
      [Math.min(100_000, n - done), TASKS],
    );
  }
}

/** The summary with JOBS_SUMMARY_INDEX made on the table as it stands, then without it again. */
async function compareIndex(stack: BenchStack, n: number, count: () => Promise<void>): Promise<{ withIndex: Summary; dropped: Summary }> {
  log("jobs: the covering index made on the vacuumed table, the summary's count again, then the index dropped and once more");
  await stack.pool.query(JOBS_SUMMARY_INDEX);
  await timed(5, count);
  const withIndex = await timed(n, count);
  await stack.pool.query(`drop index graphile_worker.jobs_summary_bench_idx`);
  await timed(5, count);
  const dropped = await timed(n, count);
  return { withIndex, dropped };
}

async function timed(n: number, work: () => Promise<void>): Promise<Summary> {
  const samples: number[] = [];
  for (let i = 0; i < n; i++) {
    const started = performance.now();
    await work();
    samples.push(performance.now() - started);
  }
  return summarize(samples);
}

export async function jobsSummaryScenario(stack: BenchStack, { quick = false } = {}): Promise<{ rows: Row[]; results: Record<string, unknown> }> {
  const n = quick ? 40 : 200;
  const deleted = quick ? 100_000 : 1_000_000;
  const queued = 100_000;
  await stack.stopRelay();
  await stack.stopNotifier();
  const withIndex = process.env.BENCH_JOBS_INDEX === "1";
  try {
    // Already there when the stack was started with BENCH_JOBS_INDEX=1 (bench/stack.ts); `if not exists` makes this a no-op then.
    if (withIndex) await stack.pool.query(JOBS_SUMMARY_INDEX);
    await stack.pool.query(
      `insert into graphile_worker._private_tasks (identifier) select unnest($1::text[]) on conflict do nothing`,
      [TASKS],
    );
    log(`jobs: ${deleted} jobs queued, then completed (deleted)`);
    await insertJobs(stack, deleted, "now()");
    await stack.pool.query(`delete from graphile_worker._private_jobs`);
    log(`jobs: ${queued} jobs queued, due over the last 10 minutes`);
    await insertJobs(stack, queued, "now() - make_interval(secs => g % 600)");
    const tableNow = async () =>
      (
        await stack.pool.query<{ dead: number; live: number; bytes: number }>(
          `select n_dead_tup::int as dead, n_live_tup::int as live, pg_relation_size('graphile_worker._private_jobs')::float8 as bytes
           from pg_stat_user_tables where relid = 'graphile_worker._private_jobs'::regclass`,
        )
      ).rows;
    const table = await tableNow();

    const url = `${stack.baseUrl}/v1/admin/jobs/summary`;
    const asOfs = new Set<string>();
    let oldestMs = 0;
    const get = async () => {
      const res = await fetch(url, { headers: operator() });
      const body = (await res.json()) as { asOf: string; tasks: Array<{ queued: number }> };
      if (res.status !== 200) throw new Error(`summary: ${res.status}`);
      if (body.tasks.reduce((sum, t) => sum + t.queued, 0) !== queued) throw new Error("summary: wrong queued count");
      asOfs.add(body.asOf);
      oldestMs = Math.max(oldestMs, Date.now() - Date.parse(body.asOf));
    };
    // What every request did before the summary was kept: the same counts, on the pool, without HTTP.
    const count = async () => {
      const body = await jobsSummary(stack.pool);
      if (body.tasks.reduce((sum, t) => sum + t.queued, 0) !== queued) throw new Error("summary: wrong queued count");
    };
    /** `n` GETs, one every 100 ms (or as soon as the last answered), with how many counts they saw and the oldest. */
    const paced = async () => {
      asOfs.clear();
      oldestMs = 0;
      const samples: number[] = [];
      const start = performance.now();
      for (let i = 0; i < n; i++) {
        await sleep(Math.max(0, start + i * 100 - performance.now()));
        const began = performance.now();
        await get();
        samples.push(performance.now() - began);
      }
      return { latency: summarize(samples), counts: asOfs.size, oldestMs };
    };
    const raw = async () => void (await stack.pool.query(`select task_identifier, count(*) from graphile_worker.jobs group by 1`));
    log("jobs: the summary's count and the raw count, sequential, before any vacuum");
    await timed(5, count);
    await timed(5, raw);
    const unvacuumed = await timed(n, count);
    const rawUnvacuumed = await timed(n, raw);
    log("jobs: vacuum (analyze) of the jobs table, as autovacuum would, then the same again");
    await stack.pool.query("vacuum (analyze) graphile_worker._private_jobs");
    const vacuumedTable = await tableNow();
    await timed(5, count);
    await timed(5, raw);
    const summary = await timed(n, count);
    const rawCount = await timed(n, raw);
    log("jobs: summary GETs (kept 2 s), sequential, then paced at 10/s");
    await timed(5, get);
    const served = await timed(n, get);
    const polled = await paced();
    // BENCH_JOBS_INDEX=compare: the same table with the index made now, then dropped again, in this run (A-B-A).
    const compare = process.env.BENCH_JOBS_INDEX === "compare" ? await compareIndex(stack, n, count) : null;

    const ms = (s: Summary) => `${round(s.p50)} / ${round(s.p95)} / ${round(s.p99)} ms`;
    const mib = (t: { bytes: number } | undefined) => `${round((t?.bytes ?? 0) / 2 ** 20)} MiB`;
    const index = withIndex ? ", with jobs_summary_bench_idx" : "";
    const rows: Row[] = [
      [
        `jobs summary GET, ${queued / 1000}k queued, ${deleted / 1000}k deleted, vacuumed${index}, kept 2 s, paced 10/s, p50/p95/p99`,
        ms(polled.latency),
        `the count each request made before ${ms(summary)}`,
        `p95 ≤ ${targets.summaryP95Ms} ms`,
        `${n} over ${n / 10} s: ${polled.counts} counts, the oldest answered ${round(polled.oldestMs)} ms old`,
      ],
      [
        `jobs summary GET, the same, sequential${index}, p50/p95/p99`,
        ms(served),
        `the count each request made before ${ms(summary)}`,
        `p95 ≤ ${targets.summaryP95Ms} ms`,
        `${n} sequential`,
      ],
      [
        `jobs summary's count (jobsSummary on the pool), vacuumed${index}, p50/p95/p99`,
        ms(summary),
        `raw count by task ${ms(rawCount)}`,
        "",
        `${n} sequential; jobs table ${mib(vacuumedTable[0])}, ${vacuumedTable[0]?.dead ?? "?"} dead rows when measured`,
      ],
      [
        `jobs summary's count, the same before the vacuum${index}, p50/p95/p99`,
        ms(unvacuumed),
        `raw count by task ${ms(rawUnvacuumed)}`,
        "(autovacuum's first minute)",
        `${n} sequential; jobs table ${mib(table[0])}, ${table[0]?.dead ?? "?"} dead rows when measured`,
      ],
    ];
    if (compare) {
      rows.push(
        [`jobs summary's count, vacuumed, then the covering index made, p50/p95/p99`, ms(compare.withIndex), `the same before it ${ms(summary)}`, "", `${n} sequential, same run`],
        [`jobs summary's count, vacuumed, the index dropped again, p50/p95/p99`, ms(compare.dropped), "", "", `${n} sequential, same run`],
      );
    }
    return {
      rows,
      results: { polled, served, summary, rawCount, compare, unvacuumed, rawUnvacuumed, queued, deleted, withIndex, table: table[0], vacuumedTable: vacuumedTable[0], targets },
    };
  } finally {
    await stack.pool.query(`delete from graphile_worker._private_jobs where task_id in (select id from graphile_worker._private_tasks where identifier = any($1::text[]))`, [TASKS]);
    if (withIndex) await stack.pool.query(`drop index if exists graphile_worker.jobs_summary_bench_idx`);
    await stack.restartRelay();
    await stack.restartNotifier();
  }
}

await runScenarioScript(import.meta.url, "jobs summary bench", "ass_bench_jobs", jobsSummaryScenario);
