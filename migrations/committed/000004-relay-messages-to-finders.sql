--! Previous: sha1:442e7af15ad30ebebbcfa6c9de834465f6355480
--! Hash: sha1:f0a56b07121a4260dcacac4b5d501b789c9f7ee3
--! Message: relay messages to finders

-- A finder who filed a found report can be reached through the same relay
-- (contract part 2): a relay message belongs to exactly one lost or one
-- found report.
alter table safety_relay_message alter column lost_report_id drop not null;
alter table safety_relay_message add column found_report_id uuid references safety_found_report (id) on delete cascade;
alter table safety_relay_message add constraint safety_relay_message_one_report
  check (num_nonnulls(lost_report_id, found_report_id) = 1);
create index safety_relay_message_found_report_idx on safety_relay_message (found_report_id, created_at desc)
  where found_report_id is not null;
