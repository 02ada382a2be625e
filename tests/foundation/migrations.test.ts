import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pg from "pg";
import { assertMigrated } from "../../lib/migrate.js";
import pino from "pino";
import { createPool } from "../../lib/db.js";
import { OUTBOX_WAKE_CHANNEL, WAKE_RELAY_BY_BUS } from "../../lib/outbox.js";
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

/** A connection listening where the outbox trigger notifies, and the channels it heard. */
async function listenOnTheRelaysChannel(): Promise<{ listener: pg.Client; received: string[] }> {
  const listener = new pg.Client({ connectionString: db.url });
  await listener.connect();
  const received: string[] = [];
  listener.on("notification", (n) => received.push(n.channel));
  await listener.query(`listen ${OUTBOX_WAKE_CHANNEL}`);
  return { listener, received };
}

describe("an outbox insert wakes the relay on commit", () => {
  it("notifies the relay's channel once per committing transaction, never for a rolled-back insert, and queues no job", async () => {
    const { listener, received } = await listenOnTheRelaysChannel();
    const client = await db.pool.connect();
    try {
      await client.query("begin");
      await client.query(`insert into outbox_event (type) values ('events.animal.lost_reported.v1')`);
      await client.query("rollback");
      // Sent on commit, so a rollback has nothing in flight: a round trip on the listener settles it.
      await listener.query("select 1");
      expect(received).toEqual([]);

      await client.query("begin");
      await client.query(`insert into outbox_event (type) values ('events.animal.lost_reported.v1')`);
      await client.query(`insert into outbox_event (type) values ('events.animal.lost_reported.v1')`);
      await client.query("commit");
      await eventually(async () => (received.length > 0 ? true : undefined), 5_000, 10);
      await listener.query("select 1");
      expect(received).toEqual([OUTBOX_WAKE_CHANNEL]);
      const jobs = await client.query(`select count(*)::int as n from graphile_worker.jobs`);
      expect(jobs.rows[0].n).toBe(0);
    } finally {
      client.release();
      await listener.end();
    }
  });

  it("does not notify from a connection that wakes the relay over the bus (the API's)", async () => {
    const { listener, received } = await listenOnTheRelaysChannel();
    const byBus = createPool({ connectionString: db.url, max: 1, applicationName: "api-test", logger: pino({ level: "silent" }), settings: WAKE_RELAY_BY_BUS });
    try {
      const inserted = await byBus.query(`insert into outbox_event (type) values ('events.animal.lost_reported.v1') returning id`);
      // Notifications arrive in commit order: once a later commit's has come, an earlier one would have.
      await db.pool.query(`insert into outbox_event (type) values ('events.animal.found_reported.v1')`);
      await eventually(async () => (received.length > 0 ? true : undefined), 5_000, 10);
      await listener.query("select 1");
      expect(received).toEqual([OUTBOX_WAKE_CHANNEL]);
      const { rows } = await db.pool.query(`select count(*)::int as n from outbox_event where id = $1`, [inserted.rows[0].id]);
      expect(rows[0].n).toBe(1);
    } finally {
      await byBus.end();
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
