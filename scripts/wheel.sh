#!/usr/bin/env bash
# Builds the release wheel: the `oomscope` command (a release build of the
# Rust CLI), the `oomscope` Python module and the page (trunk's dist/)
# under share/oomscope/dist, so that `oomscope serve` works offline with
# neither Rust nor trunk. Prints the wheel's path and size.
#
#   scripts/wheel.sh             # trunk build --release first (quick when nothing changed)
#   scripts/wheel.sh --no-page   # a wheel without the page (serve then needs --dist)
#   OOMSCOPE_DIST=DIR scripts/wheel.sh   # bundle an already built page
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${OOMSCOPE_PYTHON:-python3}"
log() { echo "[wheel] $*" >&2; }

"$PY" -c 'import maturin' 2>/dev/null || scripts/install-python.sh

page="oomscope.data/data/share/oomscope"
rm -rf oomscope.data
if [ "${1:-}" != "--no-page" ]; then
  dist="${OOMSCOPE_DIST:-}"
  if [ -z "$dist" ]; then
    scripts/install-tools.sh
    cargo fetch --quiet 2>/dev/null || true
    log "trunk build --release"
    trunk build --release >&2
    dist=dist
  fi
  [ -f "$dist/index.html" ] || { log "$dist has no index.html"; exit 1; }
  mkdir -p "$page"
  cp -a "$dist" "$page/dist"
fi

out=target/wheels
rm -f "$out"/oomscope-*.whl
"$PY" -m maturin build --release --out "$out" >&2
wheel=$(ls "$out"/oomscope-*.whl)
rm -rf oomscope.data
echo "$wheel $(stat -c %s "$wheel") bytes"
