/**
 * The outbox partitioned by day (migration 000022, decision 0083) against the
 * same outbox unpartitioned, from the same run on the same server: two
 * scratch databases, one migrated to the last migration, one to the one
 * before the conversion. Measured:
 *
 * - the prune of N published rows (1,000,000; 100,000 with BENCH_QUICK=1):
 *   by dropping their day (jobs/scheduled/maintenance.ts dropOutboxDays) against the
 *   earlier delete in slices of 10,000, time and WAL bytes. WAL is read as
 *   pg_current_wal_lsn() before and after, which counts every database on
 *   the server (an upper bound when others write), and for the delete also
 *   as the statements' own `explain (analyze, wal)` WAL bytes;
 * - the relay's claim (lib/outbox.ts claimSql, with its plan settings) on 7
 *   days of published rows and a backlog of 500, with and without a cursor;
 * - the create's transaction (a report and its outbox row, as bench/baselines.ts
 *   writes it) paced at 15/s, p95, and closed-loop with 10 clients, tx/s.
 *
 * `npx tsx bench/partitions.ts` runs it alone and writes
 * bench/results/partitions-<date>.txt; `npm run bench` runs it as a scenario.
 */
import { cp, mkdir, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { loadavg, tmpdir } from "node:os";
import path from "node:path";
import { migrate } from "graphile-migrate";
import { clearAllPools } from "graphile-migrate/dist/pg.js";
import pg from "pg";
import { EventType } from "../lib/events.js";
import { migrateUp } from "../lib/migrate.js";
import { CLAIM_BY_INDEX_SCAN, claimSql } from "../lib/outbox.js";
import { dropOutboxDays } from "../jobs/scheduled/maintenance.js";
import { closedLoopThroughput } from "./baselines.js";
import { round, summarize, type Summary } from "./stats.js";

const root = path.resolve(import.meta.dirname, "..");
const CONVERTING = "000022";
const TYPE = EventType.AnimalLostReported;

type Row = [scenario: string, figure: string, baseline: string, target: string, note: string];

const log = (message: string) => console.log(`[bench partitions] ${message}`);

async function scratchDatabase(adminUrl: string, name: string, partitioned: boolean): Promise<pg.Pool> {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`drop database if exists ${name} with (force)`);
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  if (partitioned) {
    await migrateUp(url.toString());
  } else {
    // The migrations before the conversion, from a folder of their own.
    const folder = await mkdtemp(path.join(tmpdir(), "ass-bench-migrations-"));
    await mkdir(path.join(folder, "committed"));
    for (const file of await readdir(path.join(root, "migrations/committed"))) {
      if (file.endsWith(".sql") && file < CONVERTING) await cp(path.join(root, "migrations/committed", file), path.join(folder, "committed", file));
    }
    await cp(path.join(root, "migrations/current.sql"), path.join(folder, "current.sql"));
    await migrate({ connectionString: url.toString(), migrationsFolder: folder, pgSettings: { search_path: "public" } });
    clearAllPools();
    await rm(folder, { recursive: true, force: true });
  }
  return new pg.Pool({ connectionString: url.toString(), max: 12 });
}

const utcDay = (offsetDays: number) => new Date(Date.now() + offsetDays * 86_400_000).toISOString().slice(0, 10);

/** The day's partition, made as the maintenance job makes one, unless the table is not partitioned or it exists. */
async function ensureDay(pool: pg.Pool, day: string): Promise<void> {
  const { rows } = await pool.query<{ kind: string }>(`select relkind as kind from pg_class where relname = 'outbox_event'`);
  if (rows[0]!.kind !== "p") return;
  const next = new Date(Date.parse(`${day}T00:00:00Z`) + 86_400_000).toISOString().slice(0, 10);
  await pool.query(
    `create table if not exists outbox_event_p${day.replaceAll("-", "")} partition of outbox_event
     for values from ('${day} 00:00:00+00') to ('${next} 00:00:00+00')`,
  );
}

