--! Previous: sha1:08f8963972bf89ce5d9b6962e3a3c9a32b53f348
--! Hash: sha1:4cd9808b473df83b47bbc79400656a578c9cf79f
--! Message: matches

-- A sighting not linked to a lost report may describe the animal, and then
-- takes part in matching (contract part 2, "Matches").
alter table safety_sighting add column species text check (species in ('dog', 'cat', 'bird', 'rabbit', 'other'));
alter table safety_sighting add column breed text;
alter table safety_sighting add column colors text[] not null default '{}';
-- Candidates are found by species, coarse point and time together: a GiST
-- index led by species (btree_gist) reads about a fifth of the rows the
-- open-report point index alone would (bench/matching/speed.ts).
create extension if not exists btree_gist;
create index safety_lost_report_open_match_idx on safety_lost_report
  using gist (species, coarse_location, last_seen_at) where status = 'open';
create index safety_found_report_open_match_idx on safety_found_report
  using gist (species, coarse_location, found_at) where status = 'open';
create index safety_sighting_unlinked_coarse_idx on safety_sighting using gist (species, coarse_location, seen_at)
  where lost_report_id is null and species is not null;

-- One row per (lost report, found report or sighting) pair the matcher
-- suggested. A re-run updates the row; a dismissed pair keeps its row, so it
-- is never suggested again. The lists in the checks are lib/matches.ts's.
create table safety_match (
  id uuid primary key default gen_random_uuid(),
  lost_report_id uuid not null references safety_lost_report (id) on delete cascade,
  kind text not null check (kind in ('found_report', 'sighting')),
  target_id uuid not null,
  score double precision not null check (score >= 0 and score <= 1),
  reasons text[] not null check (reasons <@ array['microchip', 'breed', 'colors', 'sex', 'distance', 'time', 'marks', 'photo']),
  distance_m double precision not null,
  status text not null default 'suggested' check (status in ('suggested', 'confirmed', 'dismissed')),
  decided_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (lost_report_id, kind, target_id)
);
create index safety_match_lost_idx on safety_match (lost_report_id, score desc, id);
create index safety_match_target_idx on safety_match (kind, target_id, score desc, id);
