/**
 * The raw baselines each scenario is read against, measured in the same run
 * on the same machine: what Postgres and NATS cost on their own, with none of
 * the project's code, triggers or processes in the way.
 *
 * The write baselines use copies of the report and outbox tables made with
 * `create table … (like …)`, which copies columns, defaults, constraints and
 * indexes but no trigger, so a raw figure carries none of the project's
 * triggers, and rows written to the copies never reach the relay's drain.
 * The caller stops the relay while they run, and deletes the rows the
 * variant on the project's own tables left in outbox_event
 * (`payload ? 'rawBaseline'`) before starting it again.
 */
import { StorageType, type JetStreamClient, type JsMsg, type JetStreamManager } from "@nats-io/jetstream";
import { nanos } from "@nats-io/transport-node";
import type pg from "pg";
import { DUPLICATE_WINDOW_MS } from "../lib/bus.js";
import { EventType } from "../lib/events.js";
import { alertsSqlFor, alertsValues } from "../api/safety/alerts/store.js";
import { summarize, type Summary } from "./stats.js";

export const RAW_REPORT = "bench_raw_lost_report";
export const RAW_OUTBOX = "bench_raw_outbox_event";

export async function createRawTables(pool: pg.Pool): Promise<void> {
  await pool.query(`drop table if exists ${RAW_REPORT}, ${RAW_OUTBOX}`);
  await pool.query(`create table ${RAW_REPORT} (like safety_lost_report including defaults including constraints including indexes)`);
  await pool.query(`create table ${RAW_OUTBOX} (like outbox_event including defaults including constraints including indexes)`);
}

/** The create's two inserts (report, then its outbox row) in one transaction; `triggered` uses the project's tables. */
async function twoInsertTransaction(client: pg.PoolClient, n: string, triggered: boolean): Promise<void> {
  const [report, outbox] = triggered ? ["safety_lost_report", "outbox_event"] : [RAW_REPORT, RAW_OUTBOX];
  await client.query("begin");
  const { rows } = await client.query(
    `insert into ${report} (reporter_id, species, last_seen_at, location, coarse_location)
     values ($1, 'dog', now(), 'SRID=4326;POINT(2.35 48.85)', 'SRID=4326;POINT(2.35 48.85)') returning id`,
    [`raw-${n}`],
  );
  await client.query(`insert into ${outbox} (type, payload) values ($1, $2)`, [EventType.AnimalLostReported, JSON.stringify({ rawBaseline: rows[0].id })]);
  await client.query("commit");
}

/** Closed loop: `clients` connections each running `transaction` back to back for `seconds`; transactions per second. */
export async function closedLoopThroughput(
  pool: pg.Pool,
  clients: number,
  seconds: number,
  transaction: (client: pg.PoolClient, tag: string) => Promise<void>,
): Promise<number> {
  let done = 0;
  const deadline = Date.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: clients }, async (_, w) => {
      const client = await pool.connect();
      try {
        for (let i = 0; Date.now() < deadline; i++) {
          await transaction(client, `${w}-${i}`);
          done++;
        }
      } finally {
        client.release();
      }
    }),
  );
  return done / seconds;
}

/** The create's two inserts in a closed loop (closedLoopThroughput), on the raw copies or, `triggered`, the project's tables. */
export function rawWriteThroughput(pool: pg.Pool, { clients, seconds, triggered = false }: { clients: number; seconds: number; triggered?: boolean }): Promise<number> {
  return closedLoopThroughput(pool, clients, seconds, (client, tag) => twoInsertTransaction(client, `${tag}-${triggered}`, triggered));
}

/**
 * Open loop at `rate` per second for `seconds`, latency from each intended
 * start (as bench/loadgen.ts does), after a one-second warm-up.
 */
async function paced(rate: number, seconds: number, run: (i: number) => Promise<void>): Promise<Summary> {
  for (let k = 0; k < Math.max(10, rate); k++) await run(-1 - k);
  const latencies: number[] = [];
  const start = performance.now() + 20;
  const total = Math.round(rate * seconds);
  const inflight: Promise<void>[] = [];
  for (let i = 0; i < total; i++) {
    const intended = start + (i * 1000) / rate;
    const wait = intended - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    inflight.push(run(i).then(() => void latencies.push(performance.now() - intended)));
  }
  await Promise.all(inflight);
  return summarize(latencies);
}

export function rawWriteLatency(pool: pg.Pool, rate: number, seconds: number): Promise<Summary> {
  return paced(rate, seconds, async (i) => {
    const client = await pool.connect();
    try {
      await twoInsertTransaction(client, `lat-${i}`, false);
    } finally {
      client.release();
    }
  });
}

