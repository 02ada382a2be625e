--! Previous: -
--! Hash: sha1:913bbfb4fec0ec4c11d90a673f19afee9c8a0ee0
--! Message: foundation schema

-- Foundation schema for the whole service. See migrations/CONVENTIONS.md.
create extension if not exists postgis;
create extension if not exists pgcrypto;

-- One row per applied migration, queryable under the name the spec uses.
create or replace view schema_migrations as
  select filename, hash, previous_hash, date as applied_at
  from graphile_migrate.migrations;

------------------------------------------------------------------------------
-- Outbox: written in the same transaction as every domain change.
------------------------------------------------------------------------------
create table outbox_event (
  id uuid primary key default gen_random_uuid(),
  type text not null check (type ~ '^events\.[a-z0-9_]+\.[a-z0-9_]+\.v[0-9]+$'),
  occurred_at timestamptz not null default now(),
  published_at timestamptz,
  requeue_count int not null default 0 check (requeue_count between 0 and 5),
  payload jsonb not null default '{}'::jsonb check (jsonb_typeof(payload) = 'object')
);
-- Matches the relay's claim order exactly, so a claim reads 100 index entries
-- instead of sorting the whole backlog (rows of one statement share occurred_at).
create index outbox_event_unpublished_idx on outbox_event (occurred_at, id) where published_at is null;

-- Queue a relay job in the inserting transaction, so a commit wakes the relay
-- within milliseconds (graphile-worker listens for new jobs). The job key keeps
-- at most one job waiting. When one is already waiting, the insert skips
-- add_job: every writer upserting the same keyed job row would serialise all
-- commits on that row's lock (measured: 670 vs 2,800 two-insert tx/s). A row
-- committed just after the waiting job's drain read the outbox is picked up by
-- the next job or the relay's 1 s heartbeat.
create function outbox_event__queue_relay() returns trigger
language plpgsql volatile as $$
begin
  if not exists (
    select 1 from graphile_worker.jobs where key = 'outbox_relay' and locked_at is null
  ) then
    perform graphile_worker.add_job(
      'outbox_relay',
      '{}'::json,
      job_key := 'outbox_relay',
      max_attempts := 1
    );
  end if;
  return null;
end;
$$;
create trigger _500_queue_relay after insert on outbox_event
  for each statement execute function outbox_event__queue_relay();

------------------------------------------------------------------------------
-- Audit: append-only, enforced here rather than by convention.
------------------------------------------------------------------------------
create table audit_event (
  id uuid primary key default gen_random_uuid(),
  actor_id text not null,
  object_type text not null,
  object_id text not null,
  action text not null,
  occurred_at timestamptz not null default clock_timestamp(),
  metadata jsonb not null default '{}'::jsonb check (jsonb_typeof(metadata) = 'object')
);
create index audit_event_occurred_idx on audit_event (occurred_at desc, id desc);
create index audit_event_actor_idx on audit_event (actor_id, occurred_at desc);
create index audit_event_action_idx on audit_event (action, occurred_at desc);
create index audit_event_object_idx on audit_event (object_type, object_id, occurred_at desc);

create function audit_event__reject_change() returns trigger
language plpgsql as $$
begin
  raise exception 'audit_event is append-only: % is not allowed', tg_op
    using errcode = 'insufficient_privilege';
end;
$$;
create trigger _100_append_only before update or delete on audit_event
  for each row execute function audit_event__reject_change();
create trigger _100_append_only_truncate before truncate on audit_event
  for each statement execute function audit_event__reject_change();

------------------------------------------------------------------------------
-- Rate limit buckets kept in Postgres (they hold across restarts and API
-- instances): report creation per actor, relay messages per client IP.
------------------------------------------------------------------------------
create table rate_limit_bucket (
  key text primary key,
  tokens double precision not null,
  updated_at timestamptz not null default now()
);

