#!/usr/bin/env bash
# Installs the Python packages the tests of the Python package and of
# `oomscope run` need, into the interpreter the tests use (python3, or
# $OOMSCOPE_PYTHON): jax and jaxlib (real JAX programs on the CPU), maturin
# (builds the wheel), nbclient/nbformat/ipykernel (runs the notebook test).
# Each is installed only when missing; about 25 s on a fresh machine
# (measured: jax + jaxlib + maturin 22 s).
#
#   scripts/install-python.sh [--notebook]
set -euo pipefail
PY="${OOMSCOPE_PYTHON:-python3}"
log() { echo "[install-python] $*" >&2; }

need=()
"$PY" -c 'import jax, jaxlib' 2>/dev/null || need+=("jax==0.10.2" "jaxlib==0.10.2")
"$PY" -c 'import maturin' 2>/dev/null || need+=("maturin>=1.5,<2")
if [ "${1:-}" = "--notebook" ]; then
  "$PY" -c 'import nbclient, nbformat, ipykernel' 2>/dev/null || need+=(nbclient nbformat ipykernel)
fi
if [ ${#need[@]} -gt 0 ]; then
  log "installing ${need[*]}"
  # Debian marks its Python externally managed; these go to the system
  # interpreter on purpose (CI's throwaway machine), as the project's tests do.
  "$PY" -m pip install --quiet --break-system-packages "${need[@]}" 2>/dev/null \
    || "$PY" -m pip install --quiet "${need[@]}"
fi
