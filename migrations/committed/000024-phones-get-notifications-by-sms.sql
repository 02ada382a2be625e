--! Previous: sha1:da369d1c10af86fdbf2cf47fb511f37dd30e6851
--! Hash: sha1:77e91dafb0aedb808181e8d0cb76d6a70c38b1df
--! Message: phones get notifications by sms

-- SMS (contract part 4, "SMS"; lib/notifications.ts, notifier/deliverers/sms.ts,
-- api/phone, api/sms). Numbers are kept in E.164 (`+4917612345678`), and only
-- here: no event, notification, job or log line carries one.

-- The fourth channel, and the two kinds only the service writes. Each check is
-- widened to what it allows now plus these values, so this file does not
-- depend on which other migration widened it last (the order of Postgres's
-- own text is kept, the new values appended).
do $$
declare
  widening record;
  allowed text[];
begin
  for widening in
    select * from (values
      ('notification_channel_check', 'channel', array['sms']),
      ('notification_kind_check', 'kind', array['phone_verification', 'sms_reply'])
    ) as w(name, col, added)
  loop
    select array(select m[1] from regexp_matches(pg_get_constraintdef(c.oid), '''([^'']+)''', 'g') as m)
      into allowed
      from pg_constraint c
      where c.conrelid = 'notification'::regclass and c.conname = widening.name;
    allowed := allowed || array(select a from unnest(widening.added) a where a <> all (allowed));
    execute format('alter table notification drop constraint %I', widening.name);
    execute format(
      'alter table notification add constraint %I check (%I in (%s))',
      widening.name, widening.col, (select string_agg(quote_literal(a), ', ') from unnest(allowed) a)
    );
  end loop;
end
$$;

-- notification_preference.phone is the verified number in use: the notifier
-- texts it, and the API writes it only once its code was entered. sms_kinds:
-- the kinds texted; null means the default (match, relay_message, tag_scanned).
alter table notification_preference add column if not exists phone text;
alter table notification_preference add column if not exists sms_kinds text[];

-- A number awaiting its code, one per actor: setting another number replaces
-- the row (a new id, so the earlier code dies with it), and entering the code
-- deletes it. code_hash and expires_at are written by the delivery that sends
-- the code (notifier/deliverers/sms.ts); the code itself is never stored.
create table if not exists phone_verification (
  id uuid primary key default gen_random_uuid(),
  actor_id text not null unique,
  phone text not null,
  code_hash bytea,
  expires_at timestamptz,
  tries int not null default 0,
  requested_at timestamptz not null default now()
);

-- Every number the service has texted or heard from: where STOP is kept
-- (stopped_at; START clears it), whether it ever wrote to the service
-- (wrote_at), and whether it was ever texted (texted_at). A notification to a
-- number that is no actor's (a finder's, or a keyword's answer) has the
-- recipient `phone:<id>` of its row here, never the number.
create table if not exists sms_number (
  id uuid primary key default gen_random_uuid(),
  phone text not null unique,
  stopped_at timestamptz,
  wrote_at timestamptz,
  texted_at timestamptz,
  created_at timestamptz not null default now()
);

-- A masked conversation: a contact message texted to the report's owner. The
-- owner's replies from owner_phone go to the finder's number (when their
-- fromContact held one), the finder's back to the owner; a reply belongs to
-- its number's most recent conversation within 7 days of last_at.
create table if not exists sms_conversation (
  id uuid primary key default gen_random_uuid(),
  relay_message_id uuid not null unique references safety_relay_message (id) on delete cascade,
  owner_actor_id text not null,
  owner_phone text not null,
  finder_number_id uuid references sms_number (id) on delete set null,
  lost_report_id uuid,
  found_report_id uuid,
  animal_id uuid,
  created_at timestamptz not null default now(),
  last_at timestamptz not null default now()
);
create index if not exists sms_conversation_owner_idx on sms_conversation (owner_phone, last_at desc);
create index if not exists sms_conversation_finder_idx on sms_conversation (finder_number_id, last_at desc);

-- Each text received, once: the provider's MessageSid makes a retried webhook
-- a no-op. The text itself is not kept here.
create table if not exists sms_inbound (
  id uuid primary key default gen_random_uuid(),
  message_sid text not null unique,
  number_id uuid not null references sms_number (id) on delete cascade,
  conversation_id uuid references sms_conversation (id) on delete set null,
  outcome text not null check (outcome in ('stop', 'start', 'help', 'to_finder', 'to_owner', 'no_finder_phone', 'no_conversation')),
  received_at timestamptz not null default now()
);

-- Each text the provider took (its sid), with the delivery status its
-- callbacks report (POST /v1/sms/status). A callback may arrive before the
-- delivery wrote the row, so either may create it.
create table if not exists sms_send (
  sid text primary key,
  notification_id uuid,
  kind text,
  segments int,
  status text not null,
  error_code int,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

-- What was texted on a UTC day: per number (texts against
-- SMS_DAILY_LIMIT_PER_RECIPIENT), and for the whole service (segments against
-- SMS_DAILY_SEGMENTS). A delivery reserves its text here before it sends and
-- gives it back when the provider did not take it.
create table if not exists sms_daily_usage (
  day date not null,
  number_id uuid not null references sms_number (id) on delete cascade,
  texts int not null default 0,
  segments int not null default 0,
  primary key (day, number_id)
);
create table if not exists sms_daily_segments (
  day date primary key,
  segments int not null default 0
);
