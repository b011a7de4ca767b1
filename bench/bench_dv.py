"""Deletion-vector decode speed against its floor and against Paimon's design-doc anchor.

Builds a DV deleting 20% of 20M row positions (random, fixed seed), serializes it with our
writer (~2.5 MB), then times ``read_deletion_vector`` against the floor on the same bytes:
``zlib.crc32`` over the data plus ``pyroaring.BitMap.deserialize`` of the bitmap. The Java
anchor is the 247 ms deserialization time from Paimon's deletion-vector design (seed 004,
RoaringBitmap, 20% of 20,000,000). Prints ratios; asserts nothing.

Run: ``python bench/bench_dv.py [--quick]`` (``--quick``: 200,000 rows, 3 repeats; it runs, it
measures nothing)
"""

from __future__ import annotations

import argparse
import statistics
import time
import zlib

import numpy as np
from pyroaring import BitMap

from indexcore.formats.deletion_vector import read_deletion_vector, write_deletion_vector_file
from indexcore.io import BytesSource

ROWS = 20_000_000
FRACTION = 0.20
SEED = 20240101
REPEATS = 50
JAVA_ANCHOR_MS = 247.0


def best_and_median(fn, repeats: int = REPEATS) -> tuple[float, float]:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times) * 1000, statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a small DV, few repeats: runs, measures nothing")
    args = parser.parse_args()
    rows, repeats = (200_000, 3) if args.quick else (ROWS, REPEATS)
    rng = np.random.default_rng(SEED)
    positions = rng.choice(rows, int(rows * FRACTION), replace=False)
    start = time.perf_counter()
    file_bytes, metas = write_deletion_vector_file([("data-0.parquet", positions)])
    write_ms = (time.perf_counter() - start) * 1000
    meta = metas[0]
    print(f"DV of {meta.cardinality:,} positions in {rows:,} rows: file {len(file_bytes):,} bytes, "
          f"written in {write_ms:.1f} ms")

    data = memoryview(file_bytes)[meta.offset + 4:meta.offset + 4 + meta.length]
    bitmap = data[4:]

    def floor() -> None:
        zlib.crc32(data)
        BitMap.deserialize(bitmap)

    source = BytesSource(file_bytes, name="bench.index")

    def ours_bytes() -> None:
        read_deletion_vector(file_bytes, meta.offset, meta.length)

    def ours_source() -> None:
        read_deletion_vector(source, meta.offset, meta.length)

    assert read_deletion_vector(file_bytes, meta.offset, meta.length).cardinality == meta.cardinality
    for fn in (floor, ours_bytes, ours_source):  # warm up
        fn()
    floor_best, floor_med = best_and_median(floor, repeats)
    bytes_best, bytes_med = best_and_median(ours_bytes, repeats)
    src_best, src_med = best_and_median(ours_source, repeats)

    print(f"floor (crc32 + BitMap.deserialize): best {floor_best:.3f} ms, median {floor_med:.3f} ms")
    print(f"read_deletion_vector(bytes):        best {bytes_best:.3f} ms, median {bytes_med:.3f} ms")
    print(f"read_deletion_vector(BytesSource):  best {src_best:.3f} ms, median {src_med:.3f} ms "
          "(includes the source's copy of the range)")
    print(f"ratio ours(bytes) / floor:  {bytes_best / floor_best:.3f}x best, {bytes_med / floor_med:.3f}x median "
          "(target <= 1.1x)")
    print(f"ratio ours(source) / floor: {src_best / floor_best:.3f}x best, {src_med / floor_med:.3f}x median")
    print(f"ratio ours(bytes) / Java anchor {JAVA_ANCHOR_MS:.0f} ms: {bytes_med / JAVA_ANCHOR_MS:.4f}x")


if __name__ == "__main__":
    main()
