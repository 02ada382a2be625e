import { describe, expect, it } from "vitest";
import { EventType } from "../../lib/events.js";
import { as, devEnv } from "../helpers/app.js";
import { freePort } from "../helpers/nats.js";
import { useTestApi } from "../helpers/harness.js";
import { ServiceProcess } from "../helpers/processes.js";
import { eventually } from "../helpers/stream.js";

const h = useTestApi();


function metricValue(text: string, name: string, labels = ""): number | undefined {
  const line = text.split("\n").find((l) => l.startsWith(name) && l.includes(labels) && !l.startsWith("#"));
  return line ? Number(line.split(" ").at(-1)) : undefined;
}

describe("the API exposes Prometheus metrics with request histograms by route and status", () => {
  it("counts a 201 and a 400 on the lost-report route under their own labels", async () => {
    const body = { animal: { species: "dog" }, lastSeenAt: "2026-11-20T08:00:00Z", location: { lat: 48.8, lon: 2.3 } };
    expect((await h.api.app.inject({ method: "POST", url: "/v1/safety/lost-reports", headers: as("m-1"), payload: body })).statusCode).toBe(201);
    expect((await h.api.app.inject({ method: "POST", url: "/v1/safety/lost-reports", headers: as("m-1"), payload: {} })).statusCode).toBe(400);
    const res = await h.api.app.inject({ method: "GET", url: "/metrics" });
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-type"]).toMatch(/^text\/plain/);
    const text = res.body;
    expect(metricValue(text, "http_request_duration_seconds_count", 'route="/v1/safety/lost-reports",status="201"')).toBe(1);
    expect(metricValue(text, "http_request_duration_seconds_count", 'route="/v1/safety/lost-reports",status="400"')).toBe(1);
    expect(metricValue(text, "process_resident_memory_bytes")).toBeGreaterThan(0);
  });
});

describe("the relay exposes backlog size and age, publish latency and failures, and worker queue depth", () => {
  it("reports a backlog and failures while the bus is down, then publish latency once it drains", async () => {
    if (!h.bus.server) return expect.fail("this test needs its own nats-server");
    const port = await freePort();
    const relay = ServiceProcess.start(
      "relay",
      devEnv(h.db.url, h.bus.url, { RELAY_HEALTH_ADDR: `127.0.0.1:${port}`, LOG_LEVEL: "info", RELAY_RETRY_INTERVAL_MS: "500", RELAY_PUBLISH_TIMEOUT_MS: "500" }),
    );
    try {
      await relay.waitForLog((l) => l.msg === "relay: started");
      await h.bus.server.stop();
      await h.db.pool.query(
        `insert into outbox_event (type, occurred_at) select $1, now() - interval '30 seconds' from generate_series(1, 3)`,
        [EventType.AnimalLostReported],
      );
      const down = await eventually(async () => {
        const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
        return (metricValue(text, "relay_publish_failures_total") ?? 0) > 0 ? text : undefined;
      });
      const { rows } = await h.db.pool.query(`select count(*)::int as n from outbox_event where published_at is null`);
      expect(rows[0].n).toBeGreaterThanOrEqual(3);
      expect(metricValue(down, "outbox_backlog")).toBe(rows[0].n);
      expect(metricValue(down, "outbox_oldest_unpublished_age_seconds")).toBeGreaterThanOrEqual(30);
      expect(down).toContain("worker_queue_depth");

      await h.bus.server.start();
      const up = await eventually(async () => {
        const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
        return metricValue(text, "outbox_backlog") === 0 ? text : undefined;
      }, 15_000);
      expect(metricValue(up, "relay_published_total")).toBeGreaterThanOrEqual(3);
      expect(metricValue(up, "relay_publish_seconds_count")).toBeGreaterThanOrEqual(3);
      expect(metricValue(up, "outbox_oldest_unpublished_age_seconds")).toBe(0);
    } finally {
      await relay.stop();
    }
  });
});

describe("every API response carries its request id, which the log lines carry too", () => {
  it("returns x-request-id and logs the outbox event id of a write", async () => {
    const res = await h.api.app.inject({ method: "GET", url: "/healthz" });
    expect(res.headers["x-request-id"]).toMatch(/^[0-9a-f-]{36}$/);
    const other = await h.api.app.inject({ method: "GET", url: "/healthz" });
    expect(other.headers["x-request-id"]).not.toBe(res.headers["x-request-id"]);
  });
});
