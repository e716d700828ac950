#!/usr/bin/env bash
# Makes sure this machine has what building and running Confetti needs beside rustup and a C
# compiler: pkg-config, nasm (libjpeg-turbo's SIMD code), libheif 1.14+ with its headers (HEIC
# photos, AVIF thumbs) and ffmpeg (video posters). On Debian and Ubuntu it installs what is
# missing with apt-get (as root or through sudo); anywhere else, or where it cannot install, it
# stops at once with one line naming what to install. Used by scripts/run.sh and scripts/test.sh.
set -euo pipefail

fail() { echo "confetti: $*" >&2; exit 1; }

command -v cargo >/dev/null 2>&1 || fail "cargo is missing: install Rust with rustup (https://rustup.rs), then run this again"
command -v cc >/dev/null 2>&1 || fail "a C compiler is missing: install gcc or clang (Debian/Ubuntu: apt-get install build-essential)"

missing=()
command -v pkg-config >/dev/null 2>&1 || missing+=(pkg-config)
command -v nasm >/dev/null 2>&1 || missing+=(nasm)
pkg-config --exists libheif 2>/dev/null || missing+=(libheif-dev)
command -v ffmpeg >/dev/null 2>&1 || missing+=(ffmpeg)

if [ ${#missing[@]} -gt 0 ]; then
  os_like=""
  if [ -r /etc/os-release ]; then os_like=$(. /etc/os-release && echo "${ID:-} ${ID_LIKE:-}"); fi
  case " $os_like " in
    *" debian "* | *" ubuntu "*) ;;
    *) fail "missing: ${missing[*]} (nasm, pkg-config, libheif 1.14+ with headers, ffmpeg): install them with your system's package manager, then run this again" ;;
  esac
  if [ "$(id -u)" = 0 ]; then
    as_root=()
  elif command -v sudo >/dev/null 2>&1; then
    as_root=(sudo)
  else
    fail "missing: ${missing[*]}; run as root: apt-get install ${missing[*]}"
  fi
  echo "confetti: installing ${missing[*]} with apt-get" >&2
  "${as_root[@]}" apt-get update -qq >&2
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

# libheif-sys 1.14 binds the 1.14 API: Debian 12 has 1.15, Ubuntu 24.04 1.17; Ubuntu 22.04's 1.12 is too old.
pkg-config --atleast-version=1.14 libheif ||
  fail "libheif $(pkg-config --modversion libheif 2>/dev/null || echo '?') is too old: Confetti needs 1.14 or newer (Debian 12, Ubuntu 24.04 or later)"
