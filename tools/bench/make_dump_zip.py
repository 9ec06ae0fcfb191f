#!/usr/bin/env python3
"""Assemble the 10 MB XLA dump benchmark input from the committed fixtures.

The README's browser number for a dump folder ("a 10 MB XLA dump, 13
folders, one stored zip") is measured on this file: every `*.txt` file (the
dump text XLA writes: `*.after_optimizations.txt`, `*-buffer-assignment.txt`,
`*-buffer-assignment-values.txt`, `*-live-range.txt`,
`*-memory-usage-report.txt`, `oom_intermediate_module.txt`, `versions.txt`)
of the 13 fixture folders below: the set of the README's first
measurement (the largest fixture folders on disk then; its zip holds the
same 128 files with the same CRCs as this script's, in another order, with
directory entries). Five of them (`pair-transformer-*`,
`pair-train-remat-b1024-aliased`) hold HloProtos, not text: only their
`versions.txt` goes in. 24 modules, 128 files, 9,818,046 bytes of text.

The zip is stored (no compression), its entries sorted by path under one
top folder `dump10/`, every timestamp the same: the same fixtures give the
same bytes.

Usage:
  python3 tools/bench/make_dump_zip.py OUT.zip [--fixtures DIR]

then `node tests/e2e/bench-xplane.mjs OUT.zip` (a built `dist/`) and
`target/release/oomscope analyze OUT.zip --json`. Standard library only.
The output is a benchmark input: write it to /tmp, never commit it.
"""

import argparse
import os
import sys
import zipfile

FOLDERS = [
    "donate-zoo",
    "donate-zoo-mid",
    "donate-zoo-old",
    "fsdp-transformer-scan",
    "oom-transformer-scan",
    "pair-remat-oom-v6e",
    "pair-train-remat-b1024-aliased",
    "pair-transformer-bf16",
    "pair-transformer-donate-v6e",
    "pair-transformer-remat",
    "pair-transformer-shard",
    "transformer-scan",
    "transformer-step",
]
TOP = "dump10"
# 1980-01-01, zip's first representable date: nothing depends on the clock.
DATE = (1980, 1, 1, 0, 0, 0)


def text_files(fixtures):
    """(path inside the zip, path on disk) of every text file, sorted."""
    found = []
    for folder in FOLDERS:
        root = os.path.join(fixtures, folder)
        if not os.path.isdir(root):
            sys.exit(f"{root}: no such fixture folder")
        for here, _dirs, names in os.walk(root):
            for name in names:
                if name.endswith(".txt"):
                    disk = os.path.join(here, name)
                    inside = os.path.relpath(disk, fixtures).replace(os.sep, "/")
                    found.append((f"{TOP}/{inside}", disk))
    return sorted(found)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out")
    parser.add_argument("--fixtures", default=os.path.join(here, "..", "..", "fixtures"))
    args = parser.parse_args()
    files = text_files(args.fixtures)
    total = 0
    with zipfile.ZipFile(args.out, "w", compression=zipfile.ZIP_STORED) as z:
        for inside, disk in files:
            with open(disk, "rb") as f:
                data = f.read()
            total += len(data)
            info = zipfile.ZipInfo(inside, date_time=DATE)
            info.external_attr = 0o644 << 16
            z.writestr(info, data, compress_type=zipfile.ZIP_STORED)
    modules = sum(1 for inside, _ in files if inside.endswith(".after_optimizations.txt"))
    print(
        f"{args.out}: {os.path.getsize(args.out)} bytes; {len(files)} files, "
        f"{total} bytes of text, {modules} modules, from {len(FOLDERS)} fixture folders"
    )


if __name__ == "__main__":
    main()
