#!/usr/bin/env bash
# Installs what is missing, then serves the app on http://127.0.0.1:8080/
# with a built-in real example report. Works offline once tools are installed.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-tools.sh
cargo fetch --quiet 2>/dev/null || echo "[serve] no network: using the crates already fetched" >&2
exec trunk serve --offline --address 127.0.0.1 --port "${PORT:-8080}" "$@"
