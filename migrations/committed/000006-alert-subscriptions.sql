--! Previous: sha1:6f9c95a46c20cef285495ec968195461d39a8082
--! Hash: sha1:08f8963972bf89ce5d9b6962e3a3c9a32b53f348
--! Message: alert subscriptions

-- Neighbourhood alerts (contract part 2, "Alert subscriptions"): a point, a
-- radius and optional species per subscription; a fan-out per lost report
-- event, run as graphile-worker jobs by the notifier (notifier/alerts/).

-- A lon/lat box holding every point within radius_m of location, so that
-- "subscriptions whose radius covers this point" is a GiST lookup (`area &&
-- point`) followed by the exact ST_DWithin. A box, not ST_Buffer's polygon:
-- GiST keeps only bounding boxes anyway, and the buffer is an inscribed
-- polygon whose chords fall up to 0.5 % of the radius inside the circle, so
-- its box could miss a subscriber at the edge. The angle uses a 6,335 km
-- radius (the smallest meridional radius of curvature) and 1 % more, so the
-- box always covers the spheroid's circle. A circle over a pole or the
-- antimeridian gets every longitude: more candidates, never a miss.
create function alert_subscription__area(location geography, radius_m double precision) returns geometry
language sql immutable strict parallel safe as $$
  select case
    when p.lat + p.d_lat >= 90 or p.lat - p.d_lat <= -90 or sin(p.r) >= cos(radians(p.lat)) then
      st_makeenvelope(-180, greatest(-90, p.lat - p.d_lat), 180, least(90, p.lat + p.d_lat), 4326)
    when p.lon - degrees(asin(sin(p.r) / cos(radians(p.lat)))) < -180
      or p.lon + degrees(asin(sin(p.r) / cos(radians(p.lat)))) > 180 then
      st_makeenvelope(-180, p.lat - p.d_lat, 180, p.lat + p.d_lat, 4326)
    else
      st_makeenvelope(p.lon - degrees(asin(sin(p.r) / cos(radians(p.lat)))), p.lat - p.d_lat,
                      p.lon + degrees(asin(sin(p.r) / cos(radians(p.lat)))), p.lat + p.d_lat, 4326)
  end
  from (select st_y(location::geometry) as lat, st_x(location::geometry) as lon,
               radius_m * 1.01 / 6335000.0 as r, degrees(radius_m * 1.01 / 6335000.0) as d_lat) p
$$;

create table alert_subscription (
  id uuid primary key default gen_random_uuid(),
  actor_id text not null,
  -- Precise, as the subscriber gave it: shown only in the owner's own listing.
  location geography(point, 4326) not null,
  radius_m double precision not null check (radius_m between 500 and 50000),
  -- null: every species.
  species text[] check (species is null or (cardinality(species) between 1 and 5
                        and species <@ array['dog', 'cat', 'bird', 'rabbit', 'other'])),
  area geometry(polygon, 4326) generated always as (alert_subscription__area(location, radius_m)) stored,
  created_at timestamptz not null default now()
);
create index alert_subscription_actor_idx on alert_subscription (actor_id, created_at, id);
create index alert_subscription_area_idx on alert_subscription using gist (area);

-- One fan-out per event that starts one (a new lost report; later a reopen or
-- a move). Its batches run one at a time: each batch job locks this row and
-- runs only when next_batch is its own number, so a replayed or duplicate job
-- does nothing. Batch 0 collects the recipients into alert_ledger; batch n ≥ 1
-- notifies the next ones after after_actor.
create table alert_fanout (
  event_id uuid primary key,
  report_id uuid not null references safety_lost_report (id) on delete cascade,
  event_type text not null,
  status text not null default 'running' check (status in ('running', 'done', 'stopped')),
  stop_reason text,
  next_batch int not null default 0,
  after_actor text,
  recipients int,
  -- Recipients per batch job, fixed when batch 0 ran (the progress view divides by it).
  batch_size int,
  notified int not null default 0,
  deferred int not null default 0,
  skipped int not null default 0,
  batches_done int not null default 0,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  finished_at timestamptz
);
create index alert_fanout_report_idx on alert_fanout (report_id, created_at desc);
-- The stall sweep's scan.
create index alert_fanout_running_idx on alert_fanout (updated_at) where status = 'running';

-- At most once per report per subscriber, whatever replays, dead workers or
-- later events do: a row is claimed once (pending) and decided once.
-- notified: a nearby_lost notification went out; deferred: over the day's cap,
-- left for the next morning's digest; digested: the digest took it;
-- skipped: the subscription was deleted before its batch ran.
create table alert_ledger (
  report_id uuid not null references safety_lost_report (id) on delete cascade,
  actor_id text not null,
  fanout_event_id uuid not null,
  -- The closest of the actor's subscriptions covering the report (no foreign
  -- key: a deleted subscription leaves its history).
  subscription_id uuid not null,
  distance_m double precision not null,
  status text not null default 'pending' check (status in ('pending', 'notified', 'deferred', 'digested', 'skipped')),
  -- The UTC day it counted against the cap, once decided.
  day date,
  decided_at timestamptz,
  primary key (report_id, actor_id)
);
create index alert_ledger_deferred_idx on alert_ledger (day, actor_id) where status = 'deferred';

-- nearby_lost notifications per subscriber and UTC day. The batch's upsert
-- takes a row lock per subscriber (in actor order, so two fan-outs never
-- deadlock), which keeps the cap exact when fan-outs run side by side.
create table alert_daily_quota (
  actor_id text not null,
  day date not null,
  sent int not null,
  primary key (actor_id, day)
);
