#!/usr/bin/env bash
# Installs whatever is missing to build, serve and test oomscope on a fresh
# Debian machine with rustup: the wasm target, trunk, the wasm-bindgen CLI
# matching Cargo.lock, and (with --browser) Chromium and the e2e npm packages.
# Safe to run again: each step checks first.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { echo "[install-tools] $*" >&2; }

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
  cargo install wasm-bindgen-cli --version "$WB_VERSION"
fi

if [ "${1:-}" = "--browser" ]; then
  # The fuzz smoke run compiles libFuzzer (C++).
  if ! command -v c++ >/dev/null; then
    log "installing a C++ compiler for libFuzzer"
    export DEBIAN_FRONTEND=noninteractive
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
    $SUDO apt-get update -q
    $SUDO apt-get install -y -q g++
  fi
  if ! command -v chromium >/dev/null; then
    log "installing Debian's chromium"
    export DEBIAN_FRONTEND=noninteractive
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
    $SUDO apt-get update -q
    $SUDO apt-get install -y -q chromium chromium-driver
  fi
  if [ -f tests/e2e/package.json ] && [ ! -d tests/e2e/node_modules/playwright-core ]; then
    log "installing the e2e npm packages"
    (cd tests/e2e && npm ci --no-audit --no-fund)
  fi
fi
