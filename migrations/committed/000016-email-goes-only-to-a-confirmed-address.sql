--! Previous: sha1:2484b48749b9855d4e961b1f45ad5c93495c9e56
--! Hash: sha1:8a0967781197b48d40eebef8080800f37ae5326e
--! Message: email goes only to a confirmed address

-- notification_preference.email is the address in use: the notifier reads it
-- for every email, and the API writes it only once the address is confirmed
-- (or at once with EMAIL_VERIFICATION=off). An address awaiting confirmation
-- waits here, one per actor: setting another address replaces the row, so
-- the earlier link dies with it, and following the link deletes it, so a
-- link works once. Addresses set before this migration stay in use.
create table email_confirmation (
  id uuid primary key default gen_random_uuid(),
  actor_id text not null unique,
  email text not null,
  -- sha256 of the link's token, written by the delivery that sends the email
  -- (notifier/delivery.ts); null until then. The token itself is never stored.
  token_hash bytea unique,
  requested_at timestamptz not null default now(),
  -- 24 hours after the email went out; null until then.
  expires_at timestamptz
);

-- The confirmation email is a notification of its own kind (lib/notifications.ts).
alter table notification drop constraint notification_kind_check;
alter table notification add constraint notification_kind_check
  check (kind in ('relay_message', 'sighting', 'match', 'nearby_lost', 'tag_scanned', 'report_expiring',
                  'content_moderated', 'account_suspended', 'email_confirmation'));
