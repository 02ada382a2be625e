import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { as, buildTestApi, devEnv, type TestApi } from "../helpers/app.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";
import { freePort, startTestBus, type TestBus } from "../helpers/nats.js";
import { ServiceProcess } from "../helpers/processes.js";

let db: TestDatabase;
let bus: TestBus;
let healthy: TestApi;
let noDatabase: TestApi;

beforeAll(async () => {
  db = await createTestDatabase();
  bus = await startTestBus();
  healthy = await buildTestApi(devEnv(db.url, bus.url));
  // A database address where nothing listens: connection refused, as during an outage.
  noDatabase = await buildTestApi(devEnv(`postgres://postgres@127.0.0.1:${await freePort()}/nowhere`, bus.url));
});

afterAll(async () => {
  await healthy?.close();
  await noDatabase?.close();
  await bus?.dispose();
  await db?.drop();
});

describe("/healthz confirms only that the process answers", () => {
  it("returns 200 {status: ok} even when the database is unreachable", async () => {
    for (const api of [healthy, noDatabase]) {
      const res = await api.app.inject({ method: "GET", url: "/healthz" });
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({ status: "ok" });
    }
  });
});

describe("/readyz checks the database within 2 seconds", () => {
  it("returns 200 {status: ready} when the database answers", async () => {
    const res = await healthy.app.inject({ method: "GET", url: "/readyz" });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ status: "ready" });
  });

  it("returns 503 with a not-ready problem body when the database is unreachable", async () => {
    const res = await noDatabase.app.inject({ method: "GET", url: "/readyz" });
    expect(res.statusCode).toBe(503);
    expect(res.headers["content-type"]).toMatch(/^application\/problem\+json/);
    expect(res.json()).toMatchObject({
      type: "https://problems.animal-safety.example/not-ready",
      title: "Not ready",
      status: 503,
    });
  });
});

describe("a write while the database is unreachable fails fast with a 503 problem", () => {
  it("answers POST /v1/safety/lost-reports with 503 service-unavailable, not a 500 or a hang", async () => {
    const res = await noDatabase.app.inject({
      method: "POST",
      url: "/v1/safety/lost-reports",
      headers: as("someone"),
      payload: { animal: { species: "cat" }, lastSeenAt: "2026-11-20T08:00:00Z", location: { lat: 1, lon: 2 } },
    });
    expect(res.statusCode).toBe(503);
    expect(res.json()).toMatchObject({ type: "https://problems.animal-safety.example/service-unavailable", status: 503 });
    expect(res.headers["retry-after"]).toBeDefined();
  });
});

describe("the relay serves /healthz and /readyz on its health port; readiness is the database only", () => {
  it("answers ok and ready while its database is up", async () => {
    const port = await freePort();
    const relay = ServiceProcess.start("relay", devEnv(db.url, bus.url, { RELAY_HEALTH_ADDR: `127.0.0.1:${port}`, LOG_LEVEL: "info" }));
    try {
      await relay.waitForLog((l) => l.msg === "relay: started");
      const health = await fetch(`http://127.0.0.1:${port}/healthz`);
      expect(health.status).toBe(200);
      expect(await health.json()).toEqual({ status: "ok" });
      const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
      expect(ready.status).toBe(200);
      expect(await ready.json()).toEqual({ status: "ready" });
    } finally {
      expect(await relay.stop()).toBe(0);
    }
  });
});
