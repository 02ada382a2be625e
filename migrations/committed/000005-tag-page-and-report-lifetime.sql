--! Previous: sha1:f0a56b07121a4260dcacac4b5d501b789c9f7ee3
--! Hash: sha1:6f9c95a46c20cef285495ec968195461d39a8082
--! Message: tag page and report lifetime

-- Part 2: the tag page (scans, messages to an animal's owner) and the owner's
-- side of reports (an animal's lost report, expiry and renewal).

------------------------------------------------------------------------------
-- Report lifetime. expires_at is set by the API from REPORT_TTL_DAYS at
-- creation and renewal. Rows from before this migration have none: the
-- relay's lifetime job gives open ones created_at + REPORT_TTL_DAYS (at least
-- a warning period away), so no report closes without its reminder.
-- expiry_warned_for holds the expires_at the report_expiring reminder was
-- sent for: a renewal moves expires_at and so re-arms the reminder.
------------------------------------------------------------------------------
alter table safety_lost_report
  add column expires_at timestamptz,
  add column expiry_warned_for timestamptz,
  add column closed_reason text check (closed_reason in ('expired')),
  -- The registered animal a lost report was made from (POST /v1/animals/{id}/lost).
  add column animal_id uuid references animal (id) on delete set null;
alter table safety_found_report
  add column expires_at timestamptz,
  add column expiry_warned_for timestamptz,
  add column closed_reason text check (closed_reason in ('expired'));

-- The lifetime job's scans: open reports by expiry, and open ones still without one.
create index safety_lost_report_open_expiry_idx on safety_lost_report (expires_at) where status = 'open';
create index safety_found_report_open_expiry_idx on safety_found_report (expires_at) where status = 'open';

-- One open lost report per animal: the tag page shows it and relays to it.
create unique index safety_lost_report_open_animal_key on safety_lost_report (animal_id)
  where status = 'open' and animal_id is not null;

------------------------------------------------------------------------------
-- Tag scans: one row per view of an animal's tag page. Only a coarse point
-- (the ~1 km cell centre), and only when the finder shared it; never the
-- viewer's address.
------------------------------------------------------------------------------
create table animal_scan (
  id uuid primary key default gen_random_uuid(),
  animal_id uuid not null references animal (id) on delete cascade,
  scanned_at timestamptz not null default now(),
  coarse_location geography(point, 4326),
  location_shared_at timestamptz
);
create index animal_scan_animal_idx on animal_scan (animal_id, scanned_at desc, id desc);

-- When the owner was last told of a scan of this tag: at most one
-- tag_scanned per tag per 10 minutes, claimed by a conditional update.
alter table emergency_profile add column scan_notified_at timestamptz;

------------------------------------------------------------------------------
-- Messages from the tag page to an animal's owner when no lost report is
-- open: a relay message belongs to exactly one lost report, found report or
-- animal.
------------------------------------------------------------------------------
alter table safety_relay_message add column animal_id uuid references animal (id) on delete cascade;
alter table safety_relay_message drop constraint safety_relay_message_one_report;
alter table safety_relay_message add constraint safety_relay_message_one_target
  check (num_nonnulls(lost_report_id, found_report_id, animal_id) = 1);
create index safety_relay_message_animal_idx on safety_relay_message (animal_id, created_at desc)
  where animal_id is not null;