/** The API's own alerts statement, straight through pg: what the read costs the database. */
export function rawAlertsLatency(pool: pg.Pool, rate: number, seconds: number, radiusKm: number): Promise<Summary> {
  return paced(rate, seconds, async (i) => {
    const query = { lat: 42 + ((Math.abs(i) * 7919) % 9000) / 1000, lon: -4 + ((Math.abs(i) * 104729) % 12000) / 1000, radiusKm, kind: "all" as const, limit: 50 };
    await pool.query({ name: "bench-raw-alerts", text: alertsSqlFor(query), values: alertsValues(query, null, 51) });
  });
}

/**
 * The raw publishes go to a stream of their own, made like EVENTS (file
 * storage, one replica, the same duplicate window), so none of the project's
 * consumers ever sees them.
 */
export const RAW_STREAM = "BENCH_RAW";
export async function createRawStream(jsm: JetStreamManager): Promise<void> {
  await jsm.streams.delete(RAW_STREAM).catch(() => undefined);
  await jsm.streams.add({
    name: RAW_STREAM,
    subjects: ["bench.raw.>"],
    storage: StorageType.File,
    num_replicas: 1,
    duplicate_window: nanos(DUPLICATE_WINDOW_MS),
  });
}

/** Publish-with-ack latency at `rate` per second: the floor under commit → stream. */
export function rawPublishLatency(js: JetStreamClient, rate: number, seconds: number, runId: string): Promise<Summary> {
  return paced(rate, seconds, async (i) => {
    await js.publish("bench.raw.latency", JSON.stringify({ i }), { msgID: `${runId}-lat-${i}` });
  });
}

/** Pipelined publish-with-ack, 100 in flight: the ceiling over the relay's drain. */
export async function rawPublishThroughput(js: JetStreamClient, count: number, runId: string): Promise<number> {
  const start = performance.now();
  for (let i = 0; i < count; i += 100) {
    await Promise.all(
      Array.from({ length: 100 }, (_, k) => js.publish("bench.raw.publish", JSON.stringify({ i: i + k }), { msgID: `${runId}-${i + k}` })),
    );
  }
  return count / ((performance.now() - start) / 1000);
}

/**
 * The floor under the notifier: a bare consumer that takes what has arrived,
 * up to 100 messages (the notifier's batch), inserts one row per message in
 * one statement and acks, offered `rate` messages per second. Latency from
 * the stream's timestamp to the row's created_at, as the notifier scenario
 * measures it.
 */
export async function rawConsumeInsertLatency(
  js: JetStreamClient,
  jsm: JetStreamManager,
  pool: pg.Pool,
  { rate, count, runId }: { rate: number; count: number; runId: string },
): Promise<Summary> {
  await pool.query(`create table if not exists bench_raw_notification (
    source text primary key, published_ms double precision not null, created_at timestamptz not null default clock_timestamp())`);
  const subject = "bench.raw.notify";
  const info = await jsm.streams.info(RAW_STREAM);
  const consumer = await js.consumers.get(RAW_STREAM, { opt_start_seq: info.state.last_seq + 1, filter_subjects: subject });
  // Micro-batches as the notifier takes them: what arrived together, at most 100, up to 4 batches in flight.
  const messages = await consumer.consume();
  const inFlight = new Set<Promise<void>>();
  let batch: JsMsg[] = [];
  let flushQueued = false;
  const flush = () => {
    flushQueued = false;
    if (batch.length === 0) return;
    const taken = batch;
    batch = [];
    const work = pool
      .query(
        `insert into bench_raw_notification (source, published_ms)
         select * from unnest($1::text[], $2::float8[]) on conflict do nothing`,
        [taken.map((m) => m.string()), taken.map((m) => m.info.timestampNanos / 1e6)],
      )
      .then(() => taken.forEach((m) => m.ack()))
      .finally(() => inFlight.delete(work));
    inFlight.add(work);
  };
  let seen = 0;
  const consuming = (async () => {
    for await (const m of messages) {
      while (inFlight.size >= 4) await Promise.race(inFlight);
      batch.push(m);
      if (batch.length >= 100) flush();
      else if (!flushQueued) {
        flushQueued = true;
        setImmediate(flush);
      }
      if (++seen >= count) break;
    }
    flush();
    await Promise.all(inFlight);
  })();
  for (let sent = 0; sent < count; sent += 100) {
    const tick = performance.now();
    await Promise.all(Array.from({ length: 100 }, (_, k) => js.publish(subject, `${runId}-${sent + k}`, { msgID: `${runId}-notify-${sent + k}` })));
    await new Promise((r) => setTimeout(r, Math.max(0, 100_000 / rate - (performance.now() - tick))));
  }
  await consuming;
  await messages.close();
  const { rows } = await pool.query<{ ms: number }>(
    `select extract(epoch from created_at) * 1000 - published_ms as ms from bench_raw_notification where source like $1`,
    [`${runId}-%`],
  );
  return summarize(rows.map((r) => Number(r.ms)));
}
