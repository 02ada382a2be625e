import { randomBytes } from "node:crypto";
import { cp, mkdir, mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { migrate } from "graphile-migrate";
import { clearAllPools } from "graphile-migrate/dist/pg.js";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inject } from "vitest";
import { EventType } from "../../lib/events.js";
import { migrateUp } from "../../lib/migrate.js";
import {
  dropOutboxDays,
  maintainPartitions,
  NOTIFICATION_PARTITIONS,
  OUTBOX_PARTITIONS,
  pruneMaintenance,
  readPartitionHealth,
} from "../../jobs/scheduled/maintenance.js";
import { databaseUrlFor } from "../setup/global-setup.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";

/**
 * The outbox by day and notifications by month (migration 000022): the
 * conversion keeps every row and puts it in its partition; the maintenance
 * job makes partitions ahead, splits a default partition that filled, and
 * drops a day only when every row in it is published.
 */

const root = path.resolve(import.meta.dirname, "../..");
const CONVERTING = "000022";

/** The UTC day (YYYYMMDD) and month (YYYYMM) of a timestamp, as partitions are named. */
const dayOf = (t: Date) => t.toISOString().slice(0, 10).replaceAll("-", "");
const monthOf = (t: Date) => dayOf(t).slice(0, 6);

describe("the migration that partitions the outbox and notifications", () => {
  const adminUrl = inject("adminDatabaseUrl");
  const name = `ass_t_${process.pid}_${randomBytes(4).toString("hex")}`;
  const url = databaseUrlFor(adminUrl, name);
  let pool: pg.Pool;
  let folder: string;

  beforeAll(async () => {
    const admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    await admin.query(`create database ${name}`);
    await admin.end();
    // The migrations before the converting one, in a folder of their own: the database as it was before.
    folder = await mkdtemp(path.join(tmpdir(), "ass-migrations-"));
    await mkdir(path.join(folder, "committed"));
    for (const file of await readdir(path.join(root, "migrations/committed"))) {
      if (file.endsWith(".sql") && file < CONVERTING) await cp(path.join(root, "migrations/committed", file), path.join(folder, "committed", file));
    }
    await cp(path.join(root, "migrations/current.sql"), path.join(folder, "current.sql"));
    await migrate({ connectionString: url, migrationsFolder: folder, pgSettings: { search_path: "public" } });
    clearAllPools();
    pool = new pg.Pool({ connectionString: url, max: 2 });
  }, 120_000);

  afterAll(async () => {
    await pool?.end();
    if (folder) await rm(folder, { recursive: true, force: true });
    const admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    await admin.query(`drop database if exists ${name} with (force)`);
    await admin.end();
  });

  it("keeps every row, each in the partition of its day or month, with the source event's time on each notification", async () => {
    const unpartitioned = await pool.query<{ kind: string }>(
      `select relkind as kind from pg_class where relname = 'outbox_event'`,
    );
    expect(unpartitioned.rows).toEqual([{ kind: "r" }]);
    // Outbox rows over 12 days, published and not, and one unpublished row 45 days old; a notification for each,
    // created a few minutes after its event, and three whose event is not in the outbox (pruned, or none).
    await pool.query(
      `insert into outbox_event (type, occurred_at, published_at, payload)
       select $1, now() - make_interval(days => d, hours => h), case when (d + h) % 3 = 0 then null else now() end,
         jsonb_build_object('d', d, 'h', h)
       from generate_series(0, 11) d, generate_series(0, 20, 5) h
       union all select $1, now() - interval '45 days', null, '{"old": true}'`,
      [EventType.AnimalLostReported],
    );
    await pool.query(
      `insert into notification (recipient_actor_id, channel, source_event_id, event_type, kind, subject, body, created_at, status)
       select 'actor-' || (row_number() over ()), 'in_app', id, type, 'sighting', 'subject', 'body', occurred_at + interval '3 minutes', 'sent'
       from outbox_event`,
    );
    await pool.query(
      `insert into notification (recipient_actor_id, channel, source_event_id, event_type, kind, subject, body, created_at) values
         ('pruned', 'email', gen_random_uuid(), $1, 'match', 's', 'b', now() - interval '70 days'),
         ('pruned', 'in_app', gen_random_uuid(), $1, 'match', 's', 'b', now() - interval '100 days'),
         ('none', 'in_app', null, $1, 'relay_message', 's', 'b', now() - interval '35 days')`,
      [EventType.AnimalLostReported],
    );
    const rowsOf = async (sql: string) => (await pool.query(sql)).rows;
    const outboxBefore = await rowsOf(`select to_jsonb(o) as row from outbox_event o order by id`);
    const notificationsBefore = await rowsOf(`select to_jsonb(n) as row from notification n order by id`);
    const months = new Set(
      (await rowsOf(`select to_char(created_at at time zone 'UTC', 'YYYYMM') as m from notification`)).map((r) => r.m as string),
    );
    expect(months.size).toBeGreaterThanOrEqual(3);

    const { applied } = await migrateUp(url);
    expect(applied).toContain(CONVERTING);

    expect(await rowsOf(`select relkind as kind from pg_class where relname in ('outbox_event', 'notification')`)).toEqual([
      { kind: "p" },
      { kind: "p" },
    ]);
    expect(await rowsOf(`select to_jsonb(o) as row from outbox_event o order by id`)).toEqual(outboxBefore);
    expect(
      await rowsOf(`select to_jsonb(n) - 'source_occurred_at' as row from notification n order by id`),
    ).toEqual(notificationsBefore);

    const outbox = await pool.query<{ part: string; occurredAt: Date }>(
      `select tableoid::regclass::text as part, occurred_at as "occurredAt" from outbox_event`,
    );
    expect(outbox.rows.length).toBe(61);
    for (const r of outbox.rows) expect(r.part).toBe(`outbox_event_p${dayOf(r.occurredAt)}`);

    const notifications = await pool.query<{ part: string; source: Date; expected: Date }>(
      `select n.tableoid::regclass::text as part, n.source_occurred_at as source,
         coalesce(date_trunc('milliseconds', o.occurred_at), n.created_at) as expected
       from notification n left join outbox_event o on o.id = n.source_event_id`,
    );
    expect(notifications.rows.length).toBe(64);
    for (const r of notifications.rows) {
      expect(r.source).toEqual(r.expected);
      expect(r.part).toBe(`notification_p${monthOf(r.source)}`);
    }

    // The days ahead, and the default partitions, empty.
    const parts = new Set((await rowsOf(`select relname from pg_class where relname ~ '^(outbox_event|notification)_'`)).map((r) => r.relname));
    for (let d = 0; d <= 3; d++) expect(parts).toContain(`outbox_event_p${dayOf(new Date(Date.now() + d * 86_400_000))}`);
    expect(parts).toContain(`notification_p${monthOf(new Date())}`);
    expect(await rowsOf(`select (select count(*) from outbox_event_default)::int as o, (select count(*) from notification_default)::int as n`)).toEqual([
      { o: 0, n: 0 },
    ]);
    // The indexes the code relies on, under their names, and the old tables gone.
    const indexes = (await rowsOf(`select indexname from pg_indexes where tablename in ('outbox_event', 'notification') order by 1`)).map(
      (r) => r.indexname,
    );
    expect(indexes).toEqual([
      "notification_event_recipient_channel_key",
      "notification_failures_idx",
      "notification_pkey",
      "notification_recipient_idx",
      "notification_source_key_idx",
      "outbox_event_pkey",
      "outbox_event_unpublished_idx",
    ]);
    expect(await rowsOf(`select relname from pg_class where relname like '%unpartitioned%'`)).toEqual([]);
  });
});

