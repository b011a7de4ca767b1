"""Bloom-filter ``=`` tests against the floor of hashing and testing the same bytes, and Paimon Java.

    python bench/bench_bloom.py [--quick] [--no-java]

Blobs: golden ``bloom_i5000_f005__int__highcard`` (when the local golden subset lacks it, the same
filter rebuilt with our byte-identical writer from the dataset's values, which every configuration
shares) and golden ``bloom_i5000_f005__string__highcard``; 1,000 literals, half present, half
absent. Per type, the best of interleaved rounds of:
  floor:  the format's hash of the literal (Paimon's FastHash: Thomas Wang's 64-bit mix for
          integers, written inline; xxHash64 of the UTF-8 bytes for strings) and the k probed bit
          tests on the blob's bytes, stopping at the first clear bit;
  ours:   ``bloom.might_contain(blob, value, dtype)``, no reader (the entry point for many files);
  reader: a fresh ``BloomFilterReader`` per test answering the leaf (for reference);
  Java:   ``new FileIndexPredicate(bytes, rowType).testPredicate(p)`` per test on a one-column
          ``.index`` file holding the blob (tools/java/OracleBench.java, kind ``blob``), against
          ours on the same file: ``FileIndexPredicate(read_container(...)).evaluate(p)``.
Prints ours / floor against the goal of issue 30 (within 5x) with MET / NOT MET, and ours / Java.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import xxhash

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import oracles  # noqa: E402

from indexcore.expr import Leaf, predicate_from_json  # noqa: E402
from indexcore.formats.bloom import BloomFilterReader, BloomFilterWriter, might_contain  # noqa: E402
from indexcore.formats.container import read_container, write_container  # noqa: E402
from indexcore.io import BytesSource  # noqa: E402
from indexcore.scan import FileIndexPredicate  # noqa: E402
from indexcore.types import from_json, parse_type  # noqa: E402

GOAL = 5.0
SINGLE = ROOT.parent / "shared" / "conformance" / "golden" / "single"
OPTIONS = {"items": "5000", "fpp": "0.05"}
_M64, _S64, _M32 = (1 << 64) - 1, 1 << 63, (1 << 32) - 1


def load_blob(type_name: str) -> tuple[bytes, list, str]:
    """The ``bloom_i5000_f005`` blob of a high-cardinality column, its values and where it came from."""
    dtype = parse_type(type_name)
    target = f"bloom_i5000_f005__{type_name.lower()}__highcard"
    path = SINGLE / f"{target}.json"
    if path.is_file():
        vec = json.loads(path.read_text(encoding="utf-8"))
        values = [from_json(dtype, v) for v in vec["values"]]
        return (SINGLE / vec["bin_file"]).read_bytes(), values, f"golden {target}"
    donor = next(iter(sorted(SINGLE.glob(f"bloom_*__{type_name.lower()}__highcard.json"))), None)
    if donor is None:
        sys.exit(f"no {type_name} highcard bloom vector under {SINGLE}")
    vec = json.loads(donor.read_text(encoding="utf-8"))
    values = [from_json(dtype, v) for v in vec["values"]]
    writer = BloomFilterWriter(dtype, OPTIONS)
    for v in values:
        writer.write(v)
    return writer.serialized_bytes(), values, f"{target} rebuilt from {donor.stem} values"


def wang(key: int) -> int:
    """Paimon's getLongHash, the least Python for it (one multiply per shift-and-add step)."""
    k = ((key * 2097151 - 1 + _S64) & _M64) - _S64
    k ^= k >> 24
    k = ((k * 265 + _S64) & _M64) - _S64
    k ^= k >> 14
    k = ((k * 21 + _S64) & _M64) - _S64
    k ^= k >> 28
    return ((k * 2147483649 + _S64) & _M64) - _S64


def floor_test(blob: bytes, hash64: int) -> bool:
    """The k probes of BloomFilter64.testHash on the blob's bytes, stopping at the first clear bit."""
    num_bits = (len(blob) - 4) * 8
    h2, c = (hash64 >> 32) & _M32, hash64 & _M32
    for _ in range(int.from_bytes(blob[:4], "big")):
        c = (c + h2) & _M32
        pos = (_M32 - c if c >> 31 else c) % num_bits
        if not (blob[4 + (pos >> 3)] >> (pos & 7)) & 1:
            return False
    return True


def interleaved(fns: list, ops: int, rounds: int) -> list[float]:
    """Seconds per operation of each ``fn(ops)``: the best of ``rounds``, the functions interleaved."""
    best = [float("inf")] * len(fns)
    for _ in range(rounds):
        for i, fn in enumerate(fns):
            t = time.perf_counter()
            fn(ops)
            best[i] = min(best[i], (time.perf_counter() - t) / ops)
    return best


