"""Time XLA's own C++ HLO text parser (as jaxlib exposes it) on the text the
Rust benchmark parses, for the ratio between the two.

    OOMSCOPE_HLO_BENCH_OUT=/tmp/hlo_bench.txt cargo bench -p oomscope-dump --bench hlo_text
    python3 analyzer/crates/dump/benches/xla_parser_baseline.py /tmp/hlo_bench.txt [RUST_MIB_PER_S]

The benchmark writes its replicated module (every copy of a computation
renamed, so XLA accepts it) to OOMSCOPE_HLO_BENCH_OUT. This script parses it
with `jaxlib._hlo.hlo_module_from_text` (xla::ParseAndReturnUnverifiedModule),
prints the best of a few runs in MiB/s and, given the Rust figure, the ratio.
"""

import sys
import time


def parser():
    try:
        from jaxlib import _hlo  # jaxlib >= 0.8

        return _hlo.hlo_module_from_text
    except ImportError:
        from jax._src.lib import xla_client

        return xla_client._xla.hlo_module_from_text


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "/tmp/hlo_bench.txt"
    rust = float(sys.argv[2]) if len(sys.argv) > 2 else None
    with open(path, encoding="utf-8") as f:
        text = f.read()
    parse = parser()
    import jaxlib

    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        module = parse(text)
        best = min(best, time.perf_counter() - start)
        del module
    mib = len(text) / best / 2**20
    print(f"jaxlib {jaxlib.__version__} hlo_module_from_text: {len(text)} bytes in {best:.3f} s = {mib:.1f} MiB/s")
    if rust:
        print(f"oomscope-dump {rust:.1f} MiB/s = {rust / mib:.1f}x XLA's parser")


if __name__ == "__main__":
    main()
