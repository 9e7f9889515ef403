#!/bin/sh
# The PostgreSQL server of the postgresql-server example: Debian's PostgreSQL 15 in one container.
# Started as root, it makes the data folder the postgres user's (a fresh volume is root's), creates
# the cluster on first start (the superuser's password from POSTGRES_PASSWORD; the database
# POSTGRES_DB owned by a role of the same name that cannot log in, which every binding's role acts
# as, so that what one binding creates the others can use), then runs the server as postgres with
# the settings given as arguments (`-c name=value`).
set -eu
BIN=/usr/lib/postgresql/15/bin
PGDATA="${PGDATA:-/var/lib/postgresql/data/pgdata}"
export PGDATA
: "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD is not set}"
POSTGRES_DB="${POSTGRES_DB:-app}"
as_postgres() { setpriv --reuid=postgres --regid=postgres --init-groups -- "$@"; }

mkdir -p "$PGDATA" /run/postgresql
chown postgres:postgres "$(dirname "$PGDATA")" "$PGDATA" /run/postgresql
chmod 700 "$PGDATA"

if [ ! -s "$PGDATA/PG_VERSION" ]; then
  echo "initialising the cluster in $PGDATA"
  pwfile="$(mktemp)"
  printf '%s' "$POSTGRES_PASSWORD" >"$pwfile"
  chown postgres "$pwfile"
  as_postgres "$BIN/initdb" --pgdata="$PGDATA" --username=postgres --pwfile="$pwfile" \
    --auth-local=peer --auth-host=scram-sha-256 --encoding=UTF8 --locale=C >/dev/null
  rm -f "$pwfile"
  {
    echo 'host all all 0.0.0.0/0 scram-sha-256'
    echo 'host all all ::/0 scram-sha-256'
  } >>"$PGDATA/pg_hba.conf"
  as_postgres "$BIN/pg_ctl" --pgdata="$PGDATA" --wait --silent -o "-c listen_addresses=''" start
  as_postgres psql --quiet --no-psqlrc --set ON_ERROR_STOP=1 --username=postgres --dbname=postgres \
    --set db="$POSTGRES_DB" <<'SQL'
CREATE ROLE :"db" NOLOGIN;
CREATE DATABASE :"db" OWNER :"db";
SQL
  as_postgres "$BIN/pg_ctl" --pgdata="$PGDATA" --wait --silent stop
fi

exec setpriv --reuid=postgres --regid=postgres --init-groups -- \
  "$BIN/postgres" -D "$PGDATA" -c listen_addresses='*' "$@"
