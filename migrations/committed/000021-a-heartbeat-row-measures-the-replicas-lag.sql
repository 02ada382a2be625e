--! Previous: sha1:cce0bcb9ca7158983f4aa670dd61cfd2d22de99c
--! Hash: sha1:f6391e131e2285b876428e45056f7dc239037ec1
--! Message: a heartbeat row measures the replica's lag

-- The read replica's lag (lib/read-replica.ts): the API sets beat_at to the
-- primary's now() every second while DATABASE_REPLICA_URL is set, and reads
-- now() - beat_at on the replica every 500 ms. That age stays small while the
-- primary is idle, which now() - pg_last_xact_replay_timestamp() does not: it
-- grows when nothing is written. One row (id is always true); every API
-- instance upserts it, and `where beat_at < excluded.beat_at` keeps it from
-- moving back. fillfactor leaves room on its page for HOT updates, so the
-- row's old versions are pruned in place.
create table replica_heartbeat (
  id boolean primary key default true check (id),
  beat_at timestamptz not null
) with (fillfactor = 50);
