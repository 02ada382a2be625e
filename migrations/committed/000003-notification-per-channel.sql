--! Previous: sha1:a82d6ead6fffb7f8b271f6ed35ead919ddbdf355
--! Hash: sha1:442e7af15ad30ebebbcfa6c9de834465f6355480
--! Message: notification per channel

-- Part 2: every event reaches its person. in_app is always written; email as
-- well when the recipient set an address (optionally only for some kinds).
-- So one event gives one notification per (recipient, channel), and the
-- kind, the ids to follow and the read time live on the row. The lists in
-- the check constraints are lib/notifications.ts's (tested).
alter table notification add column kind text not null default 'relay_message'
  check (kind in ('relay_message', 'sighting', 'match', 'nearby_lost', 'tag_scanned', 'report_expiring',
                  'content_moderated', 'account_suspended'));
alter table notification alter column kind drop default;
alter table notification add column data jsonb not null default '{}'::jsonb;
alter table notification add column read_at timestamptz;

drop index notification_source_event_id_key;
create unique index notification_event_recipient_channel_key
  on notification (source_event_id, recipient_actor_id, channel);

-- `channel` was a single preferred channel; email_kinds replaces it: null means
-- email for every kind, '{}' none. The address stays in `email`.
alter table notification_preference add column email_kinds text[];
update notification_preference set email_kinds = '{}' where channel = 'in_app';
alter table notification_preference drop column channel;