describe("the maintenance job's partitions", () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  const partitions = async (table: string) =>
    (
      await db.pool.query<{ name: string }>(
        `select relid::regclass::text as name from pg_partition_tree($1::regclass) where isleaf order by 1`,
        [table],
      )
    ).rows.map((r) => r.name);

  it("creates the partitions of the next 3 days, and of a month that starts within them, once", async () => {
    const ahead = [1, 2, 3].map((d) => `outbox_event_p${dayOf(new Date(Date.now() + d * 86_400_000))}`);
    for (const name of ahead) await db.pool.query(`drop table ${name}`);
    expect(await partitions("outbox_event")).not.toContain(ahead[0]);

    const run = await maintainPartitions(db.pool, OUTBOX_PARTITIONS);
    expect(run.created.sort()).toEqual(ahead.sort());
    expect(await partitions("outbox_event")).toEqual(expect.arrayContaining(ahead));
    expect((await maintainPartitions(db.pool, OUTBOX_PARTITIONS)).created).toEqual([]);

    // Two days before a month's end, the next month's partition is made too.
    const nearMonthEnd = new Date("2031-01-30T12:00:00Z");
    const months = await maintainPartitions(db.pool, NOTIFICATION_PARTITIONS, nearMonthEnd);
    expect(months.created.sort()).toEqual(["notification_p203101", "notification_p203102"]);
    expect((await maintainPartitions(db.pool, NOTIFICATION_PARTITIONS, nearMonthEnd)).created).toEqual([]);
  });

  it("takes a write no partition covers into the default, and the next run moves it into a partition of its own, losing nothing", async () => {
    const late = new Date(Date.now() + 10 * 86_400_000);
    const early = new Date(Date.now() - 100 * 86_400_000);
    const { rows: written } = await db.pool.query<{ id: string; part: string }>(
      `insert into outbox_event (type, occurred_at, payload, published_at)
       values ($1, $2, '{"n": 1}', null), ($1, $2, '{"n": 2}', now()), ($1, $3, '{"n": 3}', now())
       returning id, tableoid::regclass::text as part`,
      [EventType.AnimalLostReported, late, early],
    );
    expect(written.map((r) => r.part)).toEqual(["outbox_event_default", "outbox_event_default", "outbox_event_default"]);
    await db.pool.query(
      `insert into notification (recipient_actor_id, channel, source_event_id, source_occurred_at, event_type, kind, subject, body)
       values ('r', 'in_app', gen_random_uuid(), '2033-05-17T10:00:00Z', $1, 'sighting', 's', 'b')`,
      [EventType.AnimalLostReported],
    );
    const before = (await db.pool.query(`select to_jsonb(o) as row from outbox_event o order by id`)).rows;
    expect((await readPartitionHealth(db.pool, 7)).defaultRows).toEqual({ outbox_event: 3, notification: 1 });

    const result = await pruneMaintenance(db.pool, 7);
    expect(result.movedFromDefault).toBe(4);
    expect(result.partitionsCreated).toEqual(
      expect.arrayContaining([`outbox_event_p${dayOf(late)}`, `outbox_event_p${dayOf(early)}`, "notification_p203305"]),
    );
    // The early day was all published and past the retention: dropped in the same run.
    expect(result.outboxDaysDropped).toEqual([`outbox_event_p${dayOf(early)}`]);

    const { rows: after } = await db.pool.query<{ id: string; part: string }>(
      `select id, tableoid::regclass::text as part from outbox_event where id = any($1::uuid[]) order by payload->>'n'`,
      [written.map((r) => r.id)],
    );
    expect(after.map((r) => r.part)).toEqual([`outbox_event_p${dayOf(late)}`, `outbox_event_p${dayOf(late)}`]);
    expect((await db.pool.query(`select to_jsonb(o) as row from outbox_event o order by id`)).rows).toEqual(
      before.filter((r) => r.row.payload.n !== 3),
    );
    const { rows: notification } = await db.pool.query(`select tableoid::regclass::text as part from notification where recipient_actor_id = 'r'`);
    expect(notification).toEqual([{ part: "notification_p203305" }]);
    expect((await readPartitionHealth(db.pool, 7)).defaultRows).toEqual({ outbox_event: 0, notification: 0 });
    expect(await partitions("outbox_event")).toContain("outbox_event_default");
    expect(await partitions("notification")).toContain("notification_default");
  });

  it("drops a day past the retention only once its every row is published, and counts it as past the retention until then", async () => {
    const stuckAt = new Date(Date.now() - 30 * 86_400_000);
    const doneAt = new Date(Date.now() - 20 * 86_400_000);
    await db.pool.query(
      `insert into outbox_event (type, occurred_at, published_at) values ($1, $2, now()), ($1, $2, null), ($1, $3, now()), ($1, $3, now())`,
      [EventType.AnimalLostReported, stuckAt, doneAt],
    );
    await maintainPartitions(db.pool, OUTBOX_PARTITIONS);
    expect(await partitions("outbox_event")).toEqual(expect.arrayContaining([`outbox_event_p${dayOf(stuckAt)}`, `outbox_event_p${dayOf(doneAt)}`]));
    expect((await readPartitionHealth(db.pool, 7)).outboxDaysPastRetention).toBe(2);

    const first = await dropOutboxDays(db.pool, 7);
    expect(first).toEqual({ dropped: [`outbox_event_p${dayOf(doneAt)}`], stuck: [`outbox_event_p${dayOf(stuckAt)}`] });
    const { rows: kept } = await db.pool.query(
      `select count(*)::int as n from outbox_event where occurred_at = $1`,
      [stuckAt],
    );
    expect(kept).toEqual([{ n: 2 }]);
    expect((await readPartitionHealth(db.pool, 7)).outboxDaysPastRetention).toBe(1);

    await db.pool.query(`update outbox_event set published_at = now() where occurred_at = $1`, [stuckAt]);
    expect(await dropOutboxDays(db.pool, 7)).toEqual({ dropped: [`outbox_event_p${dayOf(stuckAt)}`], stuck: [] });
    expect((await readPartitionHealth(db.pool, 7)).outboxDaysPastRetention).toBe(0);
    // Days within the retention stay, published or not.
    expect(await partitions("outbox_event")).toContain(`outbox_event_p${dayOf(new Date())}`);
  });
});
