import { withTransaction, type Pool, type PoolClient, type Queryable } from "../../lib/db.js";

/**
 * Hourly housekeeping run by the relay's worker (jobs/scheduled/task.ts):
 * tables that would otherwise grow for ever, and the time partitions of the
 * outbox and of notifications (migration 000022, decision 0083). Audit
 * events, reports and notifications are never pruned here.
 */

/** A bucket idle this long has refilled completely (our buckets refill in ≤ 1 h), so its row carries no state. */
const BUCKET_IDLE_HOURS = 2;

/**
 * The SMS counters of a UTC day carry state only on that day (the caps are
 * daily); a week of them is kept for an operator to read after an incident.
 */
export const SMS_USAGE_KEPT_DAYS = 7;

/** Partitions are created this many days ahead, so a missed run or three still finds them there. */
export const PARTITION_DAYS_AHEAD = 3;

/**
 * A maintenance transaction waits at most this long for its table lock (a
 * partition's create, drop or the default's split takes the parent's): queued
 * behind it, every insert into the outbox would wait too. The next hour retries.
 */
const PARTITION_LOCK_TIMEOUT = "5s";

/** A range-partitioned table as migration 000022 made it: partitions <table>_p<unit>, bounds at midnight UTC. */
export interface PartitionedTable {
  table: "outbox_event" | "notification";
  key: "occurred_at" | "source_occurred_at";
  unit: "day" | "month";
}

export const OUTBOX_PARTITIONS: PartitionedTable = { table: "outbox_event", key: "occurred_at", unit: "day" };
export const NOTIFICATION_PARTITIONS: PartitionedTable = { table: "notification", key: "source_occurred_at", unit: "month" };

const defaultPartition = (t: PartitionedTable) => `${t.table}_default`;

/** The partition holding `start` (a UTC date, YYYY-MM-DD, the first of its unit). */
export function partitionName(t: PartitionedTable, start: string): string {
  const digits = start.replaceAll("-", "");
  return `${t.table}_p${t.unit === "day" ? digits : digits.slice(0, 6)}`;
}

function nextStart(t: PartitionedTable, start: string): string {
  const d = new Date(`${start}T00:00:00Z`);
  if (t.unit === "day") d.setUTCDate(d.getUTCDate() + 1);
  else d.setUTCMonth(d.getUTCMonth() + 1);
  return d.toISOString().slice(0, 10);
}

const DATE = /^\d{4}-\d{2}-\d{2}$/;

/** Creates the partition starting at `start` unless it exists; true when created. */
async function createPartition(client: Queryable, t: PartitionedTable, start: string): Promise<boolean> {
  if (!DATE.test(start)) throw new Error(`not a partition start: ${start}`);
  const name = partitionName(t, start);
  const { rows } = await client.query<{ exists: boolean }>(`select to_regclass($1::text) is not null as exists`, [name]);
  if (rows[0]!.exists) return false;
  await client.query(
    `create table ${name} partition of ${t.table} for values from ('${start} 00:00:00+00') to ('${nextStart(t, start)} 00:00:00+00')`,
  );
  return true;
}

export interface PartitionRun {
  /** Partitions created: ahead of time, or for rows found in the default partition. */
  created: string[];
  /** Rows moved out of the default partition into partitions of their own. */
  movedFromDefault: number;
}

/**
 * Splits the default partition when it holds rows (the job was down for
 * days, or rows were written with a past time): detaches it, creates the
 * partitions its rows belong in, moves them, and attaches it again, empty,
 * in one transaction, so a failure anywhere leaves everything as it was.
 * Then creates the partitions of the next PARTITION_DAYS_AHEAD days (each
 * unit they touch) that do not exist. Idempotent.
 */
