-- Run once by the postgres image's first start (/docker-entrypoint-initdb.d): the role the
-- `cluster` profile's APIs log in as through PgBouncer. Its defaults stand in for the startup
-- parameters PgBouncer refuses (lib/db.ts ROLE_SETTINGS; the API checks them at start). A role of
-- its own: on `postgres` they would also bound the migrations and the operator tasks.
create role api login password 'api' in role postgres;
alter role api set statement_timeout = '10s';
alter role api set jit = off;
