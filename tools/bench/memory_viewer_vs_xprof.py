"""HloProto -> Memory Viewer, in process, oomscope beside XProf 2.24.2, in the same run.

    cargo build --release -p oomscope-xla --example memory_viewer_timing
    python3 tools/bench/memory_viewer_vs_xprof.py [FILE.hlo.pb ...] [--rounds 3] [--runs 20]

    cargo build --release -p oomscope-analyzer --bin oomscope
    python3 tools/bench/memory_viewer_vs_xprof.py --cli [FILE.hlo.pb ...]

For each HloProto (default: every `*.hlo.pb` of `fixtures/` over 200 KB), the two are
timed in turn, `--rounds` times: oomscope's `analyze_hlo_proto` (decode + every memory
space) by the example binary, XProf's `xspace_to_tools_data(..., 'memory_viewer')` (its
own decode, memory space 0 only) in this interpreter, each the median of `--runs` calls
after a warm-up. Prints each round's times and the median ratio XProf / oomscope (above
1: oomscope is faster). Needs `pip install xprof==2.24.2`.

`--cli` times the whole `oomscope analyze --json FILE` process instead (start, every
memory space, diagnosis, the what-if replays, the JSON written to a pipe), from spawn to
exit, against two references (default files: one fixture HloProto of each size class
from 16 KB up):
- XProf's warm call: the median of `--runs` calls after a warm-up, as above;
- XProf's first call: the first `memory_viewer` call of a fresh Python process, timed in
  that process after `import` (the import itself left out), the median over the
  `--runs` processes of each round: what one call costs a user who asks once.
Both ratios are printed: the warm call is the harsher reference (what XProf pays once per
process left out), the first call what "a single call" costs. Each is given in wall time
and in CPU time (the oomscope process's user + system time from the kernel, `wait4`; the
XProf call's `time.process_time()`, every thread of its process): on a shared machine
the wall time of a few-millisecond process is mostly waiting for a core.
"""

import argparse
import glob
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def xprof_median_ms(path, runs, cpu=False):
    """Median of `runs` warm calls: wall ms, or (wall, CPU) when `cpu`."""
    from xprof.convert import _pywrap_profiler_plugin as xprof

    with tempfile.TemporaryDirectory() as session:
        module = "bench(1)"
        shutil.copy(path, os.path.join(session, f"{module}.hlo_proto.pb"))
        xplane = os.path.join(session, "empty.xplane.pb")
        open(xplane, "wb").close()
        args = {"module_name": module, "memory_space": "0"}
        xprof.xspace_to_tools_data([xplane], "memory_viewer", args)
        times, cpus = [], []
        for _ in range(runs):
            t, c = time.perf_counter(), time.process_time()
            data, _ = xprof.xspace_to_tools_data([xplane], "memory_viewer", args)
            times.append(time.perf_counter() - t)
            cpus.append(time.process_time() - c)
            if not data:
                raise RuntimeError(f"xprof returned nothing for {path}")
        wall = statistics.median(times) * 1e3
        return (wall, statistics.median(cpus) * 1e3) if cpu else wall


# One fresh interpreter: import XProf, then time its first `memory_viewer` call alone.
FIRST_CALL = r"""
import os, shutil, sys, tempfile, time
from xprof.convert import _pywrap_profiler_plugin as xprof
with tempfile.TemporaryDirectory() as session:
    module = "bench(1)"
    shutil.copy(sys.argv[1], os.path.join(session, f"{module}.hlo_proto.pb"))
    xplane = os.path.join(session, "empty.xplane.pb")
    open(xplane, "wb").close()
    t, c = time.perf_counter(), time.process_time()
    data, _ = xprof.xspace_to_tools_data([xplane], "memory_viewer", {"module_name": module, "memory_space": "0"})
    elapsed, cpu = time.perf_counter() - t, time.process_time() - c
    if not data:
        sys.exit(f"xprof returned nothing for {sys.argv[1]}")
    print(elapsed * 1e3, cpu * 1e3)
"""


def xprof_first_call_ms(path, runs):
    """Medians over `runs` fresh Python processes of XProf's first call in each: (wall, CPU)."""
    walls, cpus = [], []
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", FIRST_CALL, path], check=True, capture_output=True, text=True)
        wall, cpu = out.stdout.split()[-2:]
        walls.append(float(wall))
        cpus.append(float(cpu))
    return statistics.median(walls), statistics.median(cpus)


def oomscope_median_ms(binary, path, runs):
    out = subprocess.run([binary, path, str(runs)], check=True, capture_output=True, text=True).stdout
    return float(re.search(r"median ([0-9.]+) ms", out).group(1))


