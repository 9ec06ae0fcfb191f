#!/usr/bin/env bash
# Builds the page with trunk (release) and runs the browser tests against it.
# Prints node's test runner output (TAP). Needs: trunk 0.21.14 and
# wasm-bindgen-cli (= the wasm-bindgen version in Cargo.lock) on PATH, the
# wasm32-unknown-unknown target, node >= 20, Debian's /usr/bin/chromium, and
# crates already fetched (trunk runs cargo --offline; `cargo fetch` once).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"

cd "$root"
trunk build --release

cd "$here"
# The npm packages, once per lockfile (the same step as install-tools.sh).
. "$root/scripts/lib/install.sh"
npm_ci .
rm -rf out
# Every *.test.mjs here (each view may add its own file).
# One browser at a time: the machines have 2 cores.
exec node --test --test-concurrency=1 --test-reporter=tap ./*.test.mjs
