#!/usr/bin/env bash
# Installs what is missing, then runs every test: a check that every install
# step still resolves against the registries (and tests of its failure paths),
# the analyzer's unit and integration tests on real data, the browser tests in
# headless Chromium against the trunk-built page, the Python package (wheel,
# API, notebook), and a fuzz smoke run of every decoder.
#
#   FUZZ_SECONDS=N scripts/test.sh   # seconds per fuzz target (default 15; 0 skips)
set -euo pipefail
cd "$(dirname "$0")/.."
NEEDED_GB=8

# What the builds below need on disk, measured on a clean checkout (the
# README's table); said first, so that a full disk is not a riddle later.
free_kb=$(df -Pk . | awk 'NR==2 {print $4}')
if [ "${free_kb:-0}" -lt $((NEEDED_GB * 1024 * 1024)) ]; then
  echo "[test] warning: $((free_kb / 1024 / 1024)) GB free here; a clean run's builds take about ${NEEDED_GB} GB" >&2
fi

# First, in seconds: would a fresh machine's installs resolve? (A machine
# that already has the tools never takes the install path, so this is the
# only place its breakage shows.)
echo "== install check (every tool, npm and apt package resolves; nothing is built)"
scripts/install-tools.sh --check
scripts/tests/install-check.sh

scripts/install-tools.sh --browser
# jax/jaxlib (`oomscope run` tests on real programs), maturin (the wheel),
# nbclient/nbformat/ipykernel (the notebook test).
scripts/install-python.sh --notebook
# trunk runs cargo offline: fetch every crate first.
cargo fetch --quiet 2>/dev/null || echo "[test] no network: using the crates already fetched" >&2

echo "== cargo test (analyzer and app logic, natively)"
cargo test --workspace

echo "== browser tests (trunk build + Chromium)"
tests/e2e/run.sh

echo "== fixtures/INDEX.md: its tables rewritten keep the prose, and it is current (no compile)"
python3 tools/fixtures/test_fixture_index.py

echo "== the Python package: a notebook executed and opened in Chromium, the wheel in a fresh venv"
python3 tests/python/test_notebook.py
# The page the browser tests just built goes in the wheel.
OOMSCOPE_DIST=dist python3 tests/python/test_wheel.py

if [ "${FUZZ_SECONDS:-15}" != 0 ]; then
  echo "== fuzz smoke run (${FUZZ_SECONDS:-15} s per target)"
  scripts/fuzz.sh "${FUZZ_SECONDS:-15}"
fi
