"""Bloom-filter ``=`` lookup, a fresh reader per operation, against Paimon's Java anchor.

Run: ``python bench/bench_bloom.py``. Uses golden ``bloom_i5000_f005__int__highcard``; when
that vector is not in the local subset, the same filter is rebuilt with our (byte-identical)
writer from the dataset's values, which every configuration shares. Prints the time per
lookup and its ratio to the Java anchor (7 us) and to a raw floor measured in the same run
(one xxHash64 of 8 bytes plus one bit test, the least any lookup can do in Python).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import xxhash

from indexcore.expr import Leaf
from indexcore.formats.bloom import BloomFilterReader, BloomFilterWriter
from indexcore.io import BytesSource
from indexcore.types import from_json, parse_type

JAVA_ANCHOR_US = 7.0
SINGLE = Path(__file__).resolve().parents[2] / "shared" / "conformance" / "golden" / "single"
TARGET = "bloom_i5000_f005__int__highcard"
OPTIONS = {"items": "5000", "fpp": "0.05"}


def load_blob() -> tuple[bytes, list[int], str]:
    dtype = parse_type("INT")
    path = SINGLE / f"{TARGET}.json"
    if path.is_file():
        vec = json.loads(path.read_text(encoding="utf-8"))
        values = [from_json(dtype, v) for v in vec["values"]]
        return (SINGLE / vec["bin_file"]).read_bytes(), values, f"golden {TARGET}"
    donor = next(iter(sorted(SINGLE.glob("bloom_*__int__highcard.json"))), None)
    if donor is None:
        sys.exit(f"no int highcard bloom vector under {SINGLE}")
    vec = json.loads(donor.read_text(encoding="utf-8"))
    values = [from_json(dtype, v) for v in vec["values"]]
    writer = BloomFilterWriter(dtype, OPTIONS)
    for v in values:
        writer.write(v)
    return writer.serialized_bytes(), values, f"rebuilt {TARGET} from {donor.stem} values"


def per_op_us(fn, ops: int) -> float:
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        fn(ops)
        best = min(best, time.perf_counter() - t0)
    return best / ops * 1e6


def main() -> None:
    blob, values, origin = load_blob()
    dtype = parse_type("INT")
    present = sorted({v for v in values if v is not None})
    present_set = set(present)
    absent = [v + 1 for v in present if v + 1 not in present_set]
    literals = [x for pair in zip(present, absent, strict=False) for x in pair][:1000]
    leaves = [Leaf("equal", "c", (x,)) for x in literals]
    n = len(leaves)

    def lookup(ops: int) -> None:
        for i in range(ops):
            BloomFilterReader(dtype, BytesSource(blob), OPTIONS).visit(leaves[i % n])

    keys = [x.to_bytes(8, "little", signed=True) for x in literals]
    bits = blob[4:]
    m = len(bits) * 8

    def floor(ops: int) -> None:
        for i in range(ops):
            pos = xxhash.xxh64_intdigest(keys[i % n]) % m
            _ = (bits[pos >> 3] >> (pos & 7)) & 1

    ops = 20_000
    ours = per_op_us(lookup, ops)
    raw = per_op_us(floor, ops)
    skipped = sum(BloomFilterReader(dtype, BytesSource(blob)).visit(leaf).to_json() == "SKIP" for leaf in leaves)
    print(f"blob: {origin}, {len(blob)} bytes, {n} literals ({skipped} SKIP)")
    print(f"bloom '=' fresh reader per op: {ours:.2f} us/op")
    print(f"ratio to Java anchor ({JAVA_ANCHOR_US:.0f} us): {ours / JAVA_ANCHOR_US:.2f}x")
    print(f"raw floor (xxhash64 + bit test): {raw:.3f} us/op; ratio to floor: {ours / raw:.1f}x")


if __name__ == "__main__":
    main()