def cli_median_ms(binary, path, runs):
    """Medians of `oomscope analyze --json path` after one warm-up: wall time spawn to
    exit, and the process's CPU time (user + system, from `wait4`)."""
    walls, cpus = [], []
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        for _ in range(runs + 1):
            # posix_spawn: no copy of this interpreter is charged to the child.
            t = time.perf_counter()
            pid = os.posix_spawn(binary, [binary, "analyze", "--json", path], os.environ,
                                 file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 1)])
            _, status, usage = os.wait4(pid, 0)
            walls.append(time.perf_counter() - t)
            cpus.append(usage.ru_utime + usage.ru_stime)
            if os.waitstatus_to_exitcode(status) != 0:
                raise RuntimeError(f"{binary} analyze --json {path}: exit {os.waitstatus_to_exitcode(status)}")
    finally:
        os.close(devnull)
    return statistics.median(walls[1:]) * 1e3, statistics.median(cpus[1:]) * 1e3


def size_ladder():
    """One fixture HloProto per size class: the smallest at or above 16 KB, 32 KB, ... ."""
    files = sorted(
        (os.path.getsize(p), p) for p in glob.glob(os.path.join(ROOT, "fixtures/**/*.hlo.pb"), recursive=True)
        if "after_optimizations" in p
    )
    picked, bound = [], 16 << 10
    for size, path in files:
        if size >= bound:
            picked.append(path)
            while bound <= size:
                bound *= 2
    return picked


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="*")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--binary", default=os.path.join(ROOT, "target/release/examples/memory_viewer_timing"))
    ap.add_argument("--cli", action="store_true", help="time the whole oomscope process")
    ap.add_argument("--cli-binary", default=os.path.join(ROOT, "target/release/oomscope"))
    a = ap.parse_args()
    if a.cli:
        for path in a.files or size_ladder():
            compare_cli(path, a)
        return
    files = a.files or sorted(
        p for p in glob.glob(os.path.join(ROOT, "fixtures/**/*.hlo.pb"), recursive=True) if os.path.getsize(p) > 200_000
    )
    for path in files:
        compare(path, a, lambda: oomscope_median_ms(a.binary, path, a.runs), "oomscope", "XProf",
                "oomscope is {r:.2f}x XProf's speed (median of {n} rounds)")


def compare(path, a, ours_ms, ours_label, theirs_label, verdict):
    """Times oomscope (`ours_ms()`) and XProf on `path` in turn, `a.rounds` times."""
    ratios = []
    for r in range(a.rounds):
        ours = ours_ms()
        theirs = xprof_median_ms(path, a.runs)
        ratios.append(theirs / ours)
        print(f"{os.path.basename(path)} ({os.path.getsize(path)} B) round {r + 1}: {ours_label} {ours:.3f} ms, {theirs_label} {theirs:.3f} ms", flush=True)
    print("  => " + verdict.format(r=statistics.median(ratios), n=a.rounds), flush=True)


def compare_cli(path, a):
    """The whole oomscope process against XProf's warm call and its first call, in turn,
    each in wall and in CPU time."""
    names = ("warm wall", "warm CPU", "first wall", "first CPU")
    ratios = {n: [] for n in names}
    for r in range(a.rounds):
        ours_wall, ours_cpu = cli_median_ms(a.cli_binary, path, a.runs)
        warm_wall, warm_cpu = xprof_median_ms(path, a.runs, cpu=True)
        first_wall, first_cpu = xprof_first_call_ms(path, a.runs)
        for n, theirs, ours in zip(names, (warm_wall, warm_cpu, first_wall, first_cpu),
                                   (ours_wall, ours_cpu, ours_wall, ours_cpu)):
            ratios[n].append(theirs / ours)
        print(f"{os.path.basename(path)} ({os.path.getsize(path)} B) round {r + 1}: "
              f"oomscope process {ours_wall:.2f} ms ({ours_cpu:.2f} ms CPU), "
              f"XProf warm call {warm_wall:.2f} ms ({warm_cpu:.2f} ms CPU), "
              f"XProf first call {first_wall:.2f} ms ({first_cpu:.2f} ms CPU)", flush=True)
    print("  => XProf's call / oomscope's process: " + ", ".join(
        f"{n} {statistics.median(ratios[n]):.2f}" for n in names) +
        f" (medians of {a.rounds} rounds; at least 1: the process is no slower)", flush=True)


if __name__ == "__main__":
    sys.exit(main())
