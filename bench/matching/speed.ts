/**
 * Matching speed: with 1,000,000 open lost reports seeded, the time
 * one match__subject job takes for a new found report (p50/p95/p99, warm), and
 * how long a burst of 1,000 found reports takes to be fully matched by the
 * notifier's real graphile-worker task.
 *
 *   npx tsx bench/matching/speed.ts [--reports 1000000] [--burst 1000]
 *
 * Its own database; nothing else runs against it. The found reports are
 * inserted with SQL (the API path is measured elsewhere), spread like the lost
 * reports, so a found report has the density of candidates the seed gives.
 */
import { parseArgs } from "node:util";
import pg from "pg";
import { pino } from "pino";
import { matchSubjectTask } from "../../jobs/matching/task.js";
import { MATCH_SUBJECT_TASK } from "../../jobs/matching/task.js";
import { migrateUp } from "../../lib/migrate.js";
import { enqueueMany } from "../../jobs/queue.js";
import { startWorker } from "../../lib/worker.js";
import { createMatcher } from "../../jobs/matching/matcher.js";
import { CANDIDATE_LOST_AFTER_MS, CANDIDATE_LOST_BEFORE_MS, CANDIDATE_RADIUS_KM, scoreMatch } from "../../jobs/matching/score.js";
import { findCandidates, loadSide } from "../../jobs/matching/store.js";
import { log, machine } from "../stack.js";
import { percentile, round } from "../stats.js";

const { values: args } = parseArgs({
  options: { reports: { type: "string", default: "1000000" }, burst: { type: "string", default: "1000" }, singles: { type: "string", default: "300" }, keep: { type: "boolean", default: false } },
});
const reports = Number(args.reports);
const burst = Number(args.burst);
const database = "ass_bench_matching";

const adminUrl = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const dbUrl = Object.assign(new URL(adminUrl), { pathname: `/${database}` }).toString();
const admin = new pg.Client({ connectionString: adminUrl });
await admin.connect();
await admin.query(`drop database if exists ${database} with (force)`);
await admin.query(`create database ${database}`);
await admin.end();
await migrateUp(dbUrl);
const pool = new pg.Pool({ connectionString: dbUrl, max: 8 });

// Coarse cells as lib/geo.ts makes them, in SQL: 0.009° rows, longitude steps widened by 1/cos(lat).
const coarse = (lat: string, lon: string) => `st_setsrid(st_makepoint(
    ((floor((${lon} + 180) / (0.009 / cos(radians((floor(${lat} / 0.009) + 0.5) * 0.009)))) + 0.5)
      * (0.009 / cos(radians((floor(${lat} / 0.009) + 0.5) * 0.009))) - 180)::numeric(10, 6)::float8,
    ((floor(${lat} / 0.009) + 0.5) * 0.009)::numeric(10, 6)::float8), 4326)::geography`;
const animal = `(array['dog','cat','bird','rabbit','other'])[1 + n % 5],
    (array['Beagle','Labrador Retriever','German Shepherd','Domestic Shorthair','Maine Coon',null])[1 + n % 6],
    string_to_array((array['black', 'brown,white', 'tan', 'grey,white', 'ginger'])[1 + n % 5], ',')`;

log(`seeding ${reports.toLocaleString("en")} open lost reports over 12° × 9°`);
let started = performance.now();
await pool.query(`alter table safety_lost_report disable trigger user`);
await pool.query(
  `insert into safety_lost_report (reporter_id, species, breed, colors, last_seen_at, location, coarse_location, description)
   select 'seed-' || n, ${animal}, now() - (n % 50) * interval '1 day',
     st_setsrid(st_makepoint(lon, lat), 4326)::geography, ${coarse("lat", "lon")}, 'seeded'
   from (select n, 45 + random() * 9 as lat, random() * 12 as lon from generate_series(1, $1::int) n) s`,
  [reports],
);
await pool.query(`alter table safety_lost_report enable trigger user`);
await pool.query(`vacuum analyze safety_lost_report`);
log(`seeded in ${round((performance.now() - started) / 1000, 1)} s`);

async function insertFound(count: number): Promise<string[]> {
  const { rows } = await pool.query<{ id: string }>(
    `insert into safety_found_report (reporter_id, species, breed, colors, found_at, location, coarse_location)
     select 'finder-' || n, ${animal}, now() - interval '1 hour',
       st_setsrid(st_makepoint(lon, lat), 4326)::geography, ${coarse("lat", "lon")}
     from (select n, 45.5 + random() * 8 as lat, 0.5 + random() * 11 as lon from generate_series(1, $1::int) n) s
     returning id`,
    [count],
  );
  return rows.map((r) => r.id);
}

