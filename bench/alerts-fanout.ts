/**
 * Neighbourhood alert fan-out, measured on the real processes (bench/stack.ts:
 * API, relay and notifier from their main.ts, a database and a nats-server
 * of their own). `npx tsx bench/alerts-fanout.ts`; about two minutes.
 *
 * Seeds 100,000 subscriptions over a country-sized area (7.5° × 9°, about
 * 830 × 700 km) with a dense city of 20,000 within 10 km of its centre, and
 * three clusters elsewhere with 1,000, 10,000 and 100,000 subscribers in
 * range of their centre. For each, a lost report at the centre through the
 * API, and the time from its commit (the report's created_at, the writing
 * transaction's start: an upper bound) to the fan-out's last batch commit
 * (finished_at): by then every notification row and delivery job is
 * written, as both commit in each batch's transaction (in-app rows are
 * written sent; the one subscriber in ten with an email address also gets
 * an email row and its delivery job). The notifier's worker runs those
 * deliveries meanwhile, as in production.
 *
 * Then API writes (POST /v1/safety/lost-reports, 10/s, each from its own
 * actor and address) quiet, and during a 100,000-subscriber fan-out.
 *
 * Last, the load item (bench/alerts-load.ts): lost reports at 10/s for 30 s
 * through the open-loop generator, at points that follow the subscribers,
 * quiet (before seeding) and with every subscription seeded; the writes'
 * latency and whether the fan-out keeps up, then the next morning's digest
 * of its deferrals. ALERTS_BENCH_PARTS=load runs
 * only that (and the seeding); results go to
 * bench/results/alerts-fanout-<date>[-<time>].json.
 *
 * The push part (ALERTS_BENCH_PARTS=push, not in the default): the push
 * drain of bench/push-drain.ts (scenario 7g of `npm run bench`) after this
 * bench's full seeding rather than the city's alone.
 */
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { coveringSubscriptionsSql } from "../jobs/fanout/coverage.js";
import { LOAD, morningDigest, quietWrites, seededWritesNoFanout, writesUnderFanout } from "./alerts-load.js";
import { CITY, CLUSTERS, seed } from "./alerts-seed.js";
import { drained, pushDrain } from "./push-drain.js";
import { log, machine, startBenchStack, type BenchStack } from "./stack.js";
import { round, summarize } from "./stats.js";

let requests = 0;
async function reportLost(stack: BenchStack, at: { lat: number; lon: number }): Promise<{ id: string; ms: number }> {
  const i = ++requests;
  const started = performance.now();
  const res = await fetch(`${stack.baseUrl}/v1/safety/lost-reports`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-debug-actor": `bench-reporter-${i}`,
      "x-forwarded-for": `10.9.${(i >> 8) & 255}.${i & 255}`,
    },
    body: JSON.stringify({ animal: { species: "dog", name: `Bench ${i}` }, lastSeenAt: new Date().toISOString(), location: at }),
  });
  const ms = performance.now() - started;
  if (res.status !== 201) throw new Error(`report: ${res.status} ${await res.text()}`);
  return { id: ((await res.json()) as { id: string }).id, ms };
}

interface FanoutFigures {
  scenario: string;
  recipients: number;
  notifications: number;
  emailJobs: number;
  batches: number;
  commitToQueuedMs: number;
  perThousandMs: number;
  collectQueryMs: number;
}

async function fanOut(stack: BenchStack, scenario: string, at: { lat: number; lon: number }): Promise<FanoutFigures> {
  const { id } = await reportLost(stack, at);
  const deadline = Date.now() + 120_000;
  for (;;) {
    const { rows } = await stack.pool.query(
      `select f.status, f.recipients, f.batches_done as batches,
         extract(epoch from f.finished_at - r.created_at) * 1000 as ms
       from alert_fanout f join safety_lost_report r on r.id = f.report_id where f.report_id = $1`,
      [id],
    );
    const f = rows[0];
    if (f && f.status !== "running") {
      const { rows: counted } = await stack.pool.query(
        `select count(*)::int as n, count(*) filter (where channel = 'email')::int as email
         from notification where kind = 'nearby_lost' and data->>'lostReportId' = $1`,
        [id],
      );
      const explained = await stack.pool.query(`explain (analyze, format json) ${coveringSubscriptionsSql}`, [id]);
      const collectQueryMs = explained.rows[0]["QUERY PLAN"][0]["Execution Time"] as number;
      const figures = {
        scenario,
        recipients: f.recipients,
        notifications: counted[0].n,
        emailJobs: counted[0].email,
        batches: f.batches,
        commitToQueuedMs: round(Number(f.ms), 0),
        perThousandMs: round((Number(f.ms) / Math.max(1, f.recipients)) * 1000, 1),
        collectQueryMs: round(collectQueryMs, 1),
      };
      log(`${scenario}: ${JSON.stringify(figures)}`);
      return figures;
    }
    if (Date.now() > deadline) throw new Error(`${scenario}: fan-out not finished after 120 s`);
    await sleep(20);
  }
}

