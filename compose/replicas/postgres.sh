#!/bin/sh
# Postgres for the replicas profile (compose/Dockerfile.replicas, target postgres).
# On first start, makes a cluster in $PGDATA (the volume) whose user postgres has
# the password $POSTGRES_PASSWORD over the network; then runs the server in the
# foreground, listening on every address of the container.
set -eu

: "${PGDATA:?}"
: "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD must be set}"

if [ ! -s "$PGDATA/PG_VERSION" ]; then
    pwfile="$(mktemp)"
    printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile"
    initdb -D "$PGDATA" -U postgres --encoding=UTF8 --locale=C \
        --auth-local=trust --auth-host=scram-sha-256 --pwfile="$pwfile"
    rm -f "$pwfile"
    echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
fi

# Each replica's workers hold a pool of connections: more than the default 100.
exec postgres -D "$PGDATA" -c listen_addresses='*' -c unix_socket_directories=/tmp \
    -c max_connections="${POSTGRES_MAX_CONNECTIONS:-500}"