export async function maintainPartitions(pool: Pool, t: PartitionedTable, now?: Date): Promise<PartitionRun> {
  return withTransaction(pool, async (client) => {
    await client.query(`select set_config('lock_timeout', $1, true)`, [PARTITION_LOCK_TIMEOUT]);
    const run: PartitionRun = { created: [], movedFromDefault: 0 };
    const def = defaultPartition(t);
    const { rows: waiting } = await client.query<{ any: boolean }>(`select exists (select 1 from ${def}) as any`);
    if (waiting[0]!.any) {
      await client.query(`alter table ${t.table} detach partition ${def}`);
      const { rows: starts } = await client.query<{ start: string }>(
        `select distinct to_char(date_trunc('${t.unit}', ${t.key} at time zone 'UTC'), 'YYYY-MM-DD') as start from ${def} order by 1`,
      );
      for (const { start } of starts) if (await createPartition(client, t, start)) run.created.push(partitionName(t, start));
      const moved = await client.query(`with moved as (delete from ${def} returning *) insert into ${t.table} select * from moved`);
      run.movedFromDefault = moved.rowCount ?? 0;
      await client.query(`alter table ${t.table} attach partition ${def} default`);
    }
    for (const start of unitsAhead(t, now ?? (await databaseNow(client)))) {
      if (await createPartition(client, t, start)) run.created.push(partitionName(t, start));
    }
    return run;
  });
}

async function databaseNow(client: Queryable): Promise<Date> {
  return (await client.query<{ now: Date }>(`select now() as now`)).rows[0]!.now;
}

/** The starts of the units from today's to the one PARTITION_DAYS_AHEAD days on, in UTC. */
function unitsAhead(t: PartitionedTable, now: Date): string[] {
  const starts = new Set<string>();
  for (let d = 0; d <= PARTITION_DAYS_AHEAD; d++) {
    const day = new Date(now.getTime() + d * 86_400_000).toISOString().slice(0, 10);
    starts.add(t.unit === "day" ? day : `${day.slice(0, 7)}-01`);
  }
  return [...starts];
}

/** The table's dated partitions (not the default), oldest first, with the first day each holds. */
async function datedPartitions(client: Queryable, t: PartitionedTable): Promise<Array<{ name: string; start: string; end: string }>> {
  const { rows } = await client.query<{ name: string }>(
    `select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid
     where i.inhparent = $1::regclass and c.relname ~ $2::text order by c.relname`,
    [t.table, `^${t.table}_p[0-9]{${t.unit === "day" ? 8 : 6}}$`],
  );
  return rows.map(({ name }) => {
    const digits = name.slice(t.table.length + 2);
    const start = `${digits.slice(0, 4)}-${digits.slice(4, 6)}-${t.unit === "day" ? digits.slice(6, 8) : "01"}`;
    return { name, start, end: nextStart(t, start) };
  });
}

export interface OutboxDropRun {
  /** Days dropped: every row published and older than the retention. */
  dropped: string[];
  /** Days past the retention kept because they hold an unpublished row: the relay is stuck on them. */
  stuck: string[];
}

/**
 * Drops each day of the outbox whose every row is older than
 * `retentionDays` (its partition ends before now - retention), but only when
 * it holds no unpublished row: an unpublished row is never pruned, however
 * old. The day is locked before it is checked, so no row can become
 * unpublished between the check and the drop; each day is its own short
 * transaction, which holds up the outbox's writers for a check of its
 * partial index and the drop. A stuck day stays, and is
 * reported (and counted by the relay's outbox_partitions_past_retention gauge).
 */
export async function dropOutboxDays(pool: Pool, retentionDays: number): Promise<OutboxDropRun> {
  const run: OutboxDropRun = { dropped: [], stuck: [] };
  const { rows } = await pool.query<{ before: string }>(
    `select to_char((now() - make_interval(days => $1::int)) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS') as before`,
    [retentionDays],
  );
  const before = rows[0]!.before;
  for (const day of await datedPartitions(pool, OUTBOX_PARTITIONS)) {
    // A partition ending at midnight D holds rows up to D 00:00: past the retention when D <= before.
    if (`${day.end}T00:00:00` > before) break;
    const dropped = await withTransaction(pool, async (client: PoolClient) => {
      await client.query(`select set_config('lock_timeout', $1, true)`, [PARTITION_LOCK_TIMEOUT]);
      // The parent first, as an insert takes its locks (the drop needs the parent's anyway): the other order
      // could deadlock with an insert dated in that day.
      await client.query(`lock table only ${OUTBOX_PARTITIONS.table} in access exclusive mode`);
      await client.query(`lock table ${day.name} in access exclusive mode`);
      const { rows: held } = await client.query<{ any: boolean }>(
        `select exists (select 1 from ${day.name} where published_at is null) as any`,
      );
      if (held[0]!.any) return false;
      await client.query(`drop table ${day.name}`);
      return true;
    });
    (dropped ? run.dropped : run.stuck).push(day.name);
  }
  return run;
}

