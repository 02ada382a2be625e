import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { EventType } from "../../lib/events.js";
import { registerSourcedGauge, Registry } from "../../lib/metrics.js";
import { as, devEnv } from "../helpers/app.js";
import { addProbeJob, PROBE_TASK, sampleValue, scrape, scrapeApi } from "../helpers/exposition.js";
import { freePort } from "../helpers/nats.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import { ServiceProcess } from "../helpers/processes.js";
import { eventually } from "../helpers/stream.js";
import { consumerInfo, publishEnvelope, contactMessageEnvelope, setPreference, startNotifier } from "../notifier/support.js";

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
});

const probeDepth = (text: string, process: string) => sampleValue(text, "worker_jobs", { task: PROBE_TASK, state: "scheduled", process });
const sourceUp = (text: string, metric: string) => sampleValue(text, "metrics_source_up", { metric });

async function startRelay(): Promise<{ relay: ServiceProcess; port: number }> {
  const port = await freePort();
  const relay = ServiceProcess.start(
    "relay",
    devEnv(h.db.url, h.bus.url, { RELAY_HEALTH_ADDR: `127.0.0.1:${port}`, LOG_LEVEL: "info", RELAY_RETRY_INTERVAL_MS: "500", RELAY_PUBLISH_TIMEOUT_MS: "500" }),
  );
  await relay.waitForLog((l) => l.msg === "relay: started");
  return { relay, port };
}

describe("the API exposes Prometheus metrics with request histograms by route and status", () => {
  it("counts a 201 and a 400 on the lost-report route under their own labels", async () => {
    const body = { animal: { species: "dog" }, lastSeenAt: "2026-11-20T08:00:00Z", location: { lat: 48.8, lon: 2.3 } };
    expect((await h.api.app.inject({ method: "POST", url: "/v1/safety/lost-reports", headers: as("m-1"), payload: body })).statusCode).toBe(201);
    expect((await h.api.app.inject({ method: "POST", url: "/v1/safety/lost-reports", headers: as("m-1"), payload: {} })).statusCode).toBe(400);
    const res = await scrapeApi(h.api);
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-type"]).toMatch(/^text\/plain/);
    const text = res.body;
    expect(sampleValue(text, "http_request_duration_seconds_count", { route: "/v1/safety/lost-reports", status: "201" })).toBe(1);
    expect(sampleValue(text, "http_request_duration_seconds_count", { route: "/v1/safety/lost-reports", status: "400" })).toBe(1);
    expect(sampleValue(text, "process_resident_memory_bytes")).toBeGreaterThan(0);
  });
});