def java_blob_per_op(java, tmp: Path, type_name: str, index_type: str, blob: bytes, leaf_json: dict,
                     ops: int, rounds: int, fresh=None) -> tuple[float | None, float, str]:
    """Java's and our seconds per ``FileIndexPredicate`` test of one ``.index`` file holding ``blob``
    for a column ``c`` of ``type_name`` (a fresh reader per test on both sides; ``fresh()``, when
    given, runs before each of ours, e.g. to forget what an earlier reader indexed), and the
    file's answer."""
    wh = tempfile.mkdtemp(prefix=f"wh_{index_type}_{type_name}_", dir=tmp)
    spec = {"columns": [{"name": "c", "type": type_name}], "options": {"bucket": "-1"},
            "commits": [{"rows": [{"values": [None]}]}]}
    assert java.ask({"op": "write", "warehouse": wh, "table": "db.t", "spec": spec})["ok"]
    data = write_container([("c", [(index_type, blob)])])
    path = tmp / f"{index_type}-{type_name}.index"
    path.write_bytes(data)
    row_type = {"c": parse_type(type_name)}
    pred = predicate_from_json(leaf_json, row_type)

    def ours(n: int) -> None:
        for _ in range(n):
            if fresh is not None:
                fresh()
            FileIndexPredicate(read_container(BytesSource(data, name=path.name)), row_type).evaluate(pred)

    j = java.ask({"op": "bench", "kind": "blob", "warehouse": wh, "table": "db.t", "path": str(path),
                  "predicate": leaf_json, "ops": ops, "rounds": rounds})
    mine = interleaved([ours], ops, rounds)[0]
    answer = FileIndexPredicate(read_container(BytesSource(data)), row_type).evaluate(pred)
    if not j.get("ok"):
        first = (j.get("error") or "no answer").splitlines()[0]
        print(f"  Java: cannot time this blob ({first.split('RuntimeException: ')[-1]})")
        return None, mine, str(answer)
    return j["seconds"] / ops, mine, str(answer)


def bench_type(type_name: str, ops: int, rounds: int, java, tmp: Path) -> bool:
    blob, values, origin = load_blob(type_name)
    dtype = parse_type(type_name)
    present = sorted({v for v in values if v is not None})
    taken = set(present)
    absent = [v + 1 if type_name == "INT" else v + "~" for v in present]
    absent = [v for v in absent if v not in taken]
    literals = [x for pair in zip(present, absent, strict=False) for x in pair][:1000]
    leaves = [Leaf("equal", "c", (x,)) for x in literals]
    n = len(literals)
    hashes = [wang(x) if type_name == "INT" else None for x in literals]
    utf8 = [x.encode() if isinstance(x, str) else None for x in literals]

    def floor(ops: int) -> None:
        for i in range(ops):
            j = i % n
            floor_test(blob, wang(literals[j]) if hashes[j] is not None else xxhash.xxh64_intdigest(utf8[j]))

    def ours(ops: int) -> None:
        for i in range(ops):
            might_contain(blob, literals[i % n], dtype)

    def reader(ops: int) -> None:
        for i in range(ops):
            BloomFilterReader(dtype, BytesSource(blob), OPTIONS).visit(leaves[i % n])

    # every answer agrees with a reader's, and no present value is answered absent
    answers = [might_contain(blob, x, dtype) for x in literals]
    assert answers == [BloomFilterReader(dtype, BytesSource(blob)).visit(leaf).remain() for leaf in leaves]
    assert all(a for a, x in zip(answers, literals, strict=True) if x in taken)
    f, o, r = interleaved([floor, ours, reader], ops, rounds)
    met = o <= GOAL * f
    print(f"{type_name}: {origin}, {len(blob)} bytes, {n} literals ({answers.count(False)} absent)")
    print(f"  floor (hash + bit tests)   {f * 1e6:7.3f} us/op")
    print(f"  ours  might_contain        {o * 1e6:7.3f} us/op  ours/floor {o / f:5.2f}x "
          f"(goal {GOAL:.0f}x: {'MET' if met else 'NOT MET'})")
    print(f"  fresh reader + visit       {r * 1e6:7.3f} us/op  {r / f:5.2f}x floor")
    if java is not None:
        leaf_json = {"op": "equal", "field": "c", "literals": [literals[0]]}
        j, mine, answer = java_blob_per_op(java, tmp, type_name, "bloom-filter", blob, leaf_json, ops, rounds)
        if j is not None:
            print(f"  .index file, FileIndexPredicate per test ({answer}): ours {mine * 1e6:.2f} us/op, "
                  f"Java {j * 1e6:.2f} us/op, ours/Java {mine / j:.2f}x")
    return met


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer operations and rounds (seconds)")
    ap.add_argument("--no-java", action="store_true", help="skip the Paimon Java comparison")
    args = ap.parse_args(argv)
    ops, rounds = (1_000, 5) if args.quick else (20_000, 7)
    reason = "--no-java" if args.no_java else oracles.java_skip_reason()
    if reason:
        print(f"Java: skipped ({reason})")
    with tempfile.TemporaryDirectory() as tmp:
        java = None if reason else oracles.JavaOracle(tmp)
        try:
            met = [bench_type(t, ops, rounds, java, Path(tmp)) for t in ("INT", "STRING")]
        finally:
            if java is not None:
                java.close()
    print(f"overall: {'MET' if all(met) else 'NOT MET'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
