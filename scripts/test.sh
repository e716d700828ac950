#!/usr/bin/env bash
# Every test suite of Confetti, exactly as CI runs it: the Rust tests against a fresh SQLite
# file and a fresh PostgreSQL database per test (the storage tests once more with the photos
# in a real S3-protocol server, s3s-fs), then the browser tests in Debian's Chromium.
# Then the API reference as clients meet it (scripts/contract.sh). Installs and starts what they
# need first.
set -euo pipefail
cd "$(dirname "$0")/.."

TEST_DATABASE_URL=$(scripts/ensure-postgres.sh)
export TEST_DATABASE_URL
# Databases of earlier, interrupted runs (one still in use belongs to a run going on beside
# this one, and stays).
psql "$TEST_DATABASE_URL" -qtAc "SELECT datname FROM pg_database WHERE datname LIKE 'test\_%'" |
  while read -r db; do
    [ -n "$db" ] && { psql "$TEST_DATABASE_URL" -qc "DROP DATABASE IF EXISTS \"$db\"" >/dev/null 2>&1 ||
      echo "(kept $db: another test run is using it)"; }
  done

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
apt_install() {
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@"
}

# A real S3-protocol server for the S3 runs of the storage tests (about 3 minutes to build once):
# s3s-fs 0.14.1 with ListMultipartUploads, which it lacks (tests/s3s-fs-uploads), and which says
# the port it listens on. Its version names s3s-fs's and the wrapper's own revision.
S3S_FS=$(command -v s3s-fs-uploads || echo "${CARGO_HOME:-$HOME/.cargo}/bin/s3s-fs-uploads")
if ! [ -x "$S3S_FS" ] || ! "$S3S_FS" --version 2>/dev/null | grep -q '0\.14\.1+uploads\.2'; then
  echo "== Installing s3s-fs-uploads (s3s-fs 0.14.1 with ListMultipartUploads, for the tests)"
  cargo install --quiet --locked --force --path tests/s3s-fs-uploads
  S3S_FS="${CARGO_HOME:-$HOME/.cargo}/bin/s3s-fs-uploads"
fi
export S3S_FS
# The scale-out test puts instances behind haproxy with TLS (a certificate made by openssl).
missing=()
command -v haproxy >/dev/null 2>&1 || missing+=(haproxy)
command -v openssl >/dev/null 2>&1 || missing+=(openssl)
# The single-server recipe's test runs Caddy with deploy/Caddyfile and checks deploy/confetti.service
# with systemd-analyze.
command -v caddy >/dev/null 2>&1 || missing+=(caddy)
command -v systemd-analyze >/dev/null 2>&1 || missing+=(systemd)
# The colour tests read ICC profiles (Adobe RGB, an L* gray, Ghostscript's CMYK) and compare with
# Little CMS (the lcms2 crate links Debian's liblcms2).
for pkg_file in colord-data:/usr/share/color/icc/colord/AdobeRGB1998.icc \
  icc-profiles-free:/usr/share/color/icc/Gray-CIE_L.icc \
  libgs-common:/usr/share/color/icc/ghostscript/default_cmyk.icc \
  liblcms2-dev:/usr/include/lcms2.h; do
  [ -e "${pkg_file#*:}" ] || missing+=("${pkg_file%%:*}")
