"""Time XLA's own C++ HLO text parser (as jaxlib exposes it) on the text the
Rust benchmark parses, for the ratio between the two.

    OOMSCOPE_HLO_BENCH_OUT=/tmp/hlo_bench.txt cargo bench -p oomscope-dump --bench hlo_text
    python3 analyzer/crates/dump/benches/xla_parser_baseline.py /tmp/hlo_bench.txt [RUST_ON_CPU_MIB_PER_S]

The benchmark writes its replicated module (every copy of a computation
renamed, so XLA accepts it) to OOMSCOPE_HLO_BENCH_OUT. This script parses it
with `jaxlib._hlo.hlo_module_from_text` (xla::ParseAndReturnUnverifiedModule),
prints the best of a few runs in MiB/s (wall clock and this thread's CPU time:
on a loaded machine compare on-CPU figures) and, given the Rust on-CPU figure, the ratio.
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

    best_wall = best_cpu = float("inf")
    for _ in range(3):
        wall, cpu = time.perf_counter(), time.thread_time()
        module = parse(text)
        best_cpu = min(best_cpu, time.thread_time() - cpu)
        best_wall = min(best_wall, time.perf_counter() - wall)
        del module
    wall_mib = len(text) / best_wall / 2**20
    cpu_mib = len(text) / best_cpu / 2**20
    print(
        f"jaxlib {jaxlib.__version__} hlo_module_from_text: {len(text)} bytes; "
        f"wall {best_wall:.3f} s = {wall_mib:.1f} MiB/s; on-CPU {best_cpu:.3f} s = {cpu_mib:.1f} MiB/s"
    )
    if rust:
        print(f"oomscope-dump {rust:.1f} MiB/s on-CPU = {rust / cpu_mib:.1f}x XLA's parser (on-CPU)")


if __name__ == "__main__":
    main()
