#!/usr/bin/env bash
# Prepares PostgreSQL for the Postgres store tests: installs it if missing, makes the cluster listen
# on 127.0.0.1 only (never another interface), starts it, and creates the role and database the
# tests use (rft/rft, password auth over TCP). Idempotent; CI runs it as root on a fresh machine.
# Prints the URL to export as RFT_TEST_DATABASE_URL (the tests default to that same URL).
set -euo pipefail

PG_USER="${RFT_PG_USER:-rft}"
PG_PASSWORD="${RFT_PG_PASSWORD:-rft}"
PG_DB="${RFT_PG_DB:-rft}"
PG_PORT="${RFT_PG_PORT:-5432}"

if ! command -v pg_lsclusters >/dev/null; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
fi

# The newest installed major version and its cluster (Debian's package creates "main").
version="$(pg_lsclusters -h | awk '{print $1}' | sort -n | tail -1)"
if [ -z "$version" ]; then
  version="$(ls /usr/lib/postgresql | sort -n | tail -1)"
  pg_createcluster "$version" main
fi
conf="/etc/postgresql/$version/main/postgresql.conf"

# Loopback only: replace any listen_addresses line (commented or not) with ours.
if ! grep -qE "^listen_addresses = '127.0.0.1'" "$conf"; then
  sed -i -E "/^[#[:space:]]*listen_addresses[[:space:]]*=/d" "$conf"
  echo "listen_addresses = '127.0.0.1'" >> "$conf"
  restart=1
fi
if ! grep -qE "^port = $PG_PORT\b" "$conf"; then
  sed -i -E "/^[#[:space:]]*port[[:space:]]*=/d" "$conf"
  echo "port = $PG_PORT" >> "$conf"
  restart=1
fi

status="$(pg_lsclusters -h | awk -v v="$version" '$1 == v && $2 == "main" {print $4}')"
if [ "$status" = "online" ] && [ "${restart:-0}" = "1" ]; then
  pg_ctlcluster "$version" main restart
elif [ "$status" != "online" ]; then
  pg_ctlcluster "$version" main start
fi

# pg_hba.conf from the Debian package already has "host all all 127.0.0.1/32 scram-sha-256".
psql_admin() { runuser -u postgres -- psql -p "$PG_PORT" -v ON_ERROR_STOP=1 -qtAX "$@"; }
for _ in $(seq 1 30); do psql_admin -c 'SELECT 1' >/dev/null 2>&1 && break; sleep 1; done

if [ "$(psql_admin -c "SELECT 1 FROM pg_roles WHERE rolname = '$PG_USER'")" != "1" ]; then
  psql_admin -c "CREATE ROLE \"$PG_USER\" LOGIN PASSWORD '$PG_PASSWORD'"
else
  psql_admin -c "ALTER ROLE \"$PG_USER\" LOGIN PASSWORD '$PG_PASSWORD'"
fi
if [ "$(psql_admin -c "SELECT 1 FROM pg_database WHERE datname = '$PG_DB'")" != "1" ]; then
  psql_admin -c "CREATE DATABASE \"$PG_DB\" OWNER \"$PG_USER\""
fi

url="postgres://$PG_USER:$PG_PASSWORD@127.0.0.1:$PG_PORT/$PG_DB"
PGPASSWORD="$PG_PASSWORD" psql "$url" -qtAX -c 'SELECT 1' >/dev/null
echo "setup-postgres: PostgreSQL $version listening on 127.0.0.1:$PG_PORT"
echo "RFT_TEST_DATABASE_URL=$url"
