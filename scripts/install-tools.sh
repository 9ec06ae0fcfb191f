#!/usr/bin/env bash
# Installs whatever is missing to build, serve and test oomscope on a fresh
# Debian machine with rustup: the wasm target, trunk, the wasm-bindgen CLI
# matching Cargo.lock, and (with --browser) Node >= 20, Chromium and the
# e2e npm packages. Everything comes from
# cargo, rustup, apt or npm: nothing is downloaded by hand.
# Safe to run again: each step checks first.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { echo "[install-tools] $*" >&2; }

# apt-get as root (directly, or through sudo).
apt_install() {
  export DEBIAN_FRONTEND=noninteractive
  local sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -q
  $sudo apt-get install -y -q "$@"
}

rustup target list --installed 2>/dev/null | grep -q wasm32-unknown-unknown || {
  log "adding the wasm32-unknown-unknown target"; rustup target add wasm32-unknown-unknown; }

TRUNK_VERSION=0.21.14
if ! trunk --version 2>/dev/null | grep -q "$TRUNK_VERSION"; then
  log "installing trunk $TRUNK_VERSION (about 11 minutes on 2 cores)"
  cargo install --locked "trunk@$TRUNK_VERSION"
fi

# trunk cannot download tools here, so wasm-bindgen-cli must be installed and
# be exactly the version of the wasm-bindgen crate in Cargo.lock.
WB_VERSION=$(awk '/^name = "wasm-bindgen"$/{getline; gsub(/version = |"/,""); print; exit}' Cargo.lock)
if [ -n "$WB_VERSION" ] && ! wasm-bindgen --version 2>/dev/null | grep -q "$WB_VERSION"; then
  log "installing wasm-bindgen-cli $WB_VERSION"
  # --locked: the CLI's own dependencies as its release pinned them.
  cargo install --locked wasm-bindgen-cli --version "$WB_VERSION"
fi


if [ "${1:-}" = "--browser" ]; then
  # The fuzz smoke run compiles libFuzzer (C++).
  if ! command -v c++ >/dev/null; then
    log "installing a C++ compiler for libFuzzer"
    apt_install g++
  fi
  # The browser tests use node's test runner and fetch(): Node 20 or later.
  node_major=$(node --version 2>/dev/null | sed -E 's/^v([0-9]+).*/\1/' || true)
  if [ -z "$node_major" ] || [ "$node_major" -lt 20 ]; then
    log "installing Debian's nodejs and npm (found: ${node_major:-none})"
    apt_install nodejs npm
    node_major=$(node --version | sed -E 's/^v([0-9]+).*/\1/')
    if [ "$node_major" -lt 20 ]; then
      log "Node $node_major is too old: the browser tests need Node >= 20"
      exit 1
    fi
  fi
  if ! command -v chromium >/dev/null; then
    log "installing Debian's chromium"
    apt_install chromium chromium-driver
  fi
  if [ -f tests/e2e/package.json ] && [ ! -d tests/e2e/node_modules/playwright-core ]; then
    log "installing the e2e npm packages"
    (cd tests/e2e && npm ci --no-audit --no-fund)
  fi
fi