/** `n` rows spread over the day, published or not, with a payload the size of a report event's. */
async function fillDay(pool: pg.Pool, day: string, n: number, published: boolean): Promise<void> {
  await ensureDay(pool, day);
  const step = 86_400_000 / n;
  for (let done = 0; done < n; done += 200_000) {
    await pool.query(
      `insert into outbox_event (type, occurred_at, published_at, payload)
       select $1, t, case when $4 then t + interval '1 second' end,
         jsonb_build_object('lostReportId', gen_random_uuid(), 'species', 'dog', 'lastSeenAt', t)
       from generate_series($5::int, $6::int) i, lateral (select $2::timestamptz + make_interval(secs => (i * $3::float8) / 1000) as t) s`,
      [TYPE, `${day}T00:00:00Z`, step, published, done, Math.min(n, done + 200_000) - 1],
    );
  }
}

const walLsn = async (pool: pg.Pool) => (await pool.query<{ lsn: string }>(`select pg_current_wal_lsn()::text as lsn`)).rows[0]!.lsn;
const walSince = async (pool: pg.Pool, lsn: string) =>
  Number((await pool.query<{ n: string }>(`select pg_wal_lsn_diff(pg_current_wal_lsn(), $1::pg_lsn)::bigint as n`, [lsn])).rows[0]!.n);

interface PruneFigures {
  seconds: number;
  walBytes: number;
  statementWalBytes?: number;
  rowsLeft: number;
}

/** The earlier prune: published rows past the retention, deleted 10,000 at a time until none is left. */
async function pruneByDelete(pool: pg.Pool, retentionDays: number): Promise<PruneFigures> {
  const lsn = await walLsn(pool);
  const started = performance.now();
  let statementWal = 0;
  for (;;) {
    // The statement jobs/scheduled/maintenance.ts ran before the outbox was partitioned.
    const { rows } = await pool.query(
      `explain (analyze, wal, timing off, format json) delete from outbox_event where id in (
         select id from outbox_event
         where published_at is not null and published_at < now() - make_interval(days => ${retentionDays})
         limit 10000)`,
    );
    const plan = rows[0]["QUERY PLAN"][0].Plan;
    statementWal += Number(plan["WAL Bytes"] ?? 0);
    if (Number(plan.Plans?.[0]?.["Actual Rows"] ?? 0) === 0) break;
  }
  const seconds = (performance.now() - started) / 1000;
  return { seconds, walBytes: await walSince(pool, lsn), statementWalBytes: statementWal, rowsLeft: await leftBefore(pool, retentionDays) };
}

const leftBefore = async (pool: pg.Pool, retentionDays: number) =>
  Number(
    (await pool.query(`select count(*)::int as n from outbox_event where occurred_at < now() - make_interval(days => $1::int)`, [retentionDays])).rows[0]
      .n,
  );

async function pruneByDrop(pool: pg.Pool, retentionDays: number): Promise<PruneFigures> {
  const lsn = await walLsn(pool);
  const started = performance.now();
  const run = await dropOutboxDays(pool, retentionDays);
  const seconds = (performance.now() - started) / 1000;
  if (run.dropped.length === 0) throw new Error("the drop prune dropped nothing");
  return { seconds, walBytes: await walSince(pool, lsn), rowsLeft: await leftBefore(pool, retentionDays) };
}

/** The relay's claim, as beginAndClaimUnpublishedBatch sends it, rolled back: latency per claim, from the client. */
async function claimLatency(pool: pg.Pool, times: number, withCursor: boolean): Promise<Summary> {
  const client = await pool.connect();
  try {
    const { rows } = await client.query<{ cursorAt: string; id: string }>(
      `select to_char(occurred_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as "cursorAt", id
       from outbox_event where published_at is null order by occurred_at, id limit 1`,
    );
    const after = withCursor ? rows[0]! : null;
    const sql = `begin; ${CLAIM_BY_INDEX_SCAN}; ${claimSql(100, after)}`;
    for (let i = 0; i < 20; i++) {
      await client.query(sql);
      await client.query("rollback");
    }
    const samples: number[] = [];
    for (let i = 0; i < times; i++) {
      const t = performance.now();
      await client.query(sql);
      samples.push(performance.now() - t);
      await client.query("rollback");
    }
    return summarize(samples);
  } finally {
    client.release();
  }
}

