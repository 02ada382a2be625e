import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadApiConfig } from "../../lib/config.js";
import { checkRoleSettings, createPool, RoleSettingsError, roleSettingsStatements, withTransaction, type Pool } from "../../lib/db.js";
import { devEnv } from "../helpers/app.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";
import { freePort, startTestBus, waitForPort } from "../helpers/nats.js";
import { startPgBouncer, type PgBouncer } from "../helpers/pgbouncer.js";
import { ServiceProcess } from "../helpers/processes.js";

const logger = pino({ level: "silent" });
let db: TestDatabase;
let bouncer: PgBouncer;
const pools: Pool[] = [];

/** A pool of the kind lib/db.ts makes, closed after the file. */
function pool(connectionString: string, options: Partial<Parameters<typeof createPool>[0]> = {}): Pool {
  const made = createPool({ connectionString, max: 1, applicationName: "pgbouncer-test", logger, ...options });
  pools.push(made);
  return made;
}

beforeAll(async () => {
  db = await createTestDatabase();
  const server = new URL(db.url);
  // One server connection per database: every client shares it, as busy clients of a small pool do.
  bouncer = await startPgBouncer({ upstream: { host: server.hostname, port: Number(server.port || 5432) }, poolSize: 1 });
});

afterAll(async () => {
  await Promise.all(pools.map((p) => p.end().catch(() => undefined)));
  await bouncer?.stop();
  await db?.drop();
});

const preparedCount = async (p: Pool, name: string) =>
  (await p.query<{ n: number }>(`select count(*)::int as n from pg_prepared_statements where name = $1`, [name])).rows[0]!.n;

describe("DATABASE_NAMED_STATEMENTS", () => {
  it("is true by default and false when set so", () => {
    const env = { API_ENV: "development", DATABASE_URL: db.url, NATS_URL: "nats://127.0.0.1:4222" };
    expect(loadApiConfig(env).DATABASE_NAMED_STATEMENTS).toBe(true);
    expect(loadApiConfig({ ...env, DATABASE_NAMED_STATEMENTS: "false" }).DATABASE_NAMED_STATEMENTS).toBe(false);
    expect(() => loadApiConfig({ ...env, DATABASE_NAMED_STATEMENTS: "no" })).toThrow(/DATABASE_NAMED_STATEMENTS/);
  });

  it("false: a query's name is dropped, so no statement is prepared on the connection; true keeps it", async () => {
    const unnamed = pool(db.url, { namedStatements: false });
    const result = await unnamed.query({ name: "probe_unnamed", text: "select $1::int + 1 as n", values: [41] });
    expect(result.rows).toEqual([{ n: 42 }]);
    // In a transaction too: the client withTransaction hands out is the pool's.
    await withTransaction(unnamed, (client) => client.query({ name: "probe_unnamed", text: "select 1" }));
    expect(await preparedCount(unnamed, "probe_unnamed")).toBe(0);

    const named = pool(db.url);
    await named.query({ name: "probe_named", text: "select $1::int + 1 as n", values: [41] });
    expect(await preparedCount(named, "probe_named")).toBe(1);
  });

  it("explains the setting: in transaction pooling a named statement meets another client's on the shared server connection", async () => {
    const url = bouncer.through(db.url);
    const settings = { sessionSettings: "role" as const };
    // Two clients of pgbouncer, one server connection (poolSize 1): the second client's pg has not prepared "lookup" and sends its Parse.
    const first = pool(url, settings);
    const second = pool(url, settings);
    await first.query({ name: "lookup", text: "select 1 as n" });
    await expect(second.query({ name: "lookup", text: "select 2 as n" })).rejects.toMatchObject({ code: "42P05" });

    const firstUnnamed = pool(url, { ...settings, namedStatements: false });
    const secondUnnamed = pool(url, { ...settings, namedStatements: false });
    expect((await firstUnnamed.query({ name: "lookup", text: "select 1 as n" })).rows).toEqual([{ n: 1 }]);
    expect((await secondUnnamed.query({ name: "lookup", text: "select 2 as n" })).rows).toEqual([{ n: 2 }]);
  });
});

