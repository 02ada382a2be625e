--! Previous: sha1:f6391e131e2285b876428e45056f7dc239037ec1
--! Hash: sha1:cabdb63811e1377b2744e38173c41a8f080eb27b
--! Message: the outbox and notifications are partitioned by time

-- outbox_event is range-partitioned by day on occurred_at and notification by
-- month on its source event's time, so the maintenance job prunes the outbox
-- by dropping a day instead of deleting rows (relay/maintenance.ts, decision
-- 0083: `npm run bench`'s partitions scenario measures both, time and WAL).
--
-- Partitions are named <table>_pYYYYMMDD (outbox) and <table>_pYYYYMM
-- (notification), bounds at midnight UTC; the maintenance job creates them
-- ahead and finds them by these names. Each table has a DEFAULT partition for
-- a row no partition covers yet (the job was down for days, or a row dated in
-- the past): the write succeeds, and the next maintenance run splits it out.
--
-- Conversion: rename the old table, create the partitioned one like it,
-- partitions for every day (month) that has rows and for the days ahead,
-- copy, drop the old. No foreign key, trigger, grant or sequence refers to
-- either table (checked on a database migrated to 000021 with pg_constraint,
-- pg_trigger and information_schema.role_table_grants); graphile-worker jobs
-- carry notification ids by value, and ids do not change.

-- ── notification ──────────────────────────────────────────────────────────
-- The idempotency key must contain the partition key, so the partition key is
-- the event's time (every copy of an event carries the same occurredAt, and so
-- lands in the same partition and conflicts), not the row's created_at, which
-- would let a redelivery across a month boundary write a second row.
-- source_occurred_at is the envelope's occurredAt, to the millisecond as the
-- envelope carries it (lib/outbox.ts envelopeSql). Existing rows take it from
-- their outbox row, truncated the same way; a row whose event was pruned
-- already, or that has none, takes its created_at (its event is past the
-- stream's duplicate window and the republish task's reach, so nothing will
-- deliver it again). The default now() is the inserting transaction's start,
-- the same instant as an event recorded in that transaction.
alter table notification rename to notification_unpartitioned;
alter index notification_pkey rename to notification_unpartitioned_pkey;
alter index notification_event_recipient_channel_key rename to notification_unpartitioned_event_recipient_channel_key;
alter index notification_recipient_idx rename to notification_unpartitioned_recipient_idx;
alter index notification_source_key_idx rename to notification_unpartitioned_source_key_idx;
alter index notification_failures_idx rename to notification_unpartitioned_failures_idx;

create table notification (
  like notification_unpartitioned including defaults including constraints including storage,
  source_occurred_at timestamptz not null default now()
) partition by range (source_occurred_at);
alter table notification add constraint notification_pkey primary key (id, source_occurred_at);
create unique index notification_event_recipient_channel_key
  on notification (source_event_id, source_occurred_at, recipient_actor_id, channel);
create index notification_recipient_idx on notification (recipient_actor_id, created_at desc, id desc);
create index notification_source_key_idx on notification (source_key, created_at) where source_key is not null;
create index notification_failures_idx on notification (updated_at desc, id desc) where status in ('failed', 'dead_letter');
create table notification_default partition of notification default;

create temporary table notification_source_time on commit drop as
  select n.id, coalesce(date_trunc('milliseconds', o.occurred_at), n.created_at) as source_occurred_at
  from notification_unpartitioned n
  left join outbox_event o on o.id = n.source_event_id;

do $$
declare
  m date;
begin
  for m in
    select distinct date_trunc('month', source_occurred_at at time zone 'UTC')::date from notification_source_time
    union
    select date_trunc('month', (now() at time zone 'UTC')::date + d)::date from generate_series(0, 3) d
  loop
    execute format(
      'create table %I partition of notification for values from (%L) to (%L)',
      'notification_p' || to_char(m, 'YYYYMM'),
      to_char(m, 'YYYY-MM-DD') || ' 00:00:00+00',
      to_char((m + interval '1 month')::date, 'YYYY-MM-DD') || ' 00:00:00+00'
    );
  end loop;
end
$$;

insert into notification
select n.*, t.source_occurred_at
from notification_unpartitioned n
join notification_source_time t on t.id = n.id;

drop table notification_unpartitioned;

-- ── outbox_event ──────────────────────────────────────────────────────────
-- The primary key becomes (id, occurred_at); a lookup by id alone (a requeue)
-- probes each partition's key index. The relay's partial index of
-- unpublished rows exists on every partition, and its claim scans them in
-- (occurred_at, id) order (lib/outbox.ts claimSql; tests/relay/claim-plan.test.ts).
alter table outbox_event rename to outbox_event_unpartitioned;
alter index outbox_event_pkey rename to outbox_event_unpartitioned_pkey;
alter index outbox_event_unpublished_idx rename to outbox_event_unpartitioned_unpublished_idx;

create table outbox_event (
  like outbox_event_unpartitioned including defaults including constraints including storage
) partition by range (occurred_at);
alter table outbox_event add constraint outbox_event_pkey primary key (id, occurred_at);
create index outbox_event_unpublished_idx on outbox_event (occurred_at, id) where published_at is null;
create table outbox_event_default partition of outbox_event default;

do $$
declare
  d date;
begin
  for d in
    select distinct (occurred_at at time zone 'UTC')::date from outbox_event_unpartitioned
    union
    select (now() at time zone 'UTC')::date + n from generate_series(0, 3) n
  loop
    execute format(
      'create table %I partition of outbox_event for values from (%L) to (%L)',
      'outbox_event_p' || to_char(d, 'YYYYMMDD'),
      to_char(d, 'YYYY-MM-DD') || ' 00:00:00+00',
      to_char(d + 1, 'YYYY-MM-DD') || ' 00:00:00+00'
    );
  end loop;
end
$$;

insert into outbox_event select * from outbox_event_unpartitioned;

drop table outbox_event_unpartitioned;

analyze outbox_event;
analyze notification;
