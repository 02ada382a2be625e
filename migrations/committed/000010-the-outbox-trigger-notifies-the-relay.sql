--! Previous: sha1:4f9facb2c8859f38ffea2866488e5d387d2ea738
--! Hash: sha1:b607f39e4e5d64f6e9652c89b6eed9e8a74edbc6
--! Message: the outbox trigger notifies the relay

-- Wake the relay with a notification on its own channel, not a graphile-worker
-- job (issue 19). Each outbox insert that found no relay job waiting (every
-- create at a steady 15/s, since the relay takes the job within milliseconds)
-- called add_job: 0.5 ms of Postgres inside the writing transaction
-- (an outbox insert 0.87 ms with it, 0.28 ms without, pgbench on the bench
-- VM), a job row inserted and deleted per create, and a `jobs:insert`
-- notification that made every graphile-worker runner of every process ask
-- for jobs (four fetches per create, of which the relay's was the one that
-- found it). With the notification instead, the API's write p95 at 15/s went
-- from 6.9–7.7 to 4.6–4.7 ms (bench/README.md, session 21).
--
-- NOTIFY is transactional: it is sent on commit and never for a rolled-back
-- insert, and notifications of one transaction on one channel are sent once.
-- The relay's 1 s poll still runs, and the relay drains again whenever its
-- listening connection is (re)established, so a notification lost with that
-- connection costs a second at most, as a job lost with a crashed worker did.
-- The channel is lib/outbox.ts OUTBOX_WAKE_CHANNEL.

drop trigger if exists _500_queue_relay on outbox_event;
drop function if exists outbox_event__queue_relay();

create or replace function outbox_event__wake_relay() returns trigger
language plpgsql volatile as $$
begin
  perform pg_notify('outbox_event_inserted', '');
  return null;
end;
$$;

drop trigger if exists _500_wake_relay on outbox_event;
create trigger _500_wake_relay after insert on outbox_event
  for each statement execute function outbox_event__wake_relay();