/** Lost reports at 10/s from their own actors, far from every subscriber; latency from the intended send time. */
async function writes(stack: BenchStack, seconds: number): Promise<number[]> {
  const latencies: number[] = [];
  const start = performance.now();
  const pending: Promise<void>[] = [];
  for (let i = 0; i < seconds * 10; i++) {
    const due = start + i * 100;
    await sleep(Math.max(0, due - performance.now()));
    pending.push(
      reportLost(stack, { lat: -40 + (i % 50) * 0.1, lon: -60 }).then(() => {
        latencies.push(performance.now() - due);
      }),
    );
  }
  await Promise.all(pending);
  return latencies;
}

const DATABASE = "ass_bench_alerts";
const parts = new Set((process.env.ALERTS_BENCH_PARTS ?? "scenarios,load").split(","));

/** One report each at the clusters' and the city's centre, then the older writes-during-100k figure. */
async function scenarios(stack: BenchStack) {
  const fanouts: FanoutFigures[] = [];
  fanouts.push(await fanOut(stack, "1k in range", CLUSTERS[0]!));
  await drained(stack, 20_000);
  fanouts.push(await fanOut(stack, "10k in range", CLUSTERS[1]!));
  await drained(stack, 30_000);
  fanouts.push(await fanOut(stack, "city: 20k within 10 km", CITY));
  const left = await drained(stack, 40_000);
  log(`deliveries still queued before the quiet writes: ${left}`);

  const quiet = summarize(await writes(stack, 8));
  log(`writes, quiet: ${JSON.stringify(quiet)}`);
  const during = writes(stack, 8);
  await sleep(200);
  const big = fanOut(stack, "100k in range", CLUSTERS[2]!);
  const busy = summarize(await during);
  log(`writes during the 100k fan-out: ${JSON.stringify(busy)}`);
  fanouts.push(await big);
  console.table(fanouts);
  return { fanouts, writes: { quiet, duringFanout: busy } };
}

/** The load item: quiet writes before the seeding (passed in), then with everything seeded, far from subscribers and while fanning out. */
async function loadItem(stack: BenchStack, quiet: Awaited<ReturnType<typeof quietWrites>>) {
  log(`deliveries still queued before the load: ${await drained(stack, 120_000)}`);
  const seededNoFanout = await seededWritesNoFanout(stack);
  const underFanout = await writesUnderFanout(stack, DATABASE);
  const p95Ratio = round(underFanout.writes.p95 / quiet.p95, 2);
  log(`write p95 under fan-out / quiet: ${p95Ratio} (target ≤ 1.2)`);
  const fanoutSettings = { concurrency: process.env.NOTIFIER_FANOUT_CONCURRENCY ?? "default", duty: process.env.NOTIFIER_FANOUT_DUTY ?? "default" };
  const digest = await morningDigest(stack);
  return { offered: LOAD, fanoutSettings, target: "write p95 ≤ 1.2 × quiet; fan-out keeps up", p95Ratio, quiet, seededNoFanout, underFanout, digest };
}

/** The push part (bench/push-drain.ts), after the full seeding: the city's fan-out with and without push subscribers, and the drain. */
async function pushPart(stack: BenchStack) {
  const { rows, ...result } = await pushDrain(stack);
  console.table([result.withoutPush, result.withPush]);
  return result;
}

async function main() {
  const startedAt = new Date();
  log("starting the stack");
  // ALERTS_BENCH_PROFILE_DIR: --cpu-prof of each process there (bench/profile.ts summariseProfiles reads them).
  const stack = await startBenchStack(DATABASE, { profileDir: process.env.ALERTS_BENCH_PROFILE_DIR });
  try {
    const quiet = parts.has("load") ? await quietWrites(stack) : null;
    await seed(stack);
    // Warm the API path and the notifier's consumer once.
    await reportLost(stack, { lat: -40, lon: -61 });
    await sleep(1_000);
    const measured = parts.has("scenarios") ? await scenarios(stack) : null;
    const load = quiet ? await loadItem(stack, quiet) : null;
    const push = parts.has("push") ? await pushPart(stack) : null;

    const result = { startedAt: startedAt.toISOString(), machine: machine(), ...measured, load, ...(push ? { push } : {}) };
    mkdirSync("bench/results", { recursive: true });
    const day = startedAt.toISOString().slice(0, 10);
    const file = existsSync(`bench/results/alerts-fanout-${day}.json`)
      ? `bench/results/alerts-fanout-${day}-${startedAt.toISOString().slice(11, 16).replace(":", "")}.json`
      : `bench/results/alerts-fanout-${day}.json`;
    writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
    log(`results: ${file}`);
  } finally {
    await stack.stop();
  }
}

await main();
