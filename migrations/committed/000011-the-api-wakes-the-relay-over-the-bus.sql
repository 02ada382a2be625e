--! Previous: sha1:dac1d7cf1b2922ba804882abe149b710e3f988fe
--! Hash: sha1:c1ef127769c3d3b219ee8cf4dc2d2c7c5eff87ba
--! Message: the API wakes the relay over the bus

-- The API wakes the relay over the bus; everything else keeps the notification.
-- Every transaction that NOTIFYs takes one cluster-wide lock in
-- PreCommit_Notify ("database 0", AccessExclusiveLock, src/backend/commands/
-- async.c) and holds it until its commit record is flushed, so notifying
-- commits flush one at a time: no group commit. pgbench on the bench VM, the
-- two-insert transaction with 10 clients: 3,950–4,130 tx/s without a
-- notification, 1,667–1,675 with one (`npm run bench` prints the same pair
-- beside its capacity figure). The API's connections set
-- `outbox.wake_relay = 'bus'` (lib/db.ts) and publish a core NATS message on
-- lib/outbox.ts OUTBOX_WAKE_SUBJECT after each write instead;
-- the notifier's jobs, the relay's own jobs and the operator tasks write
-- events seldom and keep the notification, so the relay still hears of every
-- commit within milliseconds. Its 1 s poll remains the backstop of both.

create or replace function outbox_event__wake_relay() returns trigger
language plpgsql volatile as $$
begin
  if current_setting('outbox.wake_relay', true) is distinct from 'bus' then
    perform pg_notify('outbox_event_inserted', '');
  end if;
  return null;
end;
$$;
