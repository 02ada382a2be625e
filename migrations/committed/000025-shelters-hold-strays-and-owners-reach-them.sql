--! Previous: sha1:77e91dafb0aedb808181e8d0cb76d6a70c38b1df
--! Hash: sha1:9b151cdd111f2ccf3a718eb4200ead3fa3130226
--! Message: shelters hold strays and owners reach them

-- Stray holds (contract part 4, "Stray holds, and owners who reach the
-- shelters"): a partner holds a stray this many days after its intake before
-- it may be rehomed. An in-custody found report is held until the end of the
-- day (UTC) intakeDate + stray_hold_days (lib/partners.ts heldUntilSql),
-- computed on read, so an admin's change applies to the animals it holds.
alter table partner add column if not exists stray_hold_days int not null default 5;
alter table partner drop constraint if exists partner_stray_hold_days_check;
alter table partner add constraint partner_stray_hold_days_check check (stray_hold_days between 0 and 30);

-- GET /v1/safety/shelters, a lost report's nearby shelters and its first-hour
-- guide: partners near a point, nearest first.
create index if not exists partner_location_idx on partner using gist (location);

-- The answer to POST /partners/v2/animals/{id}/photos names its batch (ASM3
-- reads `id` from it); DELETE /partners/v2/animals/{id}/photos deletes the
-- fetches of the animal, so the rows left are its current set. Null on rows
-- made before batches had an id.
alter table partner_photo_fetch add column if not exists batch_id uuid;

-- The hold reminder (notifier/holds/reminder.ts): set in the transaction that
-- writes the owner's reminder, so a suggestion is reminded at most once,
-- whatever runs or restarts.
alter table safety_match add column if not exists hold_reminded_at timestamptz;

-- The first hour's guide to a lost report's owner is a notification of its own kind (lib/notifications.ts).
alter table notification drop constraint if exists notification_kind_check;
alter table notification add constraint notification_kind_check
  check (kind in ('relay_message', 'sighting', 'match', 'nearby_lost', 'tag_scanned', 'report_expiring',
                  'content_moderated', 'account_suspended', 'email_confirmation', 'phone_verification', 'sms_reply',
                  'report_guide'));
