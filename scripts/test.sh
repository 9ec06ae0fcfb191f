#!/usr/bin/env bash
# Installs what is missing, then runs every test: the analyzer's unit and
# integration tests on real data, the fuzz smoke run, and the browser tests
# in headless Chromium against the trunk-built page.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-tools.sh --browser

echo "== cargo test (analyzer, natively)"
cargo test --workspace --exclude oomscope-app

echo "== browser tests (trunk build + Chromium)"
tests/e2e/run.sh
