import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { as, devEnv } from "../helpers/app.js";
import { sampleValue, scrape, scrapeApi } from "../helpers/exposition.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import { freePort, waitForPort } from "../helpers/nats.js";
import { ServiceProcess } from "../helpers/processes.js";

/**
 * The API's /metrics is served on its own listener, API_METRICS_ADDR, like the
 * relay's and the notifier's health ports; the public port answers 404 for it,
 * so nobody on the internet reads the routes' traffic or the process's memory.
 * Its default address: tests/foundation/listen-defaults.test.ts.
 */
let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
});

describe("the API's metrics are served on the metrics server, not on the public app", () => {
  it("answers 404 problem+json for /metrics on the app, while the metrics server counts the app's requests", async () => {
    expect((await h.api.app.inject({ method: "GET", url: "/healthz", headers: as("metrics-1") })).statusCode).toBe(200);
    const hidden = await h.api.app.inject({ method: "GET", url: "/metrics" });
    expect(hidden.statusCode).toBe(404);
    expect(hidden.headers["content-type"]).toMatch(/^application\/problem\+json/);
    expect(hidden.body).not.toMatch(/http_request_duration_seconds|process_resident_memory_bytes/);

    const res = await scrapeApi(h.api);
    expect(res.statusCode).toBe(200);
    expect(sampleValue(res.body, "http_request_duration_seconds_count", { route: "/healthz", status: "200" })).toBeGreaterThanOrEqual(1);
    expect(sampleValue(res.body, "http_request_duration_seconds_count", { route: "unmatched", status: "404" })).toBeGreaterThanOrEqual(1);
  });

  it("serves nothing but /metrics on the metrics server", async () => {
    for (const url of ["/healthz", "/v1/safety/lost-reports", "/docs/json"]) {
      expect((await h.api.metrics!.inject({ method: "GET", url })).statusCode, url).toBe(404);
    }
  });
});

describe("the API process listens for Prometheus on API_METRICS_ADDR", () => {
  it("serves /metrics there, and 404 for /metrics on API_HTTP_ADDR", async () => {
    const [httpPort, metricsPort] = [await freePort(), await freePort()];
    const api = ServiceProcess.start(
      "api",
      devEnv(h.db.url, h.bus.url, { API_HTTP_ADDR: `127.0.0.1:${httpPort}`, API_METRICS_ADDR: `127.0.0.1:${metricsPort}`, LOG_LEVEL: "info" }),
    );
    try {
      await waitForPort(httpPort, 30_000);
      expect((await fetch(`http://127.0.0.1:${httpPort}/healthz`)).status).toBe(200);
      const publicScrape = await fetch(`http://127.0.0.1:${httpPort}/metrics`);
      expect(publicScrape.status).toBe(404);
      expect(await publicScrape.text()).not.toMatch(/http_request_duration_seconds/);

      const { status, text } = await scrape(metricsPort);
      expect(status).toBe(200);
      expect(sampleValue(text, "http_request_duration_seconds_count", { route: "/healthz", status: "200", process: "api" })).toBe(1);
      expect(sampleValue(text, "process_resident_memory_bytes", { process: "api" })).toBeGreaterThan(0);
    } finally {
      expect(await api.stop()).toBe(0);
    }
  });
});
