#!/usr/bin/env bash
# The API reference as clients meet it, against real servers built by `cargo test --no-run`:
#  1. a TypeScript client generated from the served document (openapi-typescript's types,
#     openapi-fetch's requests; tests/contract/package-lock.json), type-checked by tsc and run
#     against a server on SQLite and one on PostgreSQL (TEST_DATABASE_URL);
#  2. Schemathesis (tests/contract/requirements.txt, in a virtualenv under target/) against a server
#     with a fresh database each, authenticated once as a guest and once as the organiser, with the
#     response-schema, status-code, content-type and server-error checks.
# Installs what it uses. Part of scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${CONFETTI_BIN:-$PWD/target/debug/confetti}
export CONFETTI_BIN=$BIN
[ -x "$BIN" ] || { echo "$BIN is missing: run cargo test --no-run first" >&2; exit 1; }

echo "== The generated TypeScript client"
(
  cd tests/contract
  npm ci --no-audit --no-fund --silent
  node generate.mjs
  npx --no-install openapi-typescript generated/openapi.json --output generated/api.d.ts
  echo "generated client types: $(wc -c <generated/api.d.ts) bytes, $(wc -l <generated/api.d.ts) lines"
  npx --no-install tsc -p .
  echo "tsc: the client's requests type-check against the generated types"
  node --test client.test.mjs
)

echo "== Schemathesis"
VENV=target/contract-venv
if ! "$VENV/bin/st" --version 2>/dev/null | grep -qF "$(sed -n 's/^schemathesis==//p' tests/contract/requirements.txt)"; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check -r tests/contract/requirements.txt
fi
SCHEMATHESIS_HOOKS=schemathesis_hooks PYTHONPATH=tests/contract \
  "$VENV/bin/python" tests/contract/fuzz.py "$BIN" "$VENV/bin/st"
