--! Previous: sha1:fb2548eedef2064b623bcc2e03dd0d79b6277b19
--! Hash: sha1:c32e2c8aa7d69a93dda65fe5b4200a46e095c482
--! Message: alert fan-out batches without ledger rows

-- Alert fan-out without a ledger row per recipient. With one, a burst of
-- lost reports in a city (10/s for 30 s, the load item of
-- `npx tsx bench/alerts-fanout.ts`) writes 1.2 million ledger rows, each
-- inserted pending by batch 0 and updated by its batch, and two thirds of
-- them only to say "past the daily cap, for the digest". So batch 0
-- stores its recipients as one row of arrays per batch (alert_fanout_batch,
-- deleted as the batch runs), the ledger gets a row only when a subscriber
-- is notified, and a subscriber past the cap gets none: the morning digest
-- finds the reports they missed through their own subscriptions
-- (notifier/alerts/digest.ts), and writes their deferred rows then.

create table alert_fanout_batch (
  fanout_event_id uuid not null references alert_fanout (event_id) on delete cascade,
  batch int not null,
  -- In actor order, each array the same length: the batch's recipients, their
  -- closest covering subscription and its distance to the report's coarse point.
  actor_ids text[] not null,
  subscription_ids uuid[] not null,
  distances_m double precision[] not null,
  primary key (fanout_event_id, batch)
);
-- Out of line but not compressed: ids compress poorly, and pglz cost a city's
-- batch 0 a tenth of its time, and each batch the decompression.
alter table alert_fanout_batch
  alter column actor_ids set storage external,
  alter column subscription_ids set storage external,
  alter column distances_m set storage external;

-- The recipients still pending in running fan-outs become their batches,
-- numbered from the fan-out's next one, in actor order.
insert into alert_fanout_batch (fanout_event_id, batch, actor_ids, subscription_ids, distances_m)
select p.fanout_event_id, p.next_batch + (p.n - 1) / p.batch_size,
  array_agg(p.actor_id order by p.actor_id), array_agg(p.subscription_id order by p.actor_id), array_agg(p.distance_m order by p.actor_id)
from (
  select l.fanout_event_id, l.actor_id, l.subscription_id, l.distance_m, f.next_batch, coalesce(f.batch_size, 1000) as batch_size,
    row_number() over (partition by l.fanout_event_id order by l.actor_id) as n
  from alert_ledger l
  join alert_fanout f on f.event_id = l.fanout_event_id and f.status = 'running' and f.next_batch >= 1
  where l.status = 'pending'
) p
group by p.fanout_event_id, p.next_batch + (p.n - 1) / p.batch_size;
delete from alert_ledger where status = 'pending';

alter table alert_ledger drop constraint alert_ledger_status_check;
alter table alert_ledger add constraint alert_ledger_status_check check (status in ('notified', 'deferred', 'digested', 'skipped'));
alter table alert_ledger alter column status drop default;

alter table alert_fanout drop column after_actor;
-- Set by the digest once it has written the fan-out's deferred ledger rows
-- for every day the fan-out ran (so after it finished).
alter table alert_fanout add column deferrals_listed boolean not null default false;
-- Finished fan-outs have theirs in the ledger already.
update alert_fanout set deferrals_listed = true where status <> 'running';
create index alert_fanout_deferrals_idx on alert_fanout (created_at) where deferred > 0 and not deferrals_listed;
