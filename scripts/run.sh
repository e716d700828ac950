#!/usr/bin/env bash
# Runs Confetti on this machine: installs what the build needs when it is missing
# (scripts/ensure-build-tools.sh), builds the release binary (the first build takes minutes) and
# serves with SQLite and the photos in ./data, printing a demo event's join link and QR code.
# Arguments go to `confetti serve` (e.g. --public-url https://photos.example.org).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/ensure-build-tools.sh
if [ ! -x target/release/confetti ]; then
  echo "confetti: building the release binary (the first build takes several minutes on a small machine)" >&2
fi
exec cargo run --release --locked -- serve "$@"
