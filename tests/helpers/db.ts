import { randomBytes } from "node:crypto";
import pg from "pg";
import { inject } from "vitest";
import { databaseUrlFor } from "../setup/global-setup.js";

export interface TestDatabase {
  url: string;
  name: string;
  pool: pg.Pool;
  drop(): Promise<void>;
}

/**
 * A fresh database cloned from the migrated template: each test file gets
 * its own, so files run in parallel without seeing each other's rows.
 * KEEP_TEST_DB=1 keeps it after the run for inspection.
 */
export async function createTestDatabase(): Promise<TestDatabase> {
  const adminUrl = inject("adminDatabaseUrl");
  const template = inject("templateDatabase");
  const name = `ass_t_${process.pid}_${randomBytes(4).toString("hex")}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`create database ${name} template ${template}`);
  } finally {
    await admin.end();
  }
  const url = databaseUrlFor(adminUrl, name);
  const pool = new pg.Pool({ connectionString: url, max: 3 });
  // `drop database … with (force)` may end an idle client that pool.end() is still closing.
  pool.on("error", () => undefined);
  return {
    url,
    name,
    pool,
    async drop() {
      await pool.end();
      if (process.env.KEEP_TEST_DB === "1") return;
      const client = new pg.Client({ connectionString: adminUrl });
      await client.connect();
      try {
        await client.query(`drop database if exists ${name} with (force)`);
      } finally {
        await client.end();
      }
    },
  };
}

/**
 * Runs `run` while every insert into audit_event fails, to show that a
 * mutation and its audit event commit or roll back together.
 */
export async function withFailingAuditInsert<T>(db: pg.Pool, run: () => Promise<T>): Promise<T> {
  await db.query(`
    create function test_reject_audit() returns trigger language plpgsql as $$
    begin raise exception 'audit write failed'; end $$;
    create trigger test_reject_audit before insert on audit_event for each row execute function test_reject_audit();
  `);
  try {
    return await run();
  } finally {
    await db.query(`drop trigger test_reject_audit on audit_event; drop function test_reject_audit();`);
  }
}

/**
 * Relay connections held on their markPublished update by a lock a test took
 * (`lock table outbox_event in share mode`): each has claimed and published a
 * batch it cannot yet commit as published.
 */
export async function relaysHeldBeforeMarkPublished(db: TestDatabase): Promise<number> {
  const { rows } = await db.pool.query<{ n: number }>(
    `select count(*)::int as n from pg_stat_activity
     where datname = $1 and application_name = 'relay' and wait_event_type = 'Lock'
       and query like 'update outbox_event set published_at%'`,
    [db.name],
  );
  return rows[0]!.n;
}
