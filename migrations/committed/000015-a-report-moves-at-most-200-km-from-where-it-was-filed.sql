--! Previous: sha1:d7f0b6047e53679291bf7df579756f6b3d540322
--! Hash: sha1:2484b48749b9855d4e961b1f45ad5c93495c9e56
--! Message: a report moves at most 200 km from where it was filed

-- Where a report was first filed, precise: a PATCH may move the report at
-- most 200 km from here (api/safety/reports/owner-routes.ts), so a series of
-- corrections cannot walk it across the map. The create writes it in its
-- one statement, from the same parameter as location. Null only for a row
-- written outside the API (tests, benches): a PATCH then counts from its
-- location and pins that point on its first move.
alter table safety_lost_report add column filed_location geography(point, 4326);
alter table safety_found_report add column filed_location geography(point, 4326);

-- Reports filed before this migration count from where they are now: the
-- point they were first filed at was not kept.
update safety_lost_report set filed_location = location where filed_location is null;
update safety_found_report set filed_location = location where filed_location is null;