------------------------------------------------------------------------------
-- Accounts: only what this service owns about an identity (suspension).
------------------------------------------------------------------------------
create table account (
  user_id text primary key,
  suspended_at timestamptz,
  suspended_by text,
  suspension_reason_code text,
  suspension_reason_detail text,
  suspension_expires_at timestamptz,
  restored_at timestamptz,
  restored_by text,
  restore_reason text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

------------------------------------------------------------------------------
-- Safety. No soft-delete on reports or relay messages.
------------------------------------------------------------------------------
create table safety_lost_report (
  id uuid primary key default gen_random_uuid(),
  reporter_id text not null,
  status text not null default 'open' check (status in ('open', 'reunited', 'closed', 'cancelled')),
  animal_name text,
  species text not null check (species in ('dog', 'cat', 'bird', 'rabbit', 'other')),
  breed text,
  colors text[] not null default '{}',
  sex text,
  microchip_id text,
  distinguishing_marks text,
  last_seen_at timestamptz not null,
  location geography(point, 4326) not null,
  -- Centre of the ~1 km grid cell holding location: the only point any public read uses.
  coarse_location geography(point, 4326) not null,
  description text,
  verification_detail text,
  flagged boolean not null default false,
  flagged_reason text,
  flagged_by text,
  flagged_at timestamptz,
  resolved_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index safety_lost_report_open_coarse_idx on safety_lost_report using gist (coarse_location) where status = 'open';
create index safety_lost_report_reporter_idx on safety_lost_report (reporter_id, created_at desc);

create table safety_found_report (
  id uuid primary key default gen_random_uuid(),
  reporter_id text not null,
  status text not null default 'open' check (status in ('open', 'reunited', 'closed', 'cancelled')),
  species text not null check (species in ('dog', 'cat', 'bird', 'rabbit', 'other')),
  breed text,
  colors text[] not null default '{}',
  sex text,
  microchip_id text,
  distinguishing_marks text,
  found_at timestamptz not null,
  location geography(point, 4326) not null,
  coarse_location geography(point, 4326) not null,
  description text,
  resolved_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index safety_found_report_open_coarse_idx on safety_found_report using gist (coarse_location) where status = 'open';
create index safety_found_report_reporter_idx on safety_found_report (reporter_id, created_at desc);

create table safety_report_flag (
  lost_report_id uuid not null references safety_lost_report (id) on delete cascade,
  actor_id text not null,
  reason text not null,
  created_at timestamptz not null default now(),
  primary key (lost_report_id, actor_id)
);

create table safety_relay_message (
  id uuid primary key default gen_random_uuid(),
  lost_report_id uuid not null references safety_lost_report (id) on delete cascade,
  message text not null,
  from_contact text not null,
  created_at timestamptz not null default now()
);
create index safety_relay_message_report_idx on safety_relay_message (lost_report_id, created_at desc);

create table safety_sighting (
  id uuid primary key default gen_random_uuid(),
  lost_report_id uuid references safety_lost_report (id) on delete cascade,
  reporter_id text not null,
  location geography(point, 4326) not null,
  coarse_location geography(point, 4326) not null,
  seen_at timestamptz not null,
  note text,
  created_at timestamptz not null default now()
);
create index safety_sighting_report_idx on safety_sighting (lost_report_id, created_at desc, id desc);

------------------------------------------------------------------------------
-- Animals and public emergency profiles (token stored only as a hash).
------------------------------------------------------------------------------
create table animal (
  id uuid primary key default gen_random_uuid(),
  owner_id text not null,
  name text not null,
  species text not null check (species in ('dog', 'cat', 'bird', 'rabbit', 'other')),
  breed text,
  colors text[] not null default '{}',
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index animal_owner_idx on animal (owner_id);

create table emergency_profile (
  animal_id uuid primary key references animal (id) on delete cascade,
  token_hash bytea unique,
  medical_notes text,
  instructions text,
  show_name boolean not null,
  issued_at timestamptz not null default now(),
  revoked_at timestamptz,
  revoked_by text,
  revoke_reason text,
  updated_at timestamptz not null default now()
);

------------------------------------------------------------------------------
-- Moderation.
------------------------------------------------------------------------------
create table moderation_report (
  id uuid primary key default gen_random_uuid(),
  reporter_id text not null,
  target_type text not null check (target_type in ('lost_report', 'found_report', 'sighting', 'relay_message')),
  target_id uuid not null,
  reason text not null check (reason in ('spam', 'scam', 'abuse', 'other')),
  details text,
  status text not null default 'open' check (status in ('open', 'claimed', 'escalated', 'resolved')),
  claimed_by text,
  claimed_at timestamptz,
  resolution text check (resolution in ('dismiss', 'warn', 'quarantine', 'remove', 'escalate')),
  resolution_note text,
  resolved_by text,
  resolved_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index moderation_report_status_idx on moderation_report (status, created_at, id);

create table moderation_content_state (
  target_type text not null check (target_type in ('lost_report', 'found_report', 'sighting', 'relay_message')),
  target_id uuid not null,
  state text not null check (state in ('quarantined', 'removed')),
  moderation_report_id uuid references moderation_report (id),
  applied_by text not null,
  applied_at timestamptz not null default now(),
  primary key (target_type, target_id)
);

------------------------------------------------------------------------------
-- Notifications.
------------------------------------------------------------------------------
create table notification_preference (
  actor_id text primary key,
  channel text not null check (channel in ('email', 'in_app')),
  email text,
  updated_at timestamptz not null default now()
);

create table notification (
  id uuid primary key default gen_random_uuid(),
  recipient_actor_id text not null,
  channel text not null check (channel in ('email', 'in_app')),
  status text not null default 'pending' check (status in ('pending', 'sent', 'failed', 'dead_letter')),
  attempts int not null default 0,
  last_error text,
  source_event_id uuid,
  -- What the notification is about (for example relay_message:<id>). Several
  -- events can concern one thing; replay of an older one is superseded once a
  -- later notification for the same key was sent.
  source_key text,
  event_type text not null,
  subject text not null,
  body text not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  sent_at timestamptz
);
create unique index notification_source_event_id_key on notification (source_event_id);
create index notification_recipient_idx on notification (recipient_actor_id, created_at desc, id desc);
create index notification_source_key_idx on notification (source_key, created_at) where source_key is not null;
create index notification_failures_idx on notification (updated_at desc, id desc) where status in ('failed', 'dead_letter');
