#!/usr/bin/env python3
"""Grow a real PyTorch memory snapshot to a given size by replaying its trace.

    python3 tools/bench/grow_snapshot.py SRC.pickle DST.pickle --size-mb 1024 [--protocol 4]

The output is what `_dump_snapshot` would have written had the program run
the recorded trace again and again: the segments of SRC, then for each device
its trace repeated (each copy shifted in time after the previous one) until
the file reaches about --size-mb. Addresses are kept, so every copy's allocs
and frees pair as in the original. Trace entries and frames are fresh objects
in every copy while frame dicts and strings are shared, as PyTorch shares
them, so the pickle memo behaves as in a real file (each frame written once,
then referenced).

Pure standard library, no torch. SRC is read with an unpickler that refuses
every class reference (a snapshot is plain data). The output is streamed:
memory stays at the size of SRC whatever --size-mb is.
"""

import argparse
import os
import pickle
import sys


class PlainDataUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"refusing class reference {module}.{name}: not a plain-data snapshot")


class GrowPickler(pickle._Pickler):
    """The pure-Python pickler with a memo that can forget containers.

    `memoize` numbers entries with a counter instead of len(memo), so that
    dropping the memo entries of trace entries already written (to keep
    memory flat) never makes two objects share an index.
    """

    def __init__(self, f, protocol):
        super().__init__(f, protocol=protocol)
        self.next_memo = 0

    def memoize(self, obj):
        if self.fast:
            return
        idx = self.next_memo
        self.next_memo += 1
        self.write(self.put(idx))
        self.memo[id(obj)] = idx, obj

    def forget_containers(self):
        for key in [k for k, (_, o) in self.memo.items() if not (isinstance(o, (str, bytes)) or is_frame(o))]:
            del self.memo[key]


def is_frame(obj):
    return isinstance(obj, dict) and "filename" in obj


def fresh(entry, time_shift):
    e = dict(entry)
    if "frames" in e:
        e["frames"] = list(e["frames"])
    if time_shift and isinstance(e.get("time_us"), int):
        e["time_us"] += time_shift
    return e


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("src")
    ap.add_argument("dst")
    ap.add_argument("--size-mb", type=float, required=True, help="target size of DST in MiB")
    ap.add_argument("--protocol", type=int, default=4, choices=[2, 3, 4, 5])
    args = ap.parse_args()

    with open(args.src, "rb") as f:
        snap = PlainDataUnpickler(f).load()
    if not isinstance(snap, dict) or "device_traces" not in snap:
        sys.exit(f"{args.src}: not a snapshot with device_traces")
    traces = snap["device_traces"]
    entries = sum(len(t) for t in traces)
    if entries == 0:
        sys.exit(f"{args.src}: the trace is empty, nothing to replay")
    src_size = os.path.getsize(args.src)
    target = int(args.size_mb * (1 << 20))

    def span(trace):
        times = [e["time_us"] for e in trace if isinstance(e.get("time_us"), int)]
        return (max(times) - min(times) + 1) if times else 0

    with open(args.dst, "wb") as out:
        p = GrowPickler(out, args.protocol)
        p.write(pickle.PROTO + bytes([args.protocol]))
        if args.protocol >= 4:
            p.framer.start_framing()
        p.write(pickle.EMPTY_DICT + pickle.MARK)
        for key, value in snap.items():
            if key != "device_traces":
                p.save(key)
                p.save(value)
        p.save("device_traces")
        p.write(pickle.EMPTY_LIST + pickle.MARK)
        budget = max(0, target - out.tell())
        for trace in traces:
            p.write(pickle.EMPTY_LIST)
            device_end = out.tell() + budget * len(trace) // entries
            copy = 0
            while trace and (copy == 0 or out.tell() < device_end):
                shift = copy * span(trace)
                for start in range(0, len(trace), 1000):
                    p.write(pickle.MARK)
                    for e in trace[start:start + 1000]:
                        p.save(fresh(e, shift))
                    p.write(pickle.APPENDS)
                    p.forget_containers()
                copy += 1
            print(f"device trace of {len(trace)} entries written {copy} times", file=sys.stderr)
        p.write(pickle.APPENDS)  # the device lists into device_traces
        p.write(pickle.SETITEMS)  # everything into the snapshot dict
        p.write(pickle.STOP)
        if args.protocol >= 4:
            p.framer.end_framing()
    print(f"{args.dst}: {os.path.getsize(args.dst) / (1 << 20):.1f} MiB from {args.src} ({src_size / (1 << 20):.1f} MiB)", file=sys.stderr)


if __name__ == "__main__":
    main()
