--! Previous: sha1:913bbfb4fec0ec4c11d90a673f19afee9c8a0ee0
--! Hash: sha1:a82d6ead6fffb7f8b271f6ed35ead919ddbdf355
--! Message: notification round attempts

-- Attempts in the current delivery round (since the notification was created
-- or last replayed). The delivery job resumes the round from here, so a
-- worker that dies mid-round cannot hand the next run a fresh 3 attempts;
-- `attempts` stays the lifetime total.
alter table notification add column if not exists round_attempts int not null default 0;
