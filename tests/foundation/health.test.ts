import { createServer, type Socket } from "node:net";
import pg from "pg";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createPool } from "../../lib/db.js";
import { startHealthServer } from "../../lib/health.js";
import { as, buildTestApi, devEnv, type TestApi } from "../helpers/app.js";
import type { TestDatabase } from "../helpers/db.js";
import { startHarness, type Harness } from "../helpers/harness.js";
import { freePort, type TestBus } from "../helpers/nats.js";
import { ServiceProcess } from "../helpers/processes.js";
import { eventually } from "../helpers/stream.js";

let h: Harness;
let db: TestDatabase;
let bus: TestBus;
let healthy: TestApi;
let noDatabase: TestApi;

beforeAll(async () => {
  h = await startHarness();
  ({ db, bus, api: healthy } = h);
  // A database address where nothing listens: connection refused, as during an outage.
  noDatabase = await buildTestApi(devEnv(`postgres://postgres@127.0.0.1:${await freePort()}/nowhere`, bus.url));
});

afterAll(async () => {
  await noDatabase?.close();
  await h?.close();
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
    expect(res.json()).toMatchObject(notReadyBody);
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

const notReadyBody = {
  type: "https://problems.animal-safety.example/not-ready",
  title: "Not ready",
  status: 503,
};

interface HungPostgres {
  url: string;
  accepted: () => number;
  open: () => number;
  close: () => Promise<void>;
}

/**
 * A TCP listener standing in for a hung Postgres. `silent` accepts and never
 * sends a byte; `after-handshake` answers the startup message with
 * AuthenticationOk and ReadyForQuery, so the client is connected, and then
 * never answers a query.
 */
async function startHungPostgres(mode: "silent" | "after-handshake"): Promise<HungPostgres> {
  const sockets = new Set<Socket>();
  let accepted = 0;
  const server = createServer((socket) => {
    accepted++;
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => undefined);
    // Read (and drop) whatever the client sends, so its hang-up is seen.
    socket.resume();
    if (mode === "after-handshake") {
      socket.once("data", () => {
        // 'R' len=8 code=0 (AuthenticationOk), then 'Z' len=5 'I' (ReadyForQuery, idle).
        socket.write(Buffer.from([0x52, 0, 0, 0, 8, 0, 0, 0, 0, 0x5a, 0, 0, 0, 5, 0x49]));
      });
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `postgres://postgres@127.0.0.1:${port}/hung`,
    accepted: () => accepted,
    open: () => sockets.size,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

describe("/readyz keeps its 2-second deadline when the database accepts connections but never answers", () => {
  it.each(["silent", "after-handshake"] as const)(
    "answers 503 not-ready within its deadline (%s server) and lets go of the hung connection",
    async (mode) => {
      const hung = await startHungPostgres(mode);
      const api = await buildTestApi(devEnv(hung.url, bus.url));
      try {
        // The server never answers: an answer at all is the deadline at work.
        const res = await api.app.inject({ method: "GET", url: "/readyz" });
        expect(res.statusCode).toBe(503);
        expect(res.headers["content-type"]).toMatch(/^application\/problem\+json/);
        expect(res.json()).toMatchObject(notReadyBody);
        // The probe reached the hung server (not a refused connection).
        expect(hung.accepted()).toBeGreaterThanOrEqual(1);
        // A missed deadline destroys the connection, so probes never pin pool clients.
        await eventually(async () => (hung.open() === 0 ? true : undefined), 5_000);
        expect(api.pool.totalCount).toBe(0);
      } finally {
        await hung.close();
        await api.close();
      }
    },
    15_000,
  );
});

describe("the relay's /readyz reports 503 while its database is unreachable, and recovers", () => {
  it("answers 503 not-ready once its database refuses connections, and ready again after", async () => {
    const port = await freePort();
    const relay = ServiceProcess.start("relay", devEnv(db.url, bus.url, { RELAY_HEALTH_ADDR: `127.0.0.1:${port}`, LOG_LEVEL: "info" }));
    const admin = new pg.Client({ connectionString: inject("adminDatabaseUrl") });
    await admin.connect();
    try {
      await relay.waitForLog((l) => l.msg === "relay: started");
      expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(200);

      // An outage of this database only: new connections refused, live ones ended.
      await admin.query(`alter database ${db.name} allow_connections false`);
      await admin.query(`select pg_terminate_backend(pid) from pg_stat_activity where datname = $1`, [db.name]);
      const down = await fetch(`http://127.0.0.1:${port}/readyz`);
      expect(down.status).toBe(503);
      expect(down.headers.get("content-type")).toMatch(/^application\/problem\+json/);
      expect(await down.json()).toMatchObject(notReadyBody);
      const health = await fetch(`http://127.0.0.1:${port}/healthz`);
      expect(health.status).toBe(200);

      await admin.query(`alter database ${db.name} allow_connections true`);
      await eventually(async () => ((await fetch(`http://127.0.0.1:${port}/readyz`)).status === 200 ? true : undefined), 10_000);
      expect(relay.child.exitCode).toBeNull();
    } finally {
      await admin.query(`alter database ${db.name} allow_connections true`);
      await admin.end();
      expect(await relay.stop()).toBe(0);
    }
  }, 40_000);
});

describe("the health server the relay and the notifier share reports readiness from its pool", () => {
  it("serves /healthz 200 always, and /readyz 200 or 503 not-ready by whether the database answers", async () => {
    const logger = pino({ level: "silent" });
    const pools = {
      up: createPool({ connectionString: db.url, max: 1, applicationName: "health-test", logger }),
      down: createPool({ connectionString: `postgres://postgres@127.0.0.1:${await freePort()}/nowhere`, max: 1, applicationName: "health-test", logger }),
    };
    const servers = await Promise.all(
      Object.values(pools).map(async (pool) =>
        startHealthServer({ host: "127.0.0.1", port: await freePort(), pool, logger, problemBaseUrl: "https://problems.example" }),
      ),
    );
    try {
      const [up, down] = servers.map((server) => `http://127.0.0.1:${(server.server.address() as { port: number }).port}`);
      for (const base of [up, down]) {
        const res = await fetch(`${base}/healthz`);
        expect(res.status).toBe(200);
        expect(await res.json()).toEqual({ status: "ok" });
      }
      const ready = await fetch(`${up}/readyz`);
      expect(ready.status).toBe(200);
      expect(await ready.json()).toEqual({ status: "ready" });
      const notReady = await fetch(`${down}/readyz`);
      expect(notReady.status).toBe(503);
      expect(notReady.headers.get("content-type")).toMatch(/^application\/problem\+json/);
      expect(await notReady.json()).toMatchObject({ type: "https://problems.example/not-ready", title: "Not ready", status: 503 });
    } finally {
      await Promise.all(servers.map((server) => server.close()));
      await Promise.all(Object.values(pools).map((pool) => pool.end()));
    }
  });
});
