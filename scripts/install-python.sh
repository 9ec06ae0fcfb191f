#!/usr/bin/env bash
# Installs the Python packages the tests of the Python package and of
# `oomscope run` need, into the interpreter the tests use (python3, or
# $OOMSCOPE_PYTHON): jax and jaxlib (real JAX programs on the CPU), maturin
# (builds the wheel), nbclient/nbformat/ipykernel (runs the notebook test).
# Each is installed only when missing; about 25 s on a fresh machine
# (measured: jax + jaxlib + maturin 22 s, the notebook packages 18 s).
#
#   scripts/install-python.sh [--notebook]
#   scripts/install-python.sh --check   installs nothing: would pip resolve them all?
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=lib/install.sh
. scripts/lib/install.sh
PY="${OOMSCOPE_PYTHON:-python3}"

JAX=("jax==0.10.2" "jaxlib==0.10.2")
MATURIN=("maturin>=1.5,<2")
NOTEBOOK=(nbclient nbformat ipykernel)

case "${1:-}" in
  --check) check_pip_packages "$PY" "${JAX[@]}" "${MATURIN[@]}" "${NOTEBOOK[@]}"; exit ;;
  ""|--notebook) ;;
  *) die "unknown option $1" "scripts/install-python.sh [--notebook|--check]" ;;
esac

need=()
"$PY" -c 'import jax, jaxlib' 2>/dev/null || need+=("${JAX[@]}")
"$PY" -c 'import maturin' 2>/dev/null || need+=("${MATURIN[@]}")
if [ "${1:-}" = "--notebook" ]; then
  "$PY" -c 'import nbclient, nbformat, ipykernel' 2>/dev/null || need+=("${NOTEBOOK[@]}")
fi
[ ${#need[@]} -eq 0 ] || pip_install "$PY" "${need[@]}"
