--! Previous: sha1:c07f94b19a017b1f1d1d917f3abd390389bad89b
--! Hash: sha1:d7f0b6047e53679291bf7df579756f6b3d540322
--! Message: sightings have limits

-- A sighting's note reaches the public sightings list only once the lost
-- report's owner or a moderator has listed it (api/safety/sightings/store.ts
-- markReviewed), so a stranger's note is not published unseen. Null until then;
-- seen_at is when the animal was seen.
alter table safety_sighting add column reviewed_at timestamptz;

-- Grouped notifications (notifier/grouping.ts): a report's owner gets at most
-- one `sighting` notification per report per 10 minutes, and the sightings
-- after it are counted into it. Every grouped event handled for a recipient
-- is a row here, keyed on (source event, recipient, group) like a
-- notification, so a redelivered event is counted once. The group's opener
-- (group_event_id = source_event_id) is the event whose notification rows
-- the group updates; its occurred_at places the window.
create table notification_group_member (
  source_event_id uuid not null,
  recipient_actor_id text not null,
  group_key text not null,
  group_event_id uuid not null,
  occurred_at timestamptz not null,
  created_at timestamptz not null default now(),
  primary key (source_event_id, recipient_actor_id, group_key)
);
create index notification_group_member_opener_idx
  on notification_group_member (recipient_actor_id, group_key, occurred_at)
  where group_event_id = source_event_id;
create index notification_group_member_group_idx on notification_group_member (group_event_id, recipient_actor_id, group_key);
