#!/usr/bin/env bash
# Installs whatever is missing to build, serve and test oomscope on a fresh
# Debian machine with rustup. Everything comes from cargo, rustup, apt or npm:
# nothing is downloaded by hand. Safe to run again: each step checks first,
# and a step that failed half-way is repaired by the next run.
#
#   scripts/install-tools.sh            what `scripts/serve.sh` needs: the wasm
#                                       target, trunk, the wasm-bindgen CLI
#   scripts/install-tools.sh --browser  also what the tests need: Node >= 20,
#                                       Chromium, the e2e npm packages, a C++
#                                       compiler and cargo-fuzz
#   scripts/install-tools.sh --fuzz     only what `scripts/fuzz.sh` needs
#   scripts/install-tools.sh --check    installs nothing: checks, in seconds,
#                                       that every install above (and
#                                       scripts/install-python.sh's) would
#                                       resolve against the registries (CI runs it)
#
# The tools' versions are exact (the CLI must equal the `wasm-bindgen` crate in
# Cargo.lock); their own dependencies resolve to what the registry serves
# (scripts/lib/install.sh says how).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=lib/install.sh
. scripts/lib/install.sh

TRUNK_VERSION=0.21.14
CARGO_FUZZ_VERSION=0.13.2
WB_VERSION=$(lockfile_version wasm-bindgen)
[ -n "$WB_VERSION" ] || die "no wasm-bindgen in Cargo.lock" "cargo generate-lockfile"
APT_PACKAGES=(chromium g++)

mode="${1:-}"
case "$mode" in
  ""|--browser|--fuzz|--check) ;;
  *) die "unknown option $mode" "scripts/install-tools.sh [--browser|--fuzz|--check]" ;;
esac

if [ "$mode" = --check ]; then
  # Every install this script can make, resolved and stopped before building.
  failures=0
  check_cargo_tool trunk "$TRUNK_VERSION" || failures=$((failures + 1))
  check_cargo_tool wasm-bindgen-cli "$WB_VERSION" || failures=$((failures + 1))
  check_cargo_tool cargo-fuzz "$CARGO_FUZZ_VERSION" || failures=$((failures + 1))
  check_npm_lockfile tests/e2e/package-lock.json || failures=$((failures + 1))
  check_apt_packages "${APT_PACKAGES[@]}" || failures=$((failures + 1))
  scripts/install-python.sh --check || failures=$((failures + 1))
  if [ "$failures" -gt 0 ]; then
    log "$failures install step(s) would not resolve (named above)"
    exit 1
  fi
  log "every install step resolves"
  exit 0
fi

if [ "$mode" != --fuzz ]; then
  rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown || {
    log "adding the wasm32-unknown-unknown target"
    rustup target add wasm32-unknown-unknown || die "rustup could not add the wasm32 target" "rustup target add wasm32-unknown-unknown"; }

  if ! trunk --version 2>/dev/null | grep -q "$TRUNK_VERSION"; then
    install_cargo_tool trunk "$TRUNK_VERSION"
  fi
  # trunk cannot download tools here, so the wasm-bindgen CLI must be on PATH
  # and be exactly the version of the wasm-bindgen crate in Cargo.lock.
  if ! wasm-bindgen --version 2>/dev/null | grep -q " $WB_VERSION\$"; then
    install_cargo_tool wasm-bindgen-cli "$WB_VERSION"
  fi
fi

if [ "$mode" = --browser ] || [ "$mode" = --fuzz ]; then
  # The fuzz smoke run compiles libFuzzer (C++) with cargo-fuzz.
  command -v c++ >/dev/null || command -v clang++ >/dev/null || apt_install g++
  if ! cargo fuzz --version 2>/dev/null | grep -q "$CARGO_FUZZ_VERSION"; then
    install_cargo_tool cargo-fuzz "$CARGO_FUZZ_VERSION"
  fi
fi

if [ "$mode" = --browser ]; then
  # The browser tests use node's test runner and fetch(): Node 20 or later.
  node_major=$(node --version 2>/dev/null | sed -E 's/^v([0-9]+).*/\1/' || true)
  if [ -z "$node_major" ] || [ "$node_major" -lt 20 ]; then
    apt_install nodejs npm
    node_major=$(node --version | sed -E 's/^v([0-9]+).*/\1/')
    [ "$node_major" -ge 20 ] || die "Debian's nodejs is $node_major; the browser tests need Node >= 20" \
      "install Node 20 or later (e.g. from your distribution's backports), then scripts/test.sh"
  fi
  command -v chromium >/dev/null || apt_install chromium
  npm_ci tests/e2e
fi
