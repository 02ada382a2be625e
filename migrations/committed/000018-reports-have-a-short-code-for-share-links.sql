--! Previous: sha1:c5e519f8b8630c12c10337a7dfdd109b5d527fc3
--! Hash: sha1:094487a03c609b5068565bba782fe706f329f87c
--! Message: reports have a short code for share links

-- A short code names a lost or found report in a printed short link
-- (GET /s/{code}): 8 characters of a 31-letter alphabet with no look-alikes
-- (no 0/o, 1/l/i), lowercase so a typed link needs no shift key. 31^8 is
-- about 8.5e11 codes. Its randomness comes from gen_random_uuid() (a strong
-- random source, built in), so a code says nothing about when the report was
-- made. One code is unique across both tables: the function draws again until
-- neither has it, and each table's unique index stops a racing duplicate.
create function safety_new_short_code() returns text
language plpgsql volatile as $$
declare
  alphabet constant text := '23456789abcdefghjkmnpqrstuvwxyz';
  bytes bytea;
  code text;
begin
  loop
    bytes := decode(replace(gen_random_uuid()::text, '-', ''), 'hex');
    code := '';
    -- Bytes 0-5 and 9-15 of a v4 uuid are random; 8 of them, each taken mod 31 (bias under 1 %).
    for i in 0..7 loop
      code := code || substr(alphabet, (get_byte(bytes, case when i < 6 then i else i + 4 end) % 31) + 1, 1);
    end loop;
    exit when not exists (select 1 from safety_lost_report where short_code = code)
      and not exists (select 1 from safety_found_report where short_code = code);
  end loop;
  return code;
end;
$$;

alter table safety_lost_report add column short_code text;
alter table safety_found_report add column short_code text;

-- Existing reports get theirs here; new ones at their insert, from the default.
update safety_lost_report set short_code = safety_new_short_code() where short_code is null;
update safety_found_report set short_code = safety_new_short_code() where short_code is null;

alter table safety_lost_report
  alter column short_code set default safety_new_short_code(),
  alter column short_code set not null,
  add constraint safety_lost_report_short_code_check check (short_code ~ '^[2-9a-hjkmnp-z]{8}$');
alter table safety_found_report
  alter column short_code set default safety_new_short_code(),
  alter column short_code set not null,
  add constraint safety_found_report_short_code_check check (short_code ~ '^[2-9a-hjkmnp-z]{8}$');

create unique index safety_lost_report_short_code_key on safety_lost_report (short_code);
create unique index safety_found_report_short_code_key on safety_found_report (short_code);