describe("the relay exposes backlog size and age, publish latency and failures, and worker queue depth", () => {
  it("reports a backlog, failures and queued jobs while the bus is down, then publish latency once it drains", async () => {
    if (!h.bus.server) return expect.fail("this test needs its own nats-server");
    const { relay, port } = await startRelay();
    try {
      await addProbeJob(h.db.pool);
      await h.bus.server.stop();
      await h.db.pool.query(
        `insert into outbox_event (type, occurred_at) select $1, now() - interval '30 seconds' from generate_series(1, 3)`,
        [EventType.AnimalLostReported],
      );
      const down = await eventually(async () => {
        const { text } = await scrape(port);
        return (sampleValue(text, "relay_publish_failures_total") ?? 0) > 0 ? text : undefined;
      });
      const { rows } = await h.db.pool.query(`select count(*)::int as n from outbox_event where published_at is null`);
      expect(rows[0].n).toBeGreaterThanOrEqual(3);
      expect(sampleValue(down, "outbox_backlog")).toBe(rows[0].n);
      expect(sampleValue(down, "outbox_oldest_unpublished_age_seconds")).toBeGreaterThanOrEqual(30);
      expect(probeDepth(down, "relay")).toBe(1);
      expect(sourceUp(down, "outbox_backlog")).toBe(1);

      await h.bus.server.start();
      // prom-client reads a scrape's metrics concurrently: the counters as the scrape begins, the backlog when its
      // query returns. So one scrape can show the backlog empty and the counts of the last batch not yet: wait for both.
      const up = await eventually(async () => {
        const { text } = await scrape(port);
        const drained = sampleValue(text, "outbox_backlog") === 0 && (sampleValue(text, "relay_published_total") ?? 0) >= 3;
        return drained ? text : undefined;
      }, 15_000);
      expect(sampleValue(up, "relay_published_total")).toBeGreaterThanOrEqual(3);
      expect(sampleValue(up, "relay_publish_seconds_count")).toBeGreaterThanOrEqual(3);
      expect(sampleValue(up, "outbox_oldest_unpublished_age_seconds")).toBe(0);
    } finally {
      await relay.stop();
    }
  });

  it("still answers /metrics while its database refuses connections, with the last values and the source marked down", async () => {
    const { relay, port } = await startRelay();
    // From the server's admin database: a database cannot refuse connections to itself.
    const admin = new pg.Client({ connectionString: inject("adminDatabaseUrl") });
    await admin.connect();
    try {
      await addProbeJob(h.db.pool);
      const before = await eventually(async () => {
        const { text } = await scrape(port);
        return sourceUp(text, "outbox_backlog") === 1 && (probeDepth(text, "relay") ?? 0) >= 1 ? text : undefined;
      });
      await admin.query(`alter database ${h.db.name} allow_connections false`);
      await admin.query(`select pg_terminate_backend(pid) from pg_stat_activity where datname = $1 and application_name = 'relay'`, [h.db.name]);
      const down = await scrape(port);
      expect(down.status).toBe(200);
      for (const metric of ["outbox_backlog", "outbox_oldest_unpublished_age_seconds", "worker_jobs", "worker_job_oldest_queued_seconds"]) {
        expect(sourceUp(down.text, metric)).toBe(0);
      }
      expect(probeDepth(down.text, "relay")).toBe(probeDepth(before, "relay"));
      expect(sampleValue(down.text, "outbox_backlog")).toBe(sampleValue(before, "outbox_backlog"));
    } finally {
      await admin.query(`alter database ${h.db.name} allow_connections true`);
      await admin.end();
    }
    try {
      await eventually(async () => {
        const { text } = await scrape(port);
        return sourceUp(text, "outbox_backlog") === 1 ? text : undefined;
      });
    } finally {
      await relay.stop();
    }
  });
});

