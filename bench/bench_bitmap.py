"""Bitmap index point lookup on the 100k-row STRING conformance blobs: time per `=` and bytes read.

Each operation opens a fresh reader (and source), as a query planner does per data file, and
answers one ``c = 'asdfghjkl123_5000'``. Ratios are against Paimon Java's anchors (V1 5.3 ms,
V2 0.28 ms per lookup) and against a floor measured here: pyroaring deserializing the same
bitmap bytes, the least any lookup must do.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import fsspec
from pyroaring import BitMap

from indexcore.expr import Leaf
from indexcore.formats.bitmap.reader import BitmapReader
from indexcore.io import BytesSource, FileSource
from indexcore.types import parse_type

ROOT = Path(__file__).resolve().parent.parent
FILE_INDEX = ROOT.parent / "shared" / "conformance" / "file_index"
JAVA_MS = {1: 5.3, 2: 0.28}
VALUE = "asdfghjkl123_5000"
STRING = parse_type("STRING")


def per_op(fn, min_seconds: float = 1.0) -> float:
    """Seconds per call, repeating until at least ``min_seconds`` have passed (best of 3 rounds)."""
    fn()
    best = float("inf")
    for _ in range(3):
        n, start = 0, time.perf_counter()
        while True:
            fn()
            n += 1
            elapsed = time.perf_counter() - start
            if elapsed >= min_seconds / 3:
                break
        best = min(best, elapsed / n)
    return best


def main() -> int:
    if not FILE_INDEX.is_dir():
        print(f"conformance blobs not found at {FILE_INDEX}")
        return 1
    fs = fsspec.filesystem("file")
    leaf = Leaf("equal", "c", (VALUE,))
    for version in (1, 2):
        path = str(FILE_INDEX / f"bitmap-index-v{version}")
        data = Path(path).read_bytes()

        def lookup_file(path=path):
            return BitmapReader(STRING, FileSource(fs, path), {}).visit(leaf)

        def lookup_memory(data=data):
            return BitmapReader(STRING, BytesSource(data), {}).visit(leaf)

        source = FileSource(fs, path)
        reader = BitmapReader(STRING, source, {})
        rows = len(reader.visit(leaf).bitmap)
        bytes_read, requests = source.stats.snapshot()
        entry = reader.find_entry(VALUE.encode())
        at = reader.meta.body_start + entry.offset
        bitmap_bytes = data[at:at + entry.length] if entry.length >= 0 else data[at:]
        floor = per_op(lambda b=bitmap_bytes: BitMap.deserialize(b))
        t_file = per_op(lookup_file)
        t_mem = per_op(lookup_memory)
        java = JAVA_MS[version] / 1000
        print(f"V{version}: {rows} rows match; a lookup reads {bytes_read} of {len(data)} bytes "
              f"in {requests} requests (head {reader.meta.head_size}, bitmap {len(bitmap_bytes)})")
        print(f"  file source   {t_file * 1e3:8.3f} ms/op  = {t_file / java:6.2f}x Java anchor "
              f"({JAVA_MS[version]} ms), {t_file / floor:8.1f}x floor")
        print(f"  memory source {t_mem * 1e3:8.3f} ms/op  = {t_mem / java:6.2f}x Java anchor, "
              f"{t_mem / floor:8.1f}x floor")
        print(f"  floor (pyroaring deserialize of the {len(bitmap_bytes)}-byte bitmap) {floor * 1e6:.2f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
