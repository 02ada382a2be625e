--! Previous: sha1:cb84b91691ff39c3e4787a8f6fceb1c21dbdc6b1
--! Hash: sha1:cce0bcb9ca7158983f4aa670dd61cfd2d22de99c
--! Message: phones get notifications by web push

-- Web Push (RFC 8030, 8291, 8292; contract part 3, "Push to phones"): a
-- browser's push subscription, one row per endpoint. The endpoint is the push
-- service's URL for that browser; p256dh (65-byte uncompressed P-256 point)
-- and auth (16 bytes) are the keys the payload is encrypted to, stored as the
-- base64url text the browser gave. An endpoint belongs to one actor: the same
-- endpoint posted again is the same row. The notifier deletes a row when its
-- push service answers 404 or 410 (notifier/deliverers/push.ts).
create table push_subscription (
  id uuid primary key default gen_random_uuid(),
  actor_id text not null,
  endpoint text not null unique check (char_length(endpoint) between 1 and 2048),
  p256dh text not null,
  auth text not null,
  created_at timestamptz not null default now()
);
create index push_subscription_actor_idx on push_subscription (actor_id);

-- The third channel (lib/notifications.ts CHANNELS).
alter table notification drop constraint notification_channel_check;
alter table notification add constraint notification_channel_check check (channel in ('email', 'in_app', 'push'));

-- The kinds pushed to phones: null means every kind, as email_kinds.
alter table notification_preference add column push_kinds text[];