/** The create's transaction: a report, then its outbox row (bench/baselines.ts twoInsertTransaction on the project's tables). */
async function createTransaction(client: pg.PoolClient, n: string): Promise<void> {
  await client.query("begin");
  const { rows } = await client.query(
    `insert into safety_lost_report (reporter_id, species, last_seen_at, location, coarse_location)
     values ($1, 'dog', now(), 'SRID=4326;POINT(2.35 48.85)', 'SRID=4326;POINT(2.35 48.85)') returning id`,
    [`part-${n}`],
  );
  await client.query(`insert into outbox_event (type, payload) values ($1, $2)`, [TYPE, JSON.stringify({ lostReportId: rows[0].id })]);
  await client.query("commit");
}

/** Open loop at `rate`/s for `seconds`, latency from each intended start. */
async function pacedWrites(pool: pg.Pool, rate: number, seconds: number): Promise<Summary> {
  const latencies: number[] = [];
  const start = performance.now() + 20;
  const inflight: Promise<void>[] = [];
  for (let i = 0; i < rate * seconds; i++) {
    const intended = start + (i * 1000) / rate;
    const wait = intended - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    inflight.push(
      (async () => {
        const client = await pool.connect();
        try {
          await createTransaction(client, `lat-${i}-${Math.random()}`);
        } finally {
          client.release();
        }
        latencies.push(performance.now() - intended);
      })(),
    );
  }
  await Promise.all(inflight);
  return summarize(latencies);
}

const mb = (bytes: number) => `${round(bytes / 1_048_576, 1)} MB`;
const triple = (s: Summary) => `${s.p50} / ${s.p95} / ${s.p99} ms`;

