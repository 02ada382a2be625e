--! Previous: sha1:0f4b6e40cf93c7eea3d6c58ae4c64bee516b9988
--! Hash: sha1:c07f94b19a017b1f1d1d917f3abd390389bad89b
--! Message: held contact messages

-- A sender's daily cap on one target counts that sender's messages of the
-- last 24 hours: sender_key is the client's address key (an IPv6 client's
-- /64). Rate-limit buckets are pruned after two idle hours, so a daily cap
-- cannot be one. The digest job clears sender_key once a message is a day
-- old: no address is kept beyond what the cap needs.
alter table safety_relay_message add column sender_key text;
create index safety_relay_message_sender_idx on safety_relay_message (created_at)
  where sender_key is not null;

-- Past its target's daily volume a contact message is stored held: its event
-- says so and the owner is not notified of it one by one. The notifier's
-- hourly digest (contact_messages__digest) sends each target's held messages
-- in one notification and sets digested_at in the same transaction, so each
-- held message is in exactly one digest.
alter table safety_relay_message add column held boolean not null default false;
alter table safety_relay_message add column digested_at timestamptz;
alter table safety_relay_message add constraint safety_relay_message_digested_only_held
  check (held or digested_at is null);
create index safety_relay_message_waiting_idx on safety_relay_message (created_at, id)
  where held and digested_at is null;
