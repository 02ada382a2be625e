import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pg from "pg";
import { assertMigrated } from "../../lib/migrate.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";
import { eventually } from "../helpers/stream.js";

const run = promisify(execFile);
let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
});

describe("migrations are applied by an explicit step and tracked in schema_migrations", () => {
  it("lists one row per applied migration in schema_migrations", async () => {
    const { rows } = await db.pool.query(`select filename, hash from schema_migrations order by filename`);
    expect(rows.length).toBeGreaterThanOrEqual(1);
    expect(rows[0]).toMatchObject({ filename: "000001.sql", hash: expect.stringMatching(/^sha1:/) });
  });

  it("`api migrate status` reports every committed migration as applied and none pending", async () => {
    const { stdout } = await run(process.execPath, ["bin/api", "migrate", "status"], {
      env: { ...process.env, DATABASE_URL: db.url },
    });
    const status = JSON.parse(stdout);
    expect(status.pending).toEqual([]);
    expect(status.applied).toContain("000001.sql");
  });

  it("`api migrate up` is idempotent on an up-to-date database", async () => {
    await run(process.execPath, ["bin/api", "migrate", "up"], { env: { ...process.env, DATABASE_URL: db.url } });
    const { rows } = await db.pool.query(`select count(*)::int as n from schema_migrations`);
    expect(rows[0].n).toBeGreaterThanOrEqual(1);
  });

  it("enables PostGIS and installs graphile-worker's schema", async () => {
    const { rows } = await db.pool.query(
      `select (select extversion from pg_extension where extname = 'postgis') as postgis,
              to_regproc('graphile_worker.add_job') is not null as worker`,
    );
    expect(rows[0].postgis).toMatch(/^3\./);
    expect(rows[0].worker).toBe(true);
  });
});

describe("audit_event is append-only, enforced by the database", () => {
  it("rejects UPDATE, DELETE and TRUNCATE of audit rows", async () => {
    await db.pool.query(
      `insert into audit_event (actor_id, object_type, object_id, action) values ('a', 'account', 'b', 'admin.account_suspended')`,
    );
    await expect(db.pool.query(`update audit_event set actor_id = 'x'`)).rejects.toThrow(/append-only/);
    await expect(db.pool.query(`delete from audit_event`)).rejects.toThrow(/append-only/);
    await expect(db.pool.query(`truncate audit_event`)).rejects.toThrow(/append-only/);
    const { rows } = await db.pool.query(`select actor_id from audit_event`);
    expect(rows).toEqual([{ actor_id: "a" }]);
  });
});

/** The channel the outbox trigger notified from migration 000010 until 000012 removed it. */
const FORMER_WAKE_CHANNEL = "outbox_event_inserted";

describe("an outbox insert wakes nobody from inside Postgres: writers wake the relay over the bus", () => {
  it("commits an outbox row with no trigger, no notification on the former channel and no job", async () => {
    const listener = new pg.Client({ connectionString: db.url });
    await listener.connect();
    const received: string[] = [];
    listener.on("notification", (n) => received.push(n.channel));
    await listener.query(`listen ${FORMER_WAKE_CHANNEL}`);
    await listener.query(`listen outbox_probe`);
    try {
      await db.pool.query(`insert into outbox_event (type) values ('events.animal.lost_reported.v1')`);
      // Notifications arrive in commit order: once a later commit's has come, an earlier one would have.
      await db.pool.query(`select pg_notify('outbox_probe', '')`);
      await eventually(async () => (received.length > 0 ? true : undefined), 5_000, 10);
      await listener.query("select 1");
      expect(received).toEqual(["outbox_probe"]);
      const { rows } = await db.pool.query(
        `select (select count(*)::int from pg_trigger where tgrelid = 'outbox_event'::regclass and not tgisinternal) as triggers,
                to_regproc('outbox_event__wake_relay') is null as "functionGone",
                (select count(*)::int from graphile_worker.jobs) as jobs`,
      );
      expect(rows[0]).toEqual({ triggers: 0, functionGone: true, jobs: 0 });
    } finally {
      await listener.end();
    }
  });
});

describe("the relay's and the notifier's boot check accepts only a database `api migrate up` prepared", () => {
  it("accepts the migrated database", async () => {
    await expect(assertMigrated(db.pool)).resolves.toBeUndefined();
  });

  // DDL is transactional: each half is dropped inside a transaction that is rolled back.
  it.each([
    ["schema_migrations", "drop view schema_migrations"],
    ["graphile_worker", "drop schema graphile_worker cascade"],
  ])("rejects it, naming `api migrate up`, when %s is missing", async (_missing, drop) => {
    const client = await db.pool.connect();
    try {
      await client.query("begin");
      await client.query(drop);
      await expect(assertMigrated(client)).rejects.toThrow("run `api migrate up` first");
    } finally {
      await client.query("rollback");
      client.release();
    }
    await expect(assertMigrated(db.pool)).resolves.toBeUndefined();
  });
});
