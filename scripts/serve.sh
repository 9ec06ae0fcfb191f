#!/usr/bin/env bash
# Installs what is missing, then serves the app on http://127.0.0.1:8080/
# with a built-in real example report: the release build (the files a
# static host would serve, optimised and small). Pass --dev for the quicker
# unoptimised build. Works offline once tools are installed.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-tools.sh
cargo fetch --quiet 2>/dev/null || echo "[serve] no network: using the crates already fetched" >&2
release=--release
if [ "${1:-}" = "--dev" ]; then
  release=""
  shift
fi
exec trunk serve $release --offline --address 127.0.0.1 --port "${PORT:-8080}" "$@"
