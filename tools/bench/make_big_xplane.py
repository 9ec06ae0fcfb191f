#!/usr/bin/env python3
"""Grow a real XProf profile (`*.xplane.pb`) to a given size, for benchmarks.

An XSpace is `repeated XPlane planes = 1` plus a few string lists (fields
2-4), so appending more length-delimited field-1 records to the file keeps it
a valid XSpace. This script copies the input unchanged and then appends
copies of its own non-metadata planes (the real trace planes: `/host:CPU`,
`Task Environment`, ...) until the file reaches `--size-mb`. The
`/host:metadata` plane (the HloProtos) is never copied, so the grown profile
has exactly the original's modules.

Two ways to name the copies (`--copies`):
  same     the copies keep their names, so a reader that wants `/host:CPU`
           gets thousands of `/host:CPU` planes (the worst case for a
           reader that decodes every plane of that name);
  renamed  each copy's name gets ` (copy N)` appended, so it stands for the
           many planes a reader skips unread (device traces of a big TPU
           profile: the usual bulk of a 1 GB xplane).

Usage:
  python3 tools/bench/make_big_xplane.py IN.xplane.pb OUT.xplane.pb \
      [--size-mb 1024] [--copies same|renamed]

Standard library only. The output is a benchmark input: write it to /tmp,
never commit it.
"""

import argparse
import sys

XSPACE_PLANES = 1
XPLANE_NAME = 2
METADATA_PLANE = b"/host:metadata"


def read_varint(data, pos):
    value = 0
    shift = 0
    while True:
        if pos >= len(data):
            raise ValueError("the input ends inside a varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, pos
        if shift > 63:
            raise ValueError("varint longer than 10 bytes")


def write_varint(value):
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def fields(data):
    """Yields (field number, wire type, start of the record, payload start, end)."""
    pos = 0
    while pos < len(data):
        start = pos
        key, pos = read_varint(data, pos)
        field, wire = key >> 3, key & 7
        if wire == 2:
            length, pos = read_varint(data, pos)
            payload = pos
            pos += length
        elif wire == 0:
            _, pos = read_varint(data, pos)
            payload = pos
        elif wire == 1:
            payload = pos
            pos += 8
        elif wire == 5:
            payload = pos
            pos += 4
        else:
            raise ValueError(f"unsupported wire type {wire} at byte {start}")
        if pos > len(data):
            raise ValueError(f"field {field} at byte {start} runs past the end")
        yield field, wire, start, payload, pos


def plane_name(plane):
    for field, wire, _, payload, end in fields(plane):
        if field == XPLANE_NAME and wire == 2:
            return plane[payload:end]
    return b""


def renamed(plane, suffix):
    """The plane with `suffix` appended to its name (field 2), other fields as they are."""
    out = bytearray()
    for field, wire, start, payload, end in fields(plane):
        if field == XPLANE_NAME and wire == 2:
            name = plane[payload:end] + suffix
            out += write_varint((XPLANE_NAME << 3) | 2) + write_varint(len(name)) + name
        else:
            out += plane[start:end]
    return bytes(out)


def planes_record(plane):
    return write_varint((XSPACE_PLANES << 3) | 2) + write_varint(len(plane)) + plane


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("input")
    parser.add_argument("output")
    parser.add_argument("--size-mb", type=float, default=1024, help="target size in MiB (default 1024)")
    parser.add_argument("--copies", choices=["same", "renamed"], default="same")
    args = parser.parse_args()

    data = open(args.input, "rb").read()
    trace_planes = []
    for field, wire, _, payload, end in fields(data):
        if field == XSPACE_PLANES and wire == 2:
            plane = data[payload:end]
            name = plane_name(plane)
            if name != METADATA_PLANE:
                trace_planes.append((name, plane))
    if not trace_planes:
        sys.exit(f"{args.input}: no non-metadata plane to copy")

    target = int(args.size_mb * 2**20)
    written = len(data)
    copies = 0
    with open(args.output, "wb") as out:
        out.write(data)
        while written < target:
            for _, plane in trace_planes:
                if args.copies == "renamed":
                    plane = renamed(plane, f" (copy {copies + 1})".encode())
                record = planes_record(plane)
                out.write(record)
                written += len(record)
            copies += 1
    names = ", ".join(name.decode(errors="replace") for name, _ in trace_planes)
    print(
        f"{args.output}: {written} bytes ({written / 2**20:.1f} MiB) = {args.input} "
        f"({len(data)} bytes) + {copies} copies ({args.copies}) of [{names}]"
    )


if __name__ == "__main__":
    main()