describe("the notifier exposes consumer lag and worker queue depth, and keeps serving them while NATS is down", () => {
  let notifier: Awaited<ReturnType<typeof startNotifier>>;
  const lag = (text: string, kind: "pending" | "ack_pending") => sampleValue(text, "notifier_consumer_lag", { kind, process: "notifier" });
  beforeAll(async () => {
    notifier = await startNotifier(h.db.url, h.bus.url, { NOTIFIER_CONSUME_CONCURRENCY: "1" });
  });
  afterAll(async () => {
    await notifier?.stop();
  });

  it("reports pending messages while the notifier cannot record them, then 0 once it catches up", async () => {
    const actor = "lag-owner";
    await setPreference(h.db.pool, actor, "in_app");
    await eventually(async () => {
      const { text } = await scrape(notifier.healthPort);
      return lag(text, "pending") === 0 && lag(text, "ack_pending") === 0 ? text : undefined;
    });
    // A long-running migration-like lock: reads go on, the notifier's inserts wait.
    const locker = new pg.Client({ connectionString: h.db.url });
    await locker.connect();
    const events = Array.from({ length: 20 }, () => contactMessageEnvelope(actor));
    try {
      await locker.query("begin");
      await locker.query("lock table notification in exclusive mode");
      for (const event of events) await publishEnvelope(h.api.nc, event);
      const behind = await eventually(async () => {
        const { text } = await scrape(notifier.healthPort);
        const pending = lag(text, "pending") ?? 0;
        return pending > 0 && pending + (lag(text, "ack_pending") ?? 0) === events.length ? text : undefined;
      }, 8_000);
      // The durable's own view agrees: nothing acknowledged, most not even delivered.
      const info = await consumerInfo(h.api.nc);
      expect(info.num_pending + info.num_ack_pending).toBe(events.length);
      expect(lag(behind, "pending")).toBeGreaterThanOrEqual(events.length - 4);
    } finally {
      await locker.query("commit");
      await locker.end();
    }
    const caughtUp = await eventually(async () => {
      const { text } = await scrape(notifier.healthPort);
      return lag(text, "pending") === 0 && lag(text, "ack_pending") === 0 ? text : undefined;
    }, 15_000);
    expect(sourceUp(caughtUp, "notifier_consumer_lag")).toBe(1);
    expect((await consumerInfo(h.api.nc)).num_pending).toBe(0);
  });

  it("still answers /metrics while NATS is stopped, with queue depth and the lag source down", async () => {
    if (!h.bus.server) return expect.fail("this test needs its own nats-server");
    await addProbeJob(h.db.pool);
    const before = await eventually(async () => {
      const { text } = await scrape(notifier.healthPort);
      return sourceUp(text, "notifier_consumer_lag") === 1 && (probeDepth(text, "notifier") ?? 0) >= 1 ? text : undefined;
    });
    await h.bus.server.stop();
    try {
      // An answer at all: the lag's read from the stopped bus gave up (scrape() aborts after 15 s).
      const down = await scrape(notifier.healthPort);
      expect(down.status).toBe(200);
      expect(sourceUp(down.text, "notifier_consumer_lag")).toBe(0);
      expect(sourceUp(down.text, "worker_jobs")).toBe(1);
      expect(probeDepth(down.text, "notifier")).toBeGreaterThanOrEqual(1);
      expect(lag(down.text, "pending")).toBe(lag(before, "pending"));
    } finally {
      await h.bus.server.start();
    }
    await eventually(async () => {
      const { text } = await scrape(notifier.healthPort);
      return sourceUp(text, "notifier_consumer_lag") === 1 ? text : undefined;
    }, 15_000);
  });
});

describe("a scrape-time read that fails or hangs does not fail the scrape", () => {
  it("keeps the gauge's last value, reports the source down and gives up on a read that never ends", async () => {
    const registry = new Registry();
    let mode: "ok" | "fail" | "hang" = "ok";
    registerSourcedGauge(registry, {
      name: "probe_gauge",
      help: "a test gauge",
      source: "test",
      read: () => (mode === "ok" ? Promise.resolve([{ value: 7 }]) : mode === "fail" ? Promise.reject(new Error("down")) : new Promise(() => {})),
    });
    const up = await registry.metrics();
    expect(sampleValue(up, "probe_gauge")).toBe(7);
    expect(sampleValue(up, "metrics_source_up", { metric: "probe_gauge", source: "test" })).toBe(1);

    mode = "fail";
    const failed = await registry.metrics();
    expect(sampleValue(failed, "probe_gauge")).toBe(7);
    expect(sampleValue(failed, "metrics_source_up", { metric: "probe_gauge" })).toBe(0);

    mode = "hang";
    // The read never settles: an answer at all is the read timeout at work.
    const hung = await registry.metrics();
    expect(sampleValue(hung, "probe_gauge")).toBe(7);
    expect(sampleValue(hung, "metrics_source_up", { metric: "probe_gauge" })).toBe(0);
  });
});

describe("every API response carries its own request id", () => {
  it("returns a distinct x-request-id on each response", async () => {
    const res = await h.api.app.inject({ method: "GET", url: "/healthz" });
    expect(res.headers["x-request-id"]).toMatch(/^[0-9a-f-]{36}$/);
    const other = await h.api.app.inject({ method: "GET", url: "/healthz" });
    expect(other.headers["x-request-id"]).not.toBe(res.headers["x-request-id"]);
  });
});
