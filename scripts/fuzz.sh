#!/usr/bin/env bash
# Fuzzes every oomscope decoder with cargo-fuzz (libFuzzer) for a fixed time.
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]
#
# Default: 20 s for each of the targets in fuzz/fuzz_targets/ (8 targets, so
# about 3 minutes plus a first build of a few minutes). Exits non-zero when any
# target crashes, times out (10 s per input) or goes over 2 GiB of memory; the
# input that did it is left in fuzz/artifacts/<target>/. Prints executions per
# target.
#
# Runs on the pinned stable toolchain: RUSTC_BOOTSTRAP=1 lets cargo-fuzz pass
# its unstable flags, and `--sanitizer none` needs no nightly-only sanitizer
# runtime (the analyzer has no unsafe code for AddressSanitizer to check; the
# findings are panics, overflows, hangs and memory blow-ups). libfuzzer-sys
# compiles libFuzzer from source, so a C++ compiler must be installed.
#
# The mutation sequence is fixed by FUZZ_SEED (default 1), so a run is
# reproducible and CI explores what a local run of at least as many seconds
# explored; FUZZ_SEED=0 lets libFuzzer pick a fresh seed (for hunting).
#
# Each run starts from the committed seeds (fuzz/corpus/<target>/) and every
# past crash input (fuzz/regressions/<target>/); inputs libFuzzer discovers go
# to a scratch directory, so the committed corpora do not grow. To refresh a
# committed corpus: cargo fuzz cmin <target> fuzz/corpus/<target>.
set -euo pipefail
cd "$(dirname "$0")/.."

SECONDS_PER_TARGET="${1:-20}"
shift || true

log() { echo "[fuzz] $*" >&2; }

# cargo-fuzz and a C++ compiler, installed as every other tool is.
scripts/install-tools.sh --fuzz

export RUSTC_BOOTSTRAP=1
FUZZ_FLAGS=(--sanitizer none --fuzz-dir fuzz)

if [ "$#" -gt 0 ]; then
  TARGETS=("$@")
else
  mapfile -t TARGETS < <(cargo fuzz list --fuzz-dir fuzz)
fi

log "building ${#TARGETS[@]} targets"
cargo fuzz build "${FUZZ_FLAGS[@]}"

SCRATCH="$(mktemp -d)"
trap 'rm -rf "$SCRATCH"' EXIT
failed=()
summary=()
for target in "${TARGETS[@]}"; do
  log "$target: ${SECONDS_PER_TARGET}s"
  mkdir -p "$SCRATCH/$target" "fuzz/corpus/$target" "fuzz/regressions/$target"
  logfile="$SCRATCH/$target.log"
  status=0
  cargo fuzz run "${FUZZ_FLAGS[@]}" "$target" \
    "$SCRATCH/$target" "fuzz/corpus/$target" "fuzz/regressions/$target" -- \
    -max_total_time="$SECONDS_PER_TARGET" -seed="${FUZZ_SEED:-1}" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 >"$logfile" 2>&1 || status=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$logfile" | tail -1)
  if [ "$status" -ne 0 ]; then
    # The panic message and libFuzzer's verdict (the full log echoes the input).
    grep -E -A2 "panicked at|ERROR: libFuzzer|SUMMARY: libFuzzer|^Failing input" "$logfile" | cut -c1-300 >&2 || tail -n 20 "$logfile" >&2
    failed+=("$target")
    summary+=("$(printf '%-12s FAILED (exit %s) after %s executions; see fuzz/artifacts/%s/' "$target" "$status" "${runs:-?}" "$target")")
  else
    summary+=("$(printf '%-12s %10s executions in %ss' "$target" "${runs:-?}" "$SECONDS_PER_TARGET")")
  fi
done

echo "== fuzz summary"
printf '%s\n' "${summary[@]}"
if [ "${#failed[@]}" -gt 0 ]; then
  echo "fuzz: ${#failed[@]} target(s) failed: ${failed[*]}" >&2
  exit 1
fi
