import { existsSync, readdirSync } from "node:fs";
import path from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inject } from "vitest";
import { migrateUp } from "../../lib/migrate.js";
import { bringUp, ServicesError } from "../../scripts/services.mjs";
import { freePort, probePort, TestNatsServer } from "../helpers/nats-server.js";
import { databaseUrlFor, startTestServices } from "../setup/global-setup.js";

const root = path.resolve(import.meta.dirname, "../..");
const committed = readdirSync(path.join(root, "migrations/committed"))
  .filter((f) => f.endsWith(".sql"))
  .map((f) => f.split(/[-.]/)[0]);
// No Docker engine in these tests, whatever the machine has: steps 1, 3 and 4 only.
const noDocker = { DOCKER_BIN: "/nonexistent/docker" };
const portOf = (url: string) => Number(new URL(url).port);
const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

async function query<T extends pg.QueryResultRow>(url: string, sql: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(sql)).rows;
  } finally {
    await client.end();
  }
}

let bus: TestNatsServer;
beforeAll(async () => {
  bus = await TestNatsServer.start();
});
afterAll(async () => {
  await bus?.dispose();
});

describe("bringUp step 1: a Postgres and NATS that answer are used as they are", () => {
  it("keeps both URLs and starts nothing", async () => {
    const lines: string[] = [];
    const services = await bringUp({
      who: "t",
      databaseUrl: inject("adminDatabaseUrl"),
      natsUrl: bus.url,
      stateDir: path.join(root, ".data", `unused-${process.pid}`),
      keepState: false,
      log: (l) => lines.push(l),
      env: { ...process.env, ...noDocker },
    });
    expect(services).toMatchObject({ how: "reachable", databaseUrl: inject("adminDatabaseUrl"), natsUrl: bus.url });
    expect(lines.join("\n")).toMatch(/^t: using postgres at 127\.0\.0\.1:\d+ and nats at 127\.0\.0\.1:\d+$/);
    await services.stop();
    expect(existsSync(path.join(root, ".data", `unused-${process.pid}`))).toBe(false);
  });
});

describe("bringUp step 3: without a server or Docker, a private cluster from the machine's binaries", () => {
  it("npm test's setup starts Postgres under .data/, migrations apply with PostGIS, and stop() removes it", async () => {
    const closed = `postgres://postgres@127.0.0.1:${await freePort()}/postgres`;
    const services = await startTestServices({ ...process.env, DATABASE_URL: closed, ...noDocker });
    const stateDir = path.join(root, ".data", `test-${process.pid}`);
    try {
      expect(services.how).toBe("local");
      expect(services.databaseUrl).toMatch(/^postgres:\/\/postgres@127\.0\.0\.1:\d+\/postgres$/);
      expect(services.databaseUrl).not.toBe(closed);
      expect(existsSync(path.join(stateDir, "postgres", "data", "PG_VERSION"))).toBe(true);
      await query(services.databaseUrl, "create database quickstart");
      const url = databaseUrlFor(services.databaseUrl, "quickstart");
      expect((await migrateUp(url)).applied).toEqual(committed);
      const [row] = await query<{ postgis: string; encoding: string }>(url, "select postgis_version() as postgis, current_setting('server_encoding') as encoding");
      expect(row).toMatchObject({ postgis: expect.stringMatching(/^3\./), encoding: "UTF8" });
    } finally {
      await services.stop();
    }
    expect(await probePort(portOf(services.databaseUrl))).toBe(false);
    expect(existsSync(stateDir)).toBe(false);
    // Only the cluster it started was stopped: the server the suite runs on still answers.
    expect(await query(inject("adminDatabaseUrl"), "select 1 as one")).toEqual([{ one: 1 }]);
  });

  it("starts only what is missing: a nats-server with JetStream beside a Postgres that answers", async () => {
    const lines: string[] = [];
    const stateDir = path.join(root, ".data", `nats-${process.pid}`);
    const services = await bringUp({
      who: "t",
      databaseUrl: inject("adminDatabaseUrl"),
      natsUrl: `nats://127.0.0.1:${await freePort()}`,
      stateDir,
      keepState: false,
      log: (l) => lines.push(l),
      env: { ...process.env, ...noDocker },
    });
    const pid = Number(/\(pid (\d+)\)/.exec(lines.join("\n"))?.[1]);
    try {
      expect(services.how).toBe("local");
      expect(services.databaseUrl).toBe(inject("adminDatabaseUrl"));
      expect(isAlive(pid)).toBe(true);
      expect(await probePort(portOf(services.natsUrl!))).toBe(true);
      expect(existsSync(path.join(stateDir, "nats"))).toBe(true);
    } finally {
      await services.stop();
    }
    expect(isAlive(pid)).toBe(false);
    expect(await probePort(portOf(services.natsUrl!))).toBe(false);
    expect(existsSync(stateDir)).toBe(false);
  });
});

describe("bringUp step 4: nothing to use or start", () => {
  const missing = { PG_BIN: "/nonexistent/pg", NATS_SERVER_BIN: "/nonexistent/nats-server", ...noDocker };

  it("fails with one line naming the packages to install, or Docker", async () => {
    const attempt = bringUp({
      who: "dev",
      databaseUrl: `postgres://postgres@127.0.0.1:${await freePort()}/animal_safety`,
      natsUrl: `nats://127.0.0.1:${await freePort()}`,
      stateDir: path.join(root, ".data", `none-${process.pid}`),
      keepState: false,
      log: () => undefined,
      env: { ...process.env, ...missing },
    });
    await expect(attempt).rejects.toBeInstanceOf(ServicesError);
    const message = await attempt.catch((err: Error) => err.message);
    expect(message).not.toContain("\n");
    expect(message).toMatch(
      /^dev: no Postgres with PostGIS and no NATS with JetStream to use or start: install (postgresql-\d+-postgis-3) and nats-server \(apt-get install -y --no-install-recommends \1 nats-server\) or start Docker$/,
    );
  });

  it("npm test's setup reports it as a single line, without a stack", async () => {
    const closed = `postgres://postgres@127.0.0.1:${await freePort()}/postgres`;
    const err = await startTestServices({ ...process.env, DATABASE_URL: closed, ...missing }).catch((e: Error) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).stack).toMatch(/^test: no Postgres with PostGIS to use or start: install postgresql-\d+-postgis-3 \(apt-get install -y --no-install-recommends postgresql-\d+-postgis-3\) or start Docker$/);
  });
});
