--! Previous: sha1:cabdb63811e1377b2744e38173c41a8f080eb27b
--! Hash: sha1:da369d1c10af86fdbf2cf47fb511f37dd30e6851
--! Message: a push origin that keeps timing out is paused

-- Push origins (scheme, host and port of an endpoint) whose requests timed out
-- (notifier/deliverers/origin-pause.ts). A row exists while an origin has
-- timed out since its last success: consecutive_timeouts counts them, and the
-- third in a row sets paused_until (now + PUSH_ORIGIN_PAUSE_MS). Until then
-- the origin's deliveries are put back without an attempt. A success deletes
-- the row. Every notifier process reads and writes the same rows, so a pause
-- holds for all of them.
create table if not exists push_origin_health (
  origin text primary key check (char_length(origin) between 1 and 2048),
  consecutive_timeouts int not null default 0 check (consecutive_timeouts >= 0),
  paused_until timestamptz,
  updated_at timestamptz not null default now()
);