export interface PartitionHealth {
  /** Outbox days past the retention still there: stuck on an unpublished row, or the job is not running. */
  outboxDaysPastRetention: number;
  /** Rows in each table's default partition, counted up to DEFAULT_ROWS_COUNTED: 0 unless a partition was missing. */
  defaultRows: { outbox_event: number; notification: number };
}

/** The default partitions are counted up to this: enough to alert, and a scrape stays cheap however full they get. */
const DEFAULT_ROWS_COUNTED = 100_000;

/** For the relay's gauges, read at scrape time (relay/metrics.ts). */
export async function readPartitionHealth(db: Queryable, retentionDays: number): Promise<PartitionHealth> {
  const { rows } = await db.query<{ past: number; outbox: number; notification: number }>(
    `select (select count(*)::int from pg_inherits i join pg_class c on c.oid = i.inhrelid
             where i.inhparent = 'outbox_event'::regclass and c.relname ~ '^outbox_event_p[0-9]{8}$'
               and to_date(substr(c.relname, 15), 'YYYYMMDD') + 1 <= ((now() - make_interval(days => $1::int)) at time zone 'UTC')::date) as past,
       (select count(*)::int from (select 1 from outbox_event_default limit $2::int) s) as outbox,
       (select count(*)::int from (select 1 from notification_default limit $2::int) s) as notification`,
    [retentionDays, DEFAULT_ROWS_COUNTED],
  );
  const row = rows[0]!;
  return { outboxDaysPastRetention: row.past, defaultRows: { outbox_event: row.outbox, notification: row.notification } };
}

export interface PruneResult {
  buckets: number;
  /** sms_daily_usage and sms_daily_segments rows of days past SMS_USAGE_KEPT_DAYS. */
  smsUsageRows: number;
  /** Partitions created this run, both tables. */
  partitionsCreated: string[];
  /** Rows moved out of the default partitions. */
  movedFromDefault: number;
  outboxDaysDropped: string[];
  outboxDaysStuck: string[];
}

/**
 * The hourly run: idle rate-limit buckets and old days' SMS counters deleted; each partitioned table's
 * default split and partitions made ahead; outbox days past the retention
 * dropped. Notifications have no retention: their partitions are kept.
 */
export async function pruneMaintenance(pool: Pool, outboxRetentionDays: number): Promise<PruneResult> {
  const buckets = await pool.query(
    `delete from rate_limit_bucket where updated_at < now() - make_interval(hours => $1::int)`,
    [BUCKET_IDLE_HOURS],
  );
  const smsUsage = await pool.query(
    `with usage as (delete from sms_daily_usage where day < (now() at time zone 'UTC')::date - $1::int returning 1),
          segments as (delete from sms_daily_segments where day < (now() at time zone 'UTC')::date - $1::int returning 1)
     select (select count(*) from usage)::int + (select count(*) from segments)::int as deleted`,
    [SMS_USAGE_KEPT_DAYS],
  );
  const outbox = await maintainPartitions(pool, OUTBOX_PARTITIONS);
  const notification = await maintainPartitions(pool, NOTIFICATION_PARTITIONS);
  const drops = await dropOutboxDays(pool, outboxRetentionDays);
  return {
    buckets: buckets.rowCount ?? 0,
    smsUsageRows: smsUsage.rows[0].deleted as number,
    partitionsCreated: [...outbox.created, ...notification.created],
    movedFromDefault: outbox.movedFromDefault + notification.movedFromDefault,
    outboxDaysDropped: drops.dropped,
    outboxDaysStuck: drops.stuck,
  };
}