const logger = pino({ level: "silent" });
const match = createMatcher({ pool, logger });

log("warming up: 50 jobs");
for (const id of await insertFound(50)) await match({ kind: "found", id });

log("where a job's time goes, over 100 found reports: the candidate query, then scoring");
const sqlMs: number[] = [];
const scoreMs: number[] = [];
for (const id of await insertFound(100)) {
  let t = performance.now();
  const side = (await loadSide(pool, { kind: "found", id }))!;
  const candidates = await findCandidates(pool, side, {
    radiusM: CANDIDATE_RADIUS_KM * 1000,
    lostAfterMs: CANDIDATE_LOST_AFTER_MS,
    lostBeforeMs: CANDIDATE_LOST_BEFORE_MS,
  });
  sqlMs.push(performance.now() - t);
  t = performance.now();
  for (const lost of candidates) scoreMatch(lost, side);
  scoreMs.push(performance.now() - t);
}
const breakdown = {
  candidateSqlP50: round(percentile(sqlMs, 50), 1),
  candidateSqlP95: round(percentile(sqlMs, 95), 1),
  scoringP50: round(percentile(scoreMs, 50), 1),
  scoringP95: round(percentile(scoreMs, 95), 1),
};
log(`candidate SQL p50 ${breakdown.candidateSqlP50} / p95 ${breakdown.candidateSqlP95} ms; scoring p50 ${breakdown.scoringP50} / p95 ${breakdown.scoringP95} ms`);

log(`timing ${args.singles} single jobs, one at a time`);
const durations: number[] = [];
for (const id of await insertFound(Number(args.singles))) {
  const t = performance.now();
  await match({ kind: "found", id });
  durations.push(performance.now() - t);
}
const { rows: candidateRows } = await pool.query<{ n: number }>(
  `select avg(c)::float8 as n from (
     select (select count(*) from safety_lost_report l
             where l.status = 'open' and l.species = f.species and st_dwithin(l.coarse_location, f.coarse_location, 30000)
               and l.last_seen_at between f.found_at - interval '60 days' and f.found_at + interval '2 hours') as c
     from safety_found_report f order by f.created_at desc limit 20) s`,
);
const single = {
  p50: round(percentile(durations, 50), 1),
  p95: round(percentile(durations, 95), 1),
  p99: round(percentile(durations, 99), 1),
  candidatesPerJob: round(candidateRows[0]!.n, 0),
};
log(`one job: p50 ${single.p50} ms, p95 ${single.p95} ms, p99 ${single.p99} ms (about ${single.candidatesPerJob} candidates each)`);

log(`burst: ${burst} found reports queued at once, matched by the notifier's task on a worker of concurrency 4`);
const runner = await startWorker({
  pool,
  logger,
  taskList: { [MATCH_SUBJECT_TASK]: matchSubjectTask(match) },
  concurrency: 4,
});
const ids = await insertFound(burst);
started = performance.now();
await enqueueMany(
  pool,
  ids.map((id) => ({ task: MATCH_SUBJECT_TASK, payload: { kind: "found", id } })),
);
for (;;) {
  const { rows } = await pool.query<{ n: number }>(
    `select count(*)::int as n from graphile_worker.jobs where task_identifier = $1`,
    [MATCH_SUBJECT_TASK],
  );
  if (rows[0]!.n === 0) break;
  await new Promise((r) => setTimeout(r, 100));
}
const burstSeconds = round((performance.now() - started) / 1000, 2);
await runner.stop();
const { rows: suggested } = await pool.query<{ n: number }>(`select count(*)::int as n from safety_match`);
log(`burst fully matched in ${burstSeconds} s (${suggested[0]!.n} suggestions in all)`);

console.log(JSON.stringify({ machine: machine(), lostReports: reports, singleJobMs: single, breakdown, burst: { reports: burst, seconds: burstSeconds } }, null, 2));
await pool.end();
if (process.argv.includes("--keep")) process.exit(0);
const cleanup = new pg.Client({ connectionString: adminUrl });
await cleanup.connect();
await cleanup.query(`drop database if exists ${database} with (force)`);
await cleanup.end();
