--! Previous: sha1:c32e2c8aa7d69a93dda65fe5b4200a46e095c482
--! Hash: sha1:dac1d7cf1b2922ba804882abe149b710e3f988fe
--! Message: the outbox trigger notifies the relay

-- Wake the relay with a notification on its own channel, not a graphile-worker
-- job. Waking it by a job, each outbox insert that found no relay job waiting
-- (every create at a steady 15/s, since the relay takes the job within
-- milliseconds) calls add_job: 0.5 ms of Postgres inside the writing
-- transaction (an outbox insert 0.87 ms with it, 0.28 ms without, pgbench on
-- the bench VM), a job row inserted and deleted per create, and a
-- `jobs:insert` notification that makes every graphile-worker runner of every
-- process ask for jobs (four fetches per create, of which the relay's is the
-- one that finds it). The API's write p95 at 15/s (`npm run bench`): 6.9–7.7 ms
-- woken by a job, 4.6–4.7 ms by the notification.
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
