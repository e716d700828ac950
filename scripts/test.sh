#!/usr/bin/env bash
# Every test suite of Confetti, exactly as CI runs it: the Rust tests against a fresh SQLite
# file and a fresh PostgreSQL database per test, then (when present) the browser tests in
# Debian's Chromium. Installs and starts what they need first.
set -euo pipefail
cd "$(dirname "$0")/.."

TEST_DATABASE_URL=$(scripts/ensure-postgres.sh)
export TEST_DATABASE_URL
# Databases of earlier, interrupted runs.
psql "$TEST_DATABASE_URL" -qtAc "SELECT datname FROM pg_database WHERE datname LIKE 'test\_%'" |
  while read -r db; do [ -n "$db" ] && psql "$TEST_DATABASE_URL" -qc "DROP DATABASE IF EXISTS \"$db\"" >/dev/null; done

echo "== Rust tests (SQLite and PostgreSQL at ${TEST_DATABASE_URL%%@*}@…)"
cargo test --locked --all-targets

if [ -f tests/browser/package.json ]; then
  echo "== Browser tests (Chromium)"
  as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
  missing=()
  command -v chromium >/dev/null 2>&1 || missing+=(chromium)
  command -v node >/dev/null 2>&1 || missing+=(nodejs)
  command -v npm >/dev/null 2>&1 || missing+=(npm)
  if [ ${#missing[@]} -gt 0 ]; then
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
  fi
  cargo build --locked
  # One test file at a time where node can be told so (node 20+); each starts its own server.
  concurrency=()
  if node --help 2>/dev/null | grep -- --test-concurrency >/dev/null; then concurrency=(--test-concurrency=1); fi
  (cd tests/browser && npm ci --no-audit --no-fund --silent && node --test "${concurrency[@]}")
fi
