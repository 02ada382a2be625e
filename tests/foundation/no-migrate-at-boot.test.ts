import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { devEnv } from "../helpers/app.js";
import { freePort, startTestBus, waitForPort, type TestBus } from "../helpers/nats.js";
import { ServiceProcess, type ProcessName } from "../helpers/processes.js";
import { databaseUrlFor } from "../setup/global-setup.js";

// A database `api migrate up` never ran on: plain `create database`, not the migrated template.
const emptyName = `ass_t_empty_${process.pid}_${randomBytes(4).toString("hex")}`;
let emptyUrl: string;
let bus: TestBus;
let admin: pg.Client;

beforeAll(async () => {
  admin = new pg.Client({ connectionString: inject("adminDatabaseUrl") });
  await admin.connect();
  await admin.query(`create database ${emptyName}`);
  emptyUrl = databaseUrlFor(inject("adminDatabaseUrl"), emptyName);
  bus = await startTestBus();
});

afterAll(async () => {
  await bus?.dispose();
  await admin?.query(`drop database if exists ${emptyName} with (force)`);
  await admin?.end();
});

interface SchemaState {
  migrations: boolean;
  worker: boolean;
  /** Every schema-qualified table, so any other DDL at boot shows up too. */
  tables: string[];
}

async function schemaState(): Promise<SchemaState> {
  const client = new pg.Client({ connectionString: emptyUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ migrations: boolean; worker: boolean }>(
      `select to_regclass('public.schema_migrations') is not null as migrations,
              to_regnamespace('graphile_worker') is not null as worker`,
    );
    const tables = await client.query<{ name: string }>(
      `select table_schema || '.' || table_name as name
         from information_schema.tables
        where table_schema not in ('pg_catalog', 'information_schema')
        order by 1`,
    );
    return { migrations: rows[0]!.migrations, worker: rows[0]!.worker, tables: tables.rows.map((r) => r.name) };
  } finally {
    await client.end();
  }
}

/** The exit code, or "still running" (and the process killed) when it serves on instead of refusing. */
async function exitWithin(service: ServiceProcess, timeoutMs: number): Promise<number | null | "still running"> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<"still running">((resolve) => (timer = setTimeout(() => resolve("still running"), timeoutMs)));
  const result = await Promise.race([service.exited, timeout]);
  clearTimeout(timer);
  if (result === "still running") {
    service.signal("SIGKILL");
    await service.exited;
  }
  return result;
}

describe("no process migrates at boot: a worker process refuses an unmigrated database", () => {
  it.each([
    ["relay", "RELAY_HEALTH_ADDR"],
    ["notifier", "NOTIFIER_HEALTH_ADDR"],
  ] as const)(
    "%s exits 1 with a fatal line naming `api migrate up`, and leaves the database without schema_migrations or graphile_worker",
    async (name: ProcessName, healthSetting) => {
      const before = await schemaState();
      expect(before).toMatchObject({ migrations: false, worker: false });

      const service = ServiceProcess.start(
        name,
        devEnv(emptyUrl, bus.url, { [healthSetting]: `127.0.0.1:${await freePort()}`, LOG_LEVEL: "info" }),
      );
      const code = await exitWithin(service, 15_000);
      expect(code).toBe(1);
      const fatal = service.lines.find((l) => l.level === 60);
      expect(String(fatal?.msg)).toMatch(new RegExp(`^${name}: database:`));
      expect(String(fatal?.msg)).toContain("`api migrate up`");

      expect(await schemaState()).toEqual(before);
    },
    30_000,
  );
});

describe("no process migrates at boot: the API serves on an unmigrated database without touching its schema", () => {
  // The API never queries the database while it boots (no worker, no schema
  // check: its first query is a request's), so it starts here and the failure
  // shows up per request instead. What matters is that it changes nothing.
  it("starts listening and leaves the schema exactly as it found it", async () => {
    const before = await schemaState();
    const port = await freePort();
    const api = ServiceProcess.start("api", devEnv(emptyUrl, bus.url, { API_HTTP_ADDR: `127.0.0.1:${port}`, LOG_LEVEL: "info" }));
    try {
      await waitForPort(port, 20_000);
      expect(await schemaState()).toEqual(before);
    } finally {
      expect(await api.stop()).toBe(0);
    }
    expect(await schemaState()).toEqual(before);
  }, 30_000);
});
