--! Previous: sha1:4cd9808b473df83b47bbc79400656a578c9cf79f
--! Hash: sha1:fb2548eedef2064b623bcc2e03dd0d79b6277b19
--! Message: photos

-- Photos of lost reports, found reports and animals (contract part 2,
-- "Photos"). The bytes live in object storage, keyed by content hash
-- (lib/storage/keys.ts): the original under originals/<sha256> until the
-- variants exist, the WebP variants under variants/<sha256>.webp. Equal bytes
-- share one object, so a key is deleted only when no other live row names it.
-- The lists in the checks are lib/photos.ts's.
create table photo (
  id uuid primary key default gen_random_uuid(),
  uploader_id text not null,
  lost_report_id uuid references safety_lost_report (id) on delete cascade,
  found_report_id uuid references safety_found_report (id) on delete cascade,
  animal_id uuid references animal (id) on delete cascade,
  status text not null default 'processing' check (status in ('processing', 'ready', 'failed', 'deleted')),
  -- Why processing failed, for the owner and admins (not shown publicly).
  failure_reason text check (char_length(failure_reason) <= 500),
  original_sha256 text not null check (original_sha256 ~ '^[0-9a-f]{64}$'),
  original_type text not null check (original_type in ('jpeg', 'png', 'webp', 'gif', 'heif')),
  original_bytes int not null check (original_bytes between 1 and 10485760),
  thumb_key text check (thumb_key ~ '^variants/[0-9a-f]{64}\.webp$'),
  display_key text check (display_key ~ '^variants/[0-9a-f]{64}\.webp$'),
  -- Of the display variant, upright.
  width int check (width > 0),
  height int check (height > 0),
  -- 64-bit dHash (lib/images/phash.ts) for matching.
  phash text check (phash ~ '^[0-9a-f]{16}$'),
  attempts int not null default 0,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  ready_at timestamptz,
  deleted_at timestamptz,
  deleted_by text,
  objects_deleted_at timestamptz,
  constraint photo_one_parent check (num_nonnulls(lost_report_id, found_report_id, animal_id) = 1),
  constraint photo_ready_complete check (
    status <> 'ready' or (thumb_key is not null and display_key is not null and width is not null
      and height is not null and phash is not null and ready_at is not null)),
  constraint photo_failed_has_reason check (status <> 'failed' or failure_reason is not null),
  constraint photo_deleted_has_time check (status <> 'deleted' or deleted_at is not null)
);
-- Listings (ready ones, oldest first) and the per-parent cap count non-deleted photos.
create index photo_lost_report_idx on photo (lost_report_id, created_at, id) where lost_report_id is not null and status <> 'deleted';
create index photo_found_report_idx on photo (found_report_id, created_at, id) where found_report_id is not null and status <> 'deleted';
create index photo_animal_idx on photo (animal_id, created_at, id) where animal_id is not null and status <> 'deleted';
-- "Does another row still need this object?" before an object is deleted.
create index photo_original_idx on photo (original_sha256) where status = 'processing';
create index photo_thumb_key_idx on photo (thumb_key) where status <> 'deleted';
create index photo_display_key_idx on photo (display_key) where status <> 'deleted';
create index photo_uploader_idx on photo (uploader_id, created_at desc);

-- A photo can be reported and moderated (lib/moderation.ts MODERATION_TARGET_TYPES).
alter table moderation_report drop constraint moderation_report_target_type_check;
alter table moderation_report add constraint moderation_report_target_type_check
  check (target_type in ('lost_report', 'found_report', 'sighting', 'relay_message', 'photo'));
alter table moderation_content_state drop constraint moderation_content_state_target_type_check;
alter table moderation_content_state add constraint moderation_content_state_target_type_check
  check (target_type in ('lost_report', 'found_report', 'sighting', 'relay_message', 'photo'));
