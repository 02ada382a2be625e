--! Previous: sha1:094487a03c609b5068565bba782fe706f329f87c
--! Hash: sha1:cb84b91691ff39c3e4787a8f6fceb1c21dbdc6b1
--! Message: shelters publish the animals they take in

-- Shelter partners (contract part 3, "Shelter partners"): shelters, rescues
-- and vets that publish the animals they take in through the partner API
-- (api/partners/). A partner is also an actor, `partner:<id>`, the reporter
-- of the found reports it publishes. Its password is stored only as an
-- scrypt hash (lib/partners.ts): `scrypt$<N>$<r>$<p>$<salt b64>$<hash b64>`.
create table partner (
  id uuid primary key default gen_random_uuid(),
  name text not null check (char_length(name) between 1 and 200),
  kind text not null check (kind in ('shelter', 'rescue', 'vet')),
  location geography(point, 4326) not null,
  -- {phone?, email?, address?, website?}: public by design, shown with its animals.
  public_contact jsonb not null default '{}' check (jsonb_typeof(public_contact) = 'object'),
  login_email text not null check (char_length(login_email) between 3 and 254),
  password_hash text not null,
  date_format text not null default 'YYYY-MM-DD' check (date_format in ('YYYY-MM-DD', 'MM/DD/YYYY', 'DD/MM/YYYY', 'DD.MM.YYYY')),
  created_by text not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  password_rotated_at timestamptz,
  suspended_at timestamptz,
  suspended_by text,
  suspension_reason text,
  restored_at timestamptz,
  restored_by text,
  -- Tokens issued before this are dead: a suspension sets it, so a token
  -- still answers 403 while the partner is suspended and 401 after a restore.
  tokens_valid_after timestamptz,
  constraint partner_suspension_complete check (suspended_at is null or (suspended_by is not null and suspension_reason is not null))
);
create unique index partner_login_email_key on partner (lower(login_email));

-- Bearer tokens of /partners/v2/auth/login, one hour each, stored as the
-- sha256 of the token. A password rotation deletes them; a suspension kills
-- them through partner.tokens_valid_after.
create table partner_token (
  token_hash bytea primary key,
  partner_id uuid not null references partner (id) on delete cascade,
  expires_at timestamptz not null,
  created_at timestamptz not null default now()
);
create index partner_token_partner_idx on partner_token (partner_id);

-- Custody: a found report a partner published is in its custody while open.
-- external_id is the shelter's own code for the animal (ASM3 sends its
-- shelter code); one open report per partner and external id, so a
-- re-publish updates it and an animal taken in again after it left gets a
-- new report. metadata is kept as the partner sent it (at most 2 KB; json,
-- not jsonb, so its keys keep their order), animal holds the animal fields a
-- found report has no column for.
alter table safety_found_report
  add column partner_id uuid references partner (id),
  add column partner_external_id text check (char_length(partner_external_id) between 1 and 200),
  add column partner_metadata json,
  add column partner_animal jsonb,
  add constraint safety_found_report_partner_complete
    check ((partner_id is null) = (partner_external_id is null));
create unique index safety_found_report_partner_open_key on safety_found_report (partner_id, partner_external_id)
  where partner_id is not null and status = 'open';
create index safety_found_report_partner_idx on safety_found_report (partner_id, created_at, id) where partner_id is not null;

-- A partner's animal that left its custody closes with closed_reason left_custody (lib/report-lifecycle.ts).
alter table safety_found_report drop constraint safety_found_report_closed_reason_check;
alter table safety_found_report add constraint safety_found_report_closed_reason_check
  check (closed_reason in ('expired', 'left_custody'));

-- A photo a partner gave by URL: the partner__photo_fetch job fetches it
-- (lib/safe-fetch.ts) and hands the bytes to the photo pipeline (photo_id);
-- a refused or failed fetch is `failed` with the reason the partner reads.
create table partner_photo_fetch (
  id uuid primary key default gen_random_uuid(),
  partner_id uuid not null references partner (id),
  found_report_id uuid not null references safety_found_report (id) on delete cascade,
  url text not null check (char_length(url) between 1 and 2048),
  status text not null default 'fetching' check (status in ('fetching', 'fetched', 'failed')),
  failure_reason text check (char_length(failure_reason) <= 500),
  photo_id uuid references photo (id),
  attempts int not null default 0,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint partner_photo_fetch_failed_has_reason check (status <> 'failed' or failure_reason is not null),
  constraint partner_photo_fetch_fetched_has_photo check (status <> 'fetched' or photo_id is not null)
);
create index partner_photo_fetch_report_idx on partner_photo_fetch (found_report_id, created_at, id);
