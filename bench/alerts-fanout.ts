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
 */
import { writeFileSync, mkdirSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { coveringSubscriptionsSql } from "../notifier/alerts/store.js";
import { log, machine, startBenchStack, type BenchStack } from "./stack.js";
import { round, summarize } from "./stats.js";

const CITY = { lat: 48.8566, lon: 2.3522 };
const CLUSTERS = [
  { name: "1k", n: 1_000, lat: 56.0, lon: 10.0 },
  { name: "10k", n: 10_000, lat: 57.0, lon: 12.0 },
  { name: "100k", n: 100_000, lat: 58.5, lon: 14.0 },
];

async function seed(stack: BenchStack): Promise<void> {
  const t0 = performance.now();
  // The country: 80,000 anywhere in the box, radius 0.5–20 km.
  await stack.pool.query(`
    insert into alert_subscription (actor_id, location, radius_m)
    select 'country-' || g, st_setsrid(st_makepoint(-1.5 + random() * 9, 43 + random() * 7.5), 4326)::geography, 500 + random() * 19500
    from generate_series(1, 80000) g`);
  // The city: 20,000 within 10 km of its centre, each radius covering the centre (10.5–20 km).
  await stack.pool.query(
    `insert into alert_subscription (actor_id, location, radius_m)
     select 'city-' || g, st_project(st_setsrid(st_makepoint($2, $1), 4326)::geography, 10000 * sqrt(random()), radians(random() * 360)),
            10500 + random() * 9500
     from generate_series(1, 20000) g`,
    [CITY.lat, CITY.lon],
  );
  // Clusters outside the country: every subscriber within 5 km of the centre with a radius of 6–10 km.
  for (const c of CLUSTERS) {
    await stack.pool.query(
      `insert into alert_subscription (actor_id, location, radius_m)
       select $3 || '-' || g, st_project(st_setsrid(st_makepoint($2, $1), 4326)::geography, 5000 * sqrt(random()), radians(random() * 360)),
              6000 + random() * 4000
       from generate_series(1, $4::int) g`,
      [c.lat, c.lon, `cluster${c.name}`, c.n],
    );
  }
  // One subscriber in ten has an email address: their alert also goes by email, a delivery job each
  // (no SMTP_URL here, so those dead-letter at once, as the contract says).
  await stack.pool.query(
    `insert into notification_preference (actor_id, email) select actor_id, actor_id || '@example.org' from alert_subscription where random() < 0.1`,
  );
  await stack.pool.query(`analyze alert_subscription`);
  log(`seeded ${100_000 + CLUSTERS.reduce((n, c) => n + c.n, 0)} subscriptions in ${round((performance.now() - t0) / 1000, 1)} s`);
}

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

/** Waits (up to `maxMs`) for the notifier to deliver what is queued, so one scenario's deliveries do not load the next. */
async function drained(stack: BenchStack, maxMs: number): Promise<number> {
  const deadline = Date.now() + maxMs;
  for (;;) {
    const { rows } = await stack.pool.query(`select count(*)::int as n from graphile_worker.jobs where task_identifier = 'notification_deliver'`);
    if (rows[0].n === 0 || Date.now() > deadline) return rows[0].n;
    await sleep(250);
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

async function main() {
  const startedAt = new Date();
  log("starting the stack");
  const stack = await startBenchStack("ass_bench_alerts");
  try {
    await seed(stack);
    // Warm the API path and the notifier's consumer once.
    await reportLost(stack, { lat: -40, lon: -61 });
    await sleep(1_000);

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

    const result = { startedAt: startedAt.toISOString(), machine: machine(), fanouts, writes: { quiet, duringFanout: busy } };
    console.table(fanouts);
    console.log(JSON.stringify(result.writes));
    mkdirSync("bench/results", { recursive: true });
    writeFileSync(`bench/results/alerts-fanout-${startedAt.toISOString().slice(0, 10)}.json`, `${JSON.stringify(result, null, 2)}\n`);
  } finally {
    await stack.stop();
  }
}

await main();