export async function partitionsScenario({ quick }: { quick: boolean }): Promise<{ rows: Row[]; results: Record<string, unknown> }> {
  const adminUrl = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
  const pruneRows = quick ? 100_000 : 1_000_000;
  const perDay = quick ? 10_000 : 100_000;
  const backlog = 500;
  const retentionDays = 7;
  log("scratch databases: one partitioned (every migration), one as before the conversion");
  const partitioned = await scratchDatabase(adminUrl, "ass_bench_part", true);
  const unpartitioned = await scratchDatabase(adminUrl, "ass_bench_unpart", false);
  const both = [
    ["partitioned", partitioned],
    ["unpartitioned", unpartitioned],
  ] as const;
  const results: Record<string, unknown> = { pruneRows, perDay, backlog, loadAverageAtStart: loadavg().map((l) => round(l, 2)) };
  try {
    // 1. The prune of a day of published rows past the retention.
    const pruneDay = utcDay(-(retentionDays + 3));
    for (const [name, pool] of both) {
      log(`${name}: ${pruneRows} published rows on ${pruneDay}`);
      await fillDay(pool, pruneDay, pruneRows, true);
      await pool.query(`checkpoint`).catch(() => undefined);
    }
    log("prune by drop");
    const drop = await pruneByDrop(partitioned, retentionDays);
    log("prune by delete, 10,000 a slice");
    const del = await pruneByDelete(unpartitioned, retentionDays);
    results.prune = { drop, delete: del, loadAverage: loadavg().map((l) => round(l, 2)) };

    // 2. The claim on 7 days of published rows and a backlog today.
    for (const [name, pool] of both) {
      log(`${name}: 7 days of ${perDay} published rows and ${backlog} unpublished`);
      for (let d = -6; d <= 0; d++) await fillDay(pool, utcDay(d), perDay, true);
      await pool.query(
        `insert into outbox_event (type, payload) select $1, jsonb_build_object('n', i) from generate_series(1, $2::int) i`,
        [TYPE, backlog],
      );
      await pool.query(`vacuum analyze outbox_event`);
    }
    const claims = quick ? 200 : 1000;
    const claim = {
      partitioned: { first: await claimLatency(partitioned, claims, false), cursor: await claimLatency(partitioned, claims, true) },
      unpartitioned: { first: await claimLatency(unpartitioned, claims, false), cursor: await claimLatency(unpartitioned, claims, true) },
      partitions: Number(
        (await partitioned.query(`select count(*)::int as n from pg_partition_tree('outbox_event') where isleaf`)).rows[0].n,
      ),
      loadAverage: loadavg().map((l) => round(l, 2)),
    };
    results.claim = claim;

    // 3. The create's transaction, alternating the two databases so load drifts touch both.
    const seconds = quick ? 5 : 20;
    const write: Record<string, { p95s: Summary[]; tps: number[] }> = { partitioned: { p95s: [], tps: [] }, unpartitioned: { p95s: [], tps: [] } };
    for (let round_ = 0; round_ < 2; round_++) {
      for (const [name, pool] of both) {
        log(`${name}: creates at 15/s for ${seconds} s, then 10 clients closed-loop for ${seconds / 2} s`);
        write[name]!.p95s.push(await pacedWrites(pool, 15, seconds));
        write[name]!.tps.push(await closedLoopThroughput(pool, 10, seconds / 2, (client, tag) => createTransaction(client, `cap-${tag}-${Math.random()}`)));
      }
    }
    results.write = { ...write, loadAverage: loadavg().map((l) => round(l, 2)) };

    const pct = (a: number, b: number) => `${round((a / b - 1) * 100, 1)} %`;
    const p95 = (s: Summary[]) => round(s.reduce((n, x) => n + x.p95, 0) / s.length, 2);
    const mean = (xs: number[]) => round(xs.reduce((n, x) => n + x, 0) / xs.length, 0);
    const rows: Row[] = [
      [
        `outbox prune of ${pruneRows.toLocaleString("en")} published rows: time`,
        `drop ${round(drop.seconds, 3)} s`,
        `delete ${round(del.seconds, 2)} s`,
        "drop ≪ delete",
        `${round(del.seconds / drop.seconds, 0)}× faster; rows left: drop ${drop.rowsLeft}, delete ${del.rowsLeft}`,
      ],
      [
        `outbox prune of ${pruneRows.toLocaleString("en")} published rows: WAL`,
        `drop ${mb(drop.walBytes)}`,
        `delete ${mb(del.walBytes)} (its statements' own: ${mb(del.statementWalBytes ?? 0)})`,
        "drop ≪ delete",
        "server-wide LSN difference: other databases' writes count too",
      ],
      [
        `relay claim of 100, 7 days partitioned (${claim.partitions} partitions) p50/p95/p99`,
        triple(claim.partitioned.first),
        `unpartitioned ${triple(claim.unpartitioned.first)}`,
        "index scans, no seq scan",
        `with a cursor: ${triple(claim.partitioned.cursor)} against ${triple(claim.unpartitioned.cursor)}`,
      ],
      [
        "create tx @15/s p95, partitioned",
        `${p95(write.partitioned!.p95s)} ms`,
        `unpartitioned ${p95(write.unpartitioned!.p95s)} ms`,
        "within noise",
        `two runs each, alternated: ${write.partitioned!.p95s.map((s) => s.p95).join(", ")} against ${write.unpartitioned!.p95s.map((s) => s.p95).join(", ")} ms`,
      ],
      [
        "create tx capacity, 10 clients, partitioned",
        `${mean(write.partitioned!.tps)} tx/s`,
        `unpartitioned ${mean(write.unpartitioned!.tps)} tx/s`,
        "within noise",
        `${pct(mean(write.partitioned!.tps), mean(write.unpartitioned!.tps))}; runs ${write.partitioned!.tps.map((t) => round(t, 0)).join(", ")} against ${write.unpartitioned!.tps.map((t) => round(t, 0)).join(", ")}`,
      ],
    ];
    return { rows, results };
  } finally {
    await partitioned.end();
    await unpartitioned.end();
    const admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    if (process.env.KEEP_BENCH_DB !== "1") {
      await admin.query(`drop database if exists ass_bench_part with (force)`);
      await admin.query(`drop database if exists ass_bench_unpart with (force)`);
    }
    await admin.end();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const quick = process.env.BENCH_QUICK === "1";
  const { rows, results } = await partitionsScenario({ quick });
  const text = [
    `# bench/partitions.ts ${new Date().toISOString()}${quick ? " (BENCH_QUICK=1)" : ""}`,
    ...rows.map((r) => `| ${r.join(" | ")} |`),
    "",
    JSON.stringify(results, null, 2),
  ].join("\n");
  console.log(text);
  await mkdir(path.join(root, "bench/results"), { recursive: true });
  await writeFile(path.join(root, "bench/results", `partitions-${new Date().toISOString().slice(0, 10)}${quick ? "-quick" : ""}.txt`), `${text}\n`);
}
