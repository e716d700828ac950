#!/usr/bin/env bash
# Makes sure a PostgreSQL server answers on 127.0.0.1:5432 for the tests: installs it with
# apt-get when missing, starts the cluster when stopped, and gives the `postgres` user the
# password `postgres` when the server asks for one (a fresh Debian install does).
# Prints the URL to use as TEST_DATABASE_URL.
set -euo pipefail

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
url="${TEST_DATABASE_URL:-postgres://postgres:postgres@127.0.0.1:5432/postgres}"

if ! command -v pg_ctlcluster >/dev/null 2>&1; then
  echo "ensure-postgres: installing PostgreSQL" >&2
  as_root apt-get update -qq >&2
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2
fi

if ! pg_isready -q -h 127.0.0.1 -p 5432; then
  version=$(ls /etc/postgresql | sort -V | tail -n 1)
  echo "ensure-postgres: starting cluster $version/main" >&2
  as_root pg_ctlcluster --skip-systemctl-redirect "$version" main start >&2 || true
  for _ in $(seq 1 30); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 1; done
fi
pg_isready -q -h 127.0.0.1 -p 5432 || { echo "ensure-postgres: PostgreSQL does not answer on 127.0.0.1:5432" >&2; exit 1; }

if ! psql "$url" -qtAc 'SELECT 1' >/dev/null 2>&1; then
  echo "ensure-postgres: setting a password for the postgres user" >&2
  as_root runuser -u postgres -- psql -qc "ALTER USER postgres PASSWORD 'postgres'" >&2
  psql "$url" -qtAc 'SELECT 1' >/dev/null
fi
echo "$url"
