#!/usr/bin/env bash
# Tests of scripts/install-tools.sh's failure paths, against the real
# registries: a tool, npm package or apt package that does not exist must fail
# the check (or the install) with one line naming it, and the known case of a
# tool whose own lockfile pins what the registry does not serve must resolve.
# Prints "N passed, N failed" last.
set -uo pipefail
cd "$(dirname "$0")/../.."
. scripts/lib/install.sh

passed=0; failed=0
scratch=$(mktemp -d); trap 'rm -rf "$scratch"' EXIT

# expect NAME STATUS(0|1) PATTERN -- COMMAND...: the command's status and
# that its stderr matches PATTERN.
expect() {
  local name=$1 want=$2 pattern=$3; shift 4
  local out="$scratch/out" status=0
  ( "$@" ) >"$out" 2>&1 || status=$?
  [ "$status" -ne 0 ] && status=1
  if [ "$status" = "$want" ] && grep -qE "$pattern" "$out"; then
    echo "ok - $name"; passed=$((passed + 1))
  else
    echo "not ok - $name (status $status, wanted $want; output:)"; sed 's/^/    /' "$out" | tail -5
    failed=$((failed + 1))
  fi
}

expect "a cargo tool version the registry lacks fails the check, named" 1 \
  "check FAILED: trunk 0\.0\.999 would not install: .*0\.0\.999" -- check_cargo_tool trunk 0.0.999
expect "a cargo tool the registry lacks fails the install with what to run" 1 \
  "FAILED: trunk 0\.0\.999 is not in the registry.*" -- install_cargo_tool trunk 0.0.999
expect "the install's failure says what to run by hand" 1 \
  "to do it by hand: cargo install trunk@0\.0\.999" -- install_cargo_tool trunk 0.0.999
expect "the wasm-bindgen CLI of Cargo.lock resolves (with or without its lockfile)" 0 \
  "check: wasm-bindgen-cli $(lockfile_version wasm-bindgen) resolves" -- check_cargo_tool wasm-bindgen-cli "$(lockfile_version wasm-bindgen)"

cat >"$scratch/package-lock.json" <<'JSON'
{ "name": "x", "lockfileVersion": 3, "requires": true,
  "packages": { "": { "name": "x" },
    "node_modules/playwright-core": { "version": "0.0.999" } } }
JSON
expect "an npm version the registry lacks fails the check, named" 1 \
  "check FAILED: npm playwright-core@0\.0\.999" -- check_npm_lockfile "$scratch/package-lock.json"
expect "the e2e lockfile resolves" 0 "check: npm playwright-core@" -- check_npm_lockfile tests/e2e/package-lock.json
expect "an apt package Debian lacks fails the check, named" 1 \
  "check FAILED: apt cannot install oomscope-no-such-package" -- check_apt_packages oomscope-no-such-package
expect "an unknown option is one line with the usage" 1 \
  "FAILED: unknown option --nope" -- scripts/install-tools.sh --nope

echo "install-tools: $passed passed, $failed failed"
[ "$failed" = 0 ]
