--! Previous: sha1:c1ef127769c3d3b219ee8cf4dc2d2c7c5eff87ba
--! Hash: sha1:0f4b6e40cf93c7eea3d6c58ae4c64bee516b9988
--! Message: the relay is woken over the bus and polls

-- The outbox trigger no longer notifies anyone: every process that commits
-- outbox rows and holds a NATS connection (the API, the notifier's jobs, the
-- relay's own report-lifetime job) publishes a core message on `outbox.wake`
-- after its commit (lib/bus.ts relayWaker), and the relay's poll
-- (RELAY_POLL_INTERVAL_MS, 1 s) finds every other row: an operator task's,
-- or one whose wake-up was lost. The relay no longer LISTENs.
--
-- A notifying transaction takes Postgres's cluster-wide notify lock in
-- PreCommit_Notify and holds it until its commit record is flushed
-- (migration 000011); with this trigger gone, no writer takes it for the
-- outbox. Safe under the release before it: its relays still LISTEN and hear
-- nothing, and find the notifier's rows on their poll until the notifiers
-- roll out; its API connections still set `outbox.wake_relay`, which nothing
-- reads any more.

drop trigger if exists _500_wake_relay on outbox_event;
drop function if exists outbox_event__wake_relay();
