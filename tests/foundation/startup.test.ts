import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { devEnv } from "../helpers/app.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";
import { freePort, probePort, waitForPort } from "../helpers/nats.js";
import { ServiceProcess } from "../helpers/processes.js";

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
});

async function portIsOpen(port: number): Promise<boolean> {
  return waitForPort(port, 300).then(
    () => true,
    () => false,
  );
}

/**
 * Probes the port every 20 ms for as long as the process lives. A check made
 * only after exit cannot see a port that was open for a moment and closed
 * again on the way down; this one can.
 */
async function watchPortWhileAlive(port: number, service: ServiceProcess): Promise<{ probes: number; opened: boolean }> {
  let alive = true;
  void service.exited.then(() => (alive = false));
  let probes = 0;
  let opened = false;
  while (alive) {
    if (await probePort(port)) opened = true;
    probes++;
    await new Promise((r) => setTimeout(r, 20));
  }
  return { probes, opened };
}

function fatalLine(process: ServiceProcess): Record<string, unknown> | undefined {
  return process.lines.find((l) => l.level === 60);
}

describe("a process that cannot reach the bus at startup exits 1 before serving health", () => {
  it("API: logs a fatal line beginning 'event publisher', exits 1, and never opens its port", async () => {
    const httpPort = await freePort();
    const deadBus = `nats://127.0.0.1:${await freePort()}`;
    const api = ServiceProcess.start("api", devEnv(db.url, deadBus, { API_HTTP_ADDR: `127.0.0.1:${httpPort}`, LOG_LEVEL: "info" }));
    const watched = await watchPortWhileAlive(httpPort, api);
    expect(await api.exited).toBe(1);
    expect(String(fatalLine(api)?.msg)).toMatch(/^event publisher/);
    // Probed many times while the process was up, so the check covered its whole life, not just the aftermath.
    expect(watched.probes).toBeGreaterThan(5);
    expect(watched.opened).toBe(false);
    expect(await portIsOpen(httpPort)).toBe(false);
  });

  it("relay: logs a fatal line beginning 'relay: connect', exits 1, and never opens its health port", async () => {
    const healthPort = await freePort();
    const deadBus = `nats://127.0.0.1:${await freePort()}`;
    const relay = ServiceProcess.start("relay", devEnv(db.url, deadBus, { RELAY_HEALTH_ADDR: `127.0.0.1:${healthPort}`, LOG_LEVEL: "info" }));
    const watched = await watchPortWhileAlive(healthPort, relay);
    expect(await relay.exited).toBe(1);
    expect(String(fatalLine(relay)?.msg)).toMatch(/^relay: connect/);
    expect(watched.probes).toBeGreaterThan(5);
    expect(watched.opened).toBe(false);
    expect(await portIsOpen(healthPort)).toBe(false);
  });
});

describe("configuration outside development fails hard on missing security-sensitive settings", () => {
  const production = (extra: Record<string, string>) => ({
    API_ENV: "production",
    DATABASE_URL: db.url,
    NATS_URL: "nats://127.0.0.1:4222",
    API_HTTP_ADDR: "127.0.0.1:0",
    AUTH_JWKS_URL: "https://idp.example/.well-known/jwks.json",
    AUTH_ISSUER: "https://idp.example/",
    AUTH_AUDIENCE: "animal-safety",
    API_CORS_ORIGINS: "https://app.example",
    OBJECT_STORAGE_ENDPOINT: "https://s3.example",
    OBJECT_STORAGE_BUCKET: "photos",
    OBJECT_STORAGE_ACCESS_KEY_ID: "id",
    OBJECT_STORAGE_SECRET_ACCESS_KEY: "secret",
    PUBLIC_BASE_URL: "https://share.example",
    VAPID_PUBLIC_KEY: "BC6apSkxwqDM4prWYpjQVFHGAq6VSYlQIRcA9igLV9MiWIUPvDEn8-m4ykMIoAN-HgRtVRtAMeLQ-_LtoQFxZMg",
    ...extra,
  });

  it.each([
    ["AUTH_JWKS_URL"],
    ["AUTH_AUDIENCE"],
    ["API_CORS_ORIGINS"],
    ["OBJECT_STORAGE_SECRET_ACCESS_KEY"],
  ])("exits 1 with message 'fatal' naming %s when it is missing", async (setting) => {
    const env = production({});
    delete (env as Record<string, string | undefined>)[setting];
    const api = ServiceProcess.start("api", env);
    expect(await api.exited).toBe(1);
    const line = fatalLine(api);
    expect(line?.msg).toBe("fatal");
    expect(line?.setting).toBe(setting);
    expect(JSON.stringify(line?.err)).toContain(setting);
  });

  it("exits 1 naming API_DEV_AUTH_BYPASS when the bypass is enabled outside development", async () => {
    const api = ServiceProcess.start("api", production({ API_DEV_AUTH_BYPASS: "true" }));
    expect(await api.exited).toBe(1);
    expect(fatalLine(api)).toMatchObject({ msg: "fatal", setting: "API_DEV_AUTH_BYPASS" });
  });

  it("exits 1 naming DATABASE_URL when it is missing, in any environment", async () => {
    const relay = ServiceProcess.start("relay", { API_ENV: "development", NATS_URL: "nats://127.0.0.1:4222" });
    expect(await relay.exited).toBe(1);
    expect(fatalLine(relay)).toMatchObject({ msg: "fatal", setting: "DATABASE_URL" });
  });
});
