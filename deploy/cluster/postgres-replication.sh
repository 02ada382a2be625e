#!/bin/sh
# Run once by the postgres image's first start (/docker-entrypoint-initdb.d): lets the `cluster`
# profile's postgres-replica stream from it. The image's pg_hba.conf line `host all all all` does
# not cover replication connections, which need a line of their own.
echo "host replication all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