done
# The tests make HEIC files with libheif's heif-enc (and video clips with ffmpeg, which the
# server needs anyway: scripts/ensure-build-tools.sh below).
command -v heif-enc >/dev/null 2>&1 || missing+=(libheif-examples)
if [ ${#missing[@]} -gt 0 ]; then apt_install "${missing[@]}"; fi
# What building and running the server needs (pkg-config, nasm, libheif, ffmpeg): the same check
# as the run command's.
scripts/ensure-build-tools.sh

echo "== Formatting"
cargo fmt --check

# Clippy's lints run while the tests are built, not in a pass of their own: `cargo clippy` is
# `cargo check` with clippy-driver wrapping the compiler for this crate, and a separate check of
# every dependency took 12.8 minutes of a cold run on 2 cores. Here clippy-driver wraps the
# compiler of the build the tests need anyway (dependencies are compiled once, as always), with
# the lints `cargo clippy -- -D warnings -W clippy::undocumented_unsafe_blocks` would apply
# (CLIPPY_ARGS is how cargo-clippy hands them to clippy-driver). Every cargo command below runs
# with the same wrapper, so none of them builds this crate again.
RUSTC_WORKSPACE_WRAPPER=$(rustup which clippy-driver 2>/dev/null || command -v clippy-driver) ||
  { echo "clippy is missing: rustup component add clippy" >&2; exit 1; }
export RUSTC_WORKSPACE_WRAPPER
export CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__-W__CLIPPY_HACKERY__clippy::undocumented_unsafe_blocks__CLIPPY_HACKERY__"

# What the browser tests and the contract check run on: Chromium and Node (the browser tests),
# Python's venv (Schemathesis), ffmpeg (test clips). Installed here, before the suites run side
# by side, so no two of them call apt at once.
missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
command -v ffmpeg >/dev/null 2>&1 || missing+=(ffmpeg)
python3 -c 'import ensurepip, venv' 2>/dev/null || missing+=(python3-venv)
if [ ${#missing[@]} -gt 0 ]; then apt_install "${missing[@]}"; fi

echo "== Lints and the tests' build (clippy with -D warnings while building)"
cargo test --locked --all-targets --no-run

# Two lanes side by side on the one build: the Rust tests; and the browser tests, then the API
# reference as clients meet it. Parts of either lane wait (for a killed instance's lease, a
# throttled network, a retry's back-off) while the other computes: on 2 cores the lanes took
# 21 minutes against 26.5 one after another (docs/benchmarks.md, "The test run in two lanes").
# Each line is marked with its lane; each lane ends with its verdict.
rust_lane() {
  echo "== Rust tests (SQLite, PostgreSQL at ${TEST_DATABASE_URL%%@*}@…, S3 through s3s-fs)"
  # Every test binary runs, also after one has failed: the run names all that failed at once.
  cargo test --locked --all-targets --no-fail-fast
}
page_lane() {
  echo "== Browser tests (Chromium)"
  # One test file at a time where node can be told so (node 20+); each starts its own server
  # on target/debug/confetti, the binary the tests' build made.
  local concurrency=()
  if node --help 2>/dev/null | grep -- --test-concurrency >/dev/null; then concurrency=(--test-concurrency=1); fi
  # (`set -e` does not hold inside a lane, which runs as the left side of `||`: each step's
  # status is kept by hand.)
  local status=0 step=0
  (cd tests/browser && npm ci --no-audit --no-fund --silent && node --test "${concurrency[@]}") || step=$?
  echo "== browser tests ended with status $step"
  [ "$step" = 0 ] || status=$step
  echo "== The API reference as clients meet it (a generated TypeScript client, Schemathesis)"
  step=0
  scripts/contract.sh || step=$?
  echo "== contract check ended with status $step"
  [ "$step" = 0 ] || status=$step
  return "$status"
}
# Each lane's output also goes to target/test-lanes/LANE.log, so the end of the run can name what
# failed: the two lanes' lines are interleaved above, and a CI log is often read from its tail.
logs=target/test-lanes
mkdir -p "$logs"
lane() {
  local name=$1 started=$SECONDS status=0
  "${name}_lane" > >(tee "$logs/$name.log" | sed -u "s/^/[$name] /") 2>&1 || status=$?
  echo "[$name] == lane ended with status $status after $((SECONDS - started)) s"
  return "$status"
}
lane rust & rust=$!
lane page & page=$!
status=0
wait "$rust" || status=1
wait "$page" || status=1
if [ "$status" != 0 ]; then
  sleep 1 # the lanes' last lines are still on their way through tee
  {
    echo "== FAILED. What failed, lane by lane (whole output in $logs/):"
    # cargo's failed tests and their panics; node's failed tests (TAP's "not ok", the spec
    # reporter's ✖); a Schemathesis run's verdict; a step's verdict that is not 0.
    grep -hE '^test .* FAILED$|panicked at|^error(\[|:)|test result: FAILED|^ *not ok |^ *✖ |^schemathesis as the .*: exit [1-9]|== .* ended with status [1-9]' \
      "$logs/rust.log" "$logs/page.log" | sed 's/^/  /' | head -60
  } >&2
fi
exit "$status"