describe("DATABASE_SESSION_SETTINGS", () => {
  it("startup (the default), straight to Postgres: statement_timeout and jit=off come as startup parameters, as before", async () => {
    const direct = pool(db.url);
    const { rows } = await direct.query(`select current_setting('statement_timeout') as st, current_setting('jit') as jit`);
    expect(rows[0]).toEqual({ st: "10s", jit: "off" });
  });

  it("startup through PgBouncer: the connection is refused for its startup parameters", async () => {
    const refused = pool(bouncer.through(db.url));
    await expect(refused.query("select 1")).rejects.toThrow(/unsupported startup parameter/);
  });

  it("role through PgBouncer: refused at the check until the role has the settings, then every statement has them", async () => {
    // A database of its own: role settings here touch no other file's.
    const own = await createTestDatabase();
    try {
      const through = pool(bouncer.through(own.url), { sessionSettings: "role", namedStatements: false });
      const refusal = await checkRoleSettings(through, logger).then(
        () => null,
        (err: unknown) => err,
      );
      expect(refusal).toBeInstanceOf(RoleSettingsError);
      expect((refusal as Error).message).toMatch(/statement_timeout=0 .*alter role "postgres" set statement_timeout = '10s'; alter role "postgres" set jit = 'off'/);

      for (const statement of roleSettingsStatements("postgres", own.name)) await own.pool.query(statement);
      // PgBouncer's server connection logged in before the settings: a new one reads them (server_lifetime, or here a reconnect).
      await bouncer.admin(`RECONNECT ${own.name}`);
      await checkRoleSettings(through, logger);
      const { rows } = await through.query(`select current_setting('statement_timeout') as st, current_setting('jit') as jit`);
      expect(rows[0]).toEqual({ st: "10s", jit: "off" });
      // A transaction's `set local` ends with it: the next client of the same server connection has the role's value again.
      await withTransaction(through, (client) => client.query(`set local statement_timeout = '1s'`));
      const after = pool(bouncer.through(own.url), { sessionSettings: "role" });
      expect((await after.query(`select current_setting('statement_timeout') as st`)).rows[0]).toEqual({ st: "10s" });
      await Promise.all([through.end(), after.end()]);
    } finally {
      await own.drop();
    }
  });

  it("an unreachable database is logged, not refused, at the check", async () => {
    const warnings: string[] = [];
    const capture = pino({ level: "warn" }, { write: (line: string) => void warnings.push(JSON.parse(line).msg) });
    const unreachable = pool("postgres://postgres@127.0.0.1:1/none", { sessionSettings: "role" });
    await checkRoleSettings(unreachable, capture);
    expect(warnings).toContain("db: role settings not checked: the database is unreachable");
  });

  it("the API process (api/main.ts) behind PgBouncer exits 1 naming the statements while its role lacks them, and serves once it has them", async () => {
    const own = await createTestDatabase();
    const bus = await startTestBus();
    const env = (httpPort: number) =>
      devEnv(bouncer.through(own.url), bus.url, {
        API_HTTP_ADDR: `127.0.0.1:${httpPort}`,
        LOG_LEVEL: "info",
        DATABASE_NAMED_STATEMENTS: "false",
        DATABASE_SESSION_SETTINGS: "role",
      });
    let api: ServiceProcess | undefined;
    try {
      api = ServiceProcess.start("api", env(await freePort()));
      expect(await api.exited).toBe(1);
      const fatal = api.lines.find((line) => line.level === 60);
      expect(String(fatal?.msg)).toMatch(/^database role settings: .*statement_timeout=0 .*alter role "postgres" set statement_timeout = '10s'/);

      for (const statement of roleSettingsStatements("postgres", own.name)) await own.pool.query(statement);
      await bouncer.admin(`RECONNECT ${own.name}`);
      const port = await freePort();
      api = ServiceProcess.start("api", env(port));
      await waitForPort(port, 60_000);
      const health = await fetch(`http://127.0.0.1:${port}/readyz`);
      expect(health.status, await health.text()).toBe(200);
    } finally {
      await api?.stop();
      await bus.dispose();
      await bouncer.admin(`KILL ${own.name}`);
      await own.drop();
    }
  });
});
