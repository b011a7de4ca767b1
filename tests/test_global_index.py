"""Global index formats against files written by Paimon Java (paimon-cpp / paimon-rust test data).

BTree lookups must equal the rows each ``.csv`` lists; the writers must reproduce the Java bytes
(BTree: uncompressed and zstd; bitmap: the current streaming layout); detection must name every
index file under ``external/`` by its structure and, inside a table, by its index manifest.
"""

from __future__ import annotations

import collections
import csv
import json
import math
import random
import struct
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest
from pyroaring import BitMap64

from indexcore.errors import CorruptFileError, IndexCoreError
from indexcore.expr import Leaf
from indexcore.formats.bitmap_global_index import BitmapGlobalIndexReader, write_bitmap_global_index
from indexcore.formats.btree_block import DataBlock, block_row_ids, entry_starts
from indexcore.formats.btree_index import (
    BTreeIndexReader,
    BTreeIndexWriter,
    _BlockBuilder,
    encode_row_ids,
    write_btree_index,
)
from indexcore.formats.detect import detect
from indexcore.formats.global_index import SortedIndexFileMeta, block_crc, key_codec, write_var
from indexcore.formats.pk_btree_index import read_source_meta
from indexcore.io import BytesSource, Storage, open_file
from indexcore.types import parse_type
from indexcore.warehouse.global_index import global_index_files, open_reader
from indexcore.warehouse.table import Table

ROOT = Path(__file__).resolve().parent.parent


def _cpp_btree_files(external: Path) -> list[Path]:
    return sorted((external / "paimon-cpp/global_index/btree/btree_compatibility_data").glob("*.bin"))


def _csv_rows(path: Path, type_name: str) -> list[tuple[object, int]]:
    def conv(text: str):
        if type_name == "FLOAT":
            return struct.unpack("<f", struct.pack("<f", float(text.rstrip("f"))))[0]
        return int(text) if type_name == "INT" else text

    with open(path.with_suffix(".csv"), newline="") as fh:
        return [(None if r["is_null"] == "true" else conv(r["key"]), int(r["row_id"])) for r in csv.DictReader(fh)]


def _type_of(path: Path) -> str:
    return "FLOAT" if "float" in path.name else "STRING" if "string" in path.name else "INT"


def _same(a, b) -> bool:
    return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))


def test_btree_java_files_hold_the_csv_rows_and_rewrite_byte_exact(external):
    files = _cpp_btree_files(external)
    assert len(files) == 14
    for path in files:
        dtype = parse_type(_type_of(path))
        rows = _csv_rows(path, _type_of(path))
        reader = BTreeIndexReader(open_file(str(path)), dtype)
        got = {rid: key for key, ids in reader.entries() for rid in ids}
        got.update({rid: None for rid in reader.null_rows})
        want = {rid: key for key, rid in rows}
        assert got.keys() == want.keys(), path.name
        assert all(_same(got[r], want[r]) for r in want), path.name
        writer = BTreeIndexWriter(dtype)
        for key, rid in rows:  # the Java generator's order
            writer.write(key, rid)
        assert writer.finish() == path.read_bytes(), path.name
        meta = SortedIndexFileMeta.deserialize(Path(str(path) + ".meta").read_bytes())
        assert writer.meta() == meta, path.name


def test_btree_lookups_equal_the_csv(external):
    for path in _cpp_btree_files(external):
        type_name = _type_of(path)
        dtype = parse_type(type_name)
        rows = _csv_rows(path, type_name)
        reader = BTreeIndexReader(open_file(str(path)), dtype)
        # Java's Float.compare order (-0.0 before 0.0), which Paimon's data filter uses too
        order = key_codec(dtype).order
        by_key, value_of = defaultdict(set), {}
        for key, rid in rows:
            if key is not None and not (isinstance(key, float) and math.isnan(key)):
                by_key[order(key)].add(rid)
                value_of[order(key)] = key
        keys = sorted(by_key)
        sample = keys[:: max(1, len(keys) // 40)] + keys[-3:]
        for key in sample:
            assert set(reader.visit(Leaf("equal", "c", (value_of[key],)))) == by_key[key], (path.name, key)
        nulls = {rid for key, rid in rows if key is None}
        assert set(reader.visit(Leaf("isNull", "c"))) == nulls
        if len(keys) >= 4:
            lo, hi = keys[len(keys) // 4], keys[3 * len(keys) // 4]
            want = set().union(*(by_key[k] for k in keys if lo <= k <= hi))
            assert set(reader.visit(Leaf("between", "c", (value_of[lo], value_of[hi])))) == want, path.name
            want_lt = set().union(*(by_key[k] for k in keys if k < lo))
            assert set(reader.visit(Leaf("lessThan", "c", (value_of[lo],)))) == want_lt, path.name
        if keys:  # a leaf the BTree does not answer: every row may match
            assert reader.visit(Leaf("notBetween", "c", (value_of[keys[0]], value_of[keys[0]]))) is None


@pytest.mark.parametrize("name,compression,exact", [
    ("btree_int_100_no_compress.bin", "none", True), ("btree_int_100_zstd.bin", "zstd", True),
    ("btree_int_100_lz4.bin", "lz4", False), ("btree_int_100_with_nulls.bin", "none", True)])
def test_btree_rust_fixtures_all_compressions(external, name, compression, exact):
    path = external / "paimon-rust/testdata/btree" / name
    reader = BTreeIndexReader(open_file(str(path)), parse_type("INT"))
    entries = list(reader.entries())
    assert entries == [(2 * i, [i]) for i in range(100)]
    assert set(reader.equal(100)) == {50}
    assert set(reader.visit(Leaf("between", "c", (10, 20)))) == {5, 6, 7, 8, 9, 10}
    assert not reader.equal(1)
    nulls = set(reader.null_rows)
    assert (len(nulls) == 20) == ("nulls" in name) and not nulls & set(reader.non_null_rows())
    writer = BTreeIndexWriter(parse_type("INT"), block_size=256, compression=compression)
    for key, ids in entries:
        writer.write(key, ids[0])
    for rid in sorted(nulls):
        writer.write(None, rid)
    out = writer.finish()
    if exact:
        assert out == path.read_bytes()
    else:  # lz4-java picks other matches than liblz4: the blocks differ, the content must not
        again = BTreeIndexReader(BytesSource(out), parse_type("INT"))
        assert list(again.entries()) == entries
        assert {c for c in again._blocks} and "lz4" in {reader.index_compression, compression}


def test_btree_varchar_fixture(external):
    path = external / "paimon-rust/testdata/btree/btree_varchar_100_no_compress.bin"
    reader = BTreeIndexReader(open_file(str(path)), parse_type("STRING"))
    entries = list(reader.entries())
    assert len(entries) == 100 and all(len(ids) == 1 for _, ids in entries)
    keys = [k for k, _ in entries]
    assert keys == sorted(keys, key=lambda k: k.encode()) and {len(k) for k in keys} >= {1, 2, 3, 4}
    assert len(reader.equal("a")) == 1


def test_btree_write_then_read_round_trip():
    dtype = parse_type("BIGINT")
    pairs = [(v % 37, i) for i, v in enumerate(range(0, 3000, 7))] + [(None, 5000), (None, 5001)]
    data, meta = write_btree_index(dtype, pairs, block_size=512, compression="zstd")
    reader = BTreeIndexReader(BytesSource(data), dtype)
    assert reader.block_count > 1
    for key in (0, 5, 36):
        assert set(reader.equal(key)) == {rid for v, rid in pairs if v == key}
    assert set(reader.null_rows) == {5000, 5001}
    assert meta == SortedIndexFileMeta(key_codec(dtype).encode(0), key_codec(dtype).encode(36), True)


_LEAVES = ("equal", "notEqual", "lessThan", "lessOrEqual", "greaterThan", "greaterOrEqual", "between", "in")


def _want(op: str, lits: tuple, pairs: list, sort_key) -> set[int]:
    """The rows a leaf matches, from the (key, row id) pairs the file was built from."""
    tests = {"equal": lambda k: k == lits[0], "notEqual": lambda k: k != lits[0], "lessThan": lambda k: k < lits[0],
             "lessOrEqual": lambda k: k <= lits[0], "greaterThan": lambda k: k > lits[0],
             "greaterOrEqual": lambda k: k >= lits[0], "between": lambda k: lits[0] <= k <= lits[1],
             "in": lambda k: k in lits, "notIn": lambda k: k not in lits}
    lits = tuple(sort_key(v) for v in lits)
    return {rid for key, rid in pairs if key is not None and tests[op](sort_key(key))}


def _float_key(v: float) -> tuple:  # Java's Float.compare order, written out for the test
    return (0, v, math.copysign(1.0, v))


@pytest.mark.parametrize("type_name,make,sort_key", [
    ("INT", lambda rng: rng.randrange(-3000, 3000), lambda v: v),
    ("BIGINT", lambda rng: rng.randrange(-2**40, 2**40) // 2**30, lambda v: v),
    ("STRING", lambda rng: "k" * rng.randrange(0, 90) + str(rng.randrange(60)), lambda v: v.encode()),
    ("FLOAT", lambda rng: rng.choice([-0.0, 0.0, math.inf, -math.inf, rng.randrange(-50, 50) / 4]), _float_key),
])
@pytest.mark.parametrize("ordered", [True, False])
def test_btree_binary_search_answers_every_leaf_like_the_rows(type_name, make, sort_key, ordered):
    """Binary search over each block's entries and the vectorised row ids give exactly the rows the
    file was built from: many small blocks, keys with hundreds of rows (var ints of 1-3 bytes),
    row ids past 2^16 and 2^32, strings sharing long prefixes; and blocks whose keys are out of
    order (as some Java test writers wrote them) are scanned whole, with the same answers."""
    rng = random.Random(hash((type_name, ordered)) & 0xFFFF)
    dtype = parse_type(type_name)
    base = rng.choice([0, 70_000, 2**32 - 500, 5 * 2**32])
    pairs = [(make(rng), base + rid) for rid in range(3000)] + [(None, base + 3000 + i) for i in range(5)]
    if ordered:
        data, _ = write_btree_index(dtype, pairs, block_size=512)
    else:  # the writer as the Java test generator drove it: keys in row order, not sorted (one block:
        # with many, which blocks a key may be in is undefined, for Paimon's reader as for ours)
        writer = BTreeIndexWriter(dtype, block_size=1 << 22)
        for key, rid in pairs:
            writer.write(key, rid)
        data = writer.finish()
    reader = BTreeIndexReader(BytesSource(data), dtype)
    assert reader.block_count > 4 if ordered else reader.block_count == 1
    assert any(not reader.data_block(i).ordered for i in range(reader.block_count)) == (not ordered)
    keys = sorted({k for k, _ in pairs if k is not None}, key=sort_key)
    probes = [keys[0], keys[-1], *rng.sample(keys, 12), make(rng)]
    if not ordered:  # the index block names the last key written: lookups from above it find no block
        last = sort_key(next(k for k, _ in reversed(pairs) if k is not None))
        probes = [v for v in probes if sort_key(v) <= last]
    for op in _LEAVES:
        for i, v in enumerate(probes):
            lits = (v, probes[(i + 3) % len(probes)]) if op in ("between", "in") else (v,)
            if op == "between" and sort_key(lits[0]) > sort_key(lits[1]):
                lits = lits[::-1]
            assert set(reader.visit(Leaf(op, "c", lits))) == _want(op, lits, pairs, sort_key), (op, lits)
    assert set(reader.visit(Leaf("isNull", "c"))) == {base + 3000 + i for i in range(5)}
    if ordered:  # counts per key read with numpy, against the rows written
        counts = collections.Counter(sort_key(k) for k, _ in pairs if k is not None)
        assert [(sort_key(k), n) for k, n in reader.cardinalities()] == sorted(counts.items())
        summary = reader.summary()
        assert (summary["distinct_keys"], summary["non_null_rows"], summary["null_rows"]) == (len(counts), 3000, 5)
        assert sort_key(summary["first_key"]) == sort_key(keys[0]) and sort_key(summary["last_key"]) == sort_key(keys[-1])


@pytest.mark.parametrize("type_name,make,sort_key", [
    ("INT", lambda rng: rng.randrange(-3000, 3000), lambda v: v),
    ("STRING", lambda rng: "k" * rng.randrange(0, 40) + str(rng.randrange(300)), lambda v: v.encode()),
    ("DOUBLE", lambda rng: rng.choice([-0.0, 0.0, math.inf, rng.randrange(-500, 500) / 8]), _float_key),
])
def test_bitmap_global_index_bisects_its_dictionary_blocks(type_name, make, sort_key):
    """Lookups read only the dictionary blocks that may hold the keys and bisect inside them; the
    answers equal the rows the file was built from, for every leaf, across many blocks."""
    rng = random.Random(11)
    dtype = parse_type(type_name)
    pairs = [(make(rng), 70_000 + rid) for rid in range(4000)] + [(None, 90_000 + i) for i in range(3)]
    data, _ = write_bitmap_global_index(dtype, pairs, dictionary_block_size=256)
    source = BytesSource(data)
    reader = BitmapGlobalIndexReader(source, dtype)
    assert len(reader.blocks) > 8 and reader.sorted
    keys = sorted({k for k, _ in pairs if k is not None}, key=sort_key)
    probes = [keys[0], keys[-1], *rng.sample(keys, 10), make(rng)]
    for op in (*_LEAVES, "notIn"):
        for i, v in enumerate(probes):
            lits = (v, probes[(i + 3) % len(probes)]) if op in ("between", "in", "notIn") else (v,)
            if op == "between" and sort_key(lits[0]) > sort_key(lits[1]):
                lits = lits[::-1]
            assert set(reader.visit(Leaf(op, "c", lits))) == _want(op, lits, pairs, sort_key), (op, lits)
    fresh_source = BytesSource(data)
    fresh = BitmapGlobalIndexReader(fresh_source, dtype)
    fresh.visit(Leaf("equal", "c", (keys[len(keys) // 2],)))
    assert len(fresh._walked) == 1  # one dictionary block read, not all of them
    assert fresh_source.stats.bytes_read < len(data) // 4


@pytest.mark.parametrize("kind", ["btree", "bitmap"])
@pytest.mark.parametrize("type_name", ["INT", "STRING"])
def test_global_index_blocks_with_damaged_structure_give_our_error(kind, type_name):
    """Bytes of a block changed and the block re-sealed (its CRC recomputed, so the structure, not
    the checksum, is what breaks): every lookup, count and listing answers or raises our error,
    never a numpy, struct or index error (a key of the wrong width raised struct.error before)."""
    rng = random.Random(hash((kind, type_name)) & 0xFFFF)
    dtype = parse_type(type_name)
    make = (lambda: rng.randrange(-500, 500)) if type_name == "INT" else (
        lambda: "k" * rng.randrange(0, 200) + str(rng.randrange(99)))
    pairs = [(make(), rid * 37) for rid in range(1500)] + [(None, 99_999)]
    if kind == "btree":
        data, _ = write_btree_index(dtype, pairs, block_size=512)
        opener = BTreeIndexReader
        handles = list(opener(BytesSource(data), dtype)._handles)
    else:
        data, _ = write_bitmap_global_index(dtype, pairs, dictionary_block_size=256)
        opener = BitmapGlobalIndexReader
        handles = [(o, n) for _, o, n in opener(BytesSource(data), dtype).blocks]
    for _ in range(150):
        buf = bytearray(data)
        off, size = rng.choice(handles)
        for _ in range(rng.randrange(1, 4)):
            at = off + rng.randrange(size)
            buf[at] = rng.randrange(256) if rng.random() < 0.7 else buf[at] ^ (1 << rng.randrange(8))
        buf[off + size + 1:off + size + 5] = block_crc(bytes(buf[off:off + size]), buf[off + size]).to_bytes(4, "little")
        v = make()
        try:
            reader = opener(BytesSource(bytes(buf), name="damaged.index"), dtype)
            for op in ("equal", "greaterThan", "lessOrEqual", "notEqual"):
                reader.visit(Leaf(op, "c", (v,)))
            reader.cardinalities()
            if kind == "btree":
                reader.summary()
                list(reader.entries())
        except IndexCoreError as exc:
            assert exc.file == "damaged.index" and exc.structure


def test_btree_block_row_ids_reports_a_count_that_does_not_match():
    """The vectorised row-id decode checks each entry: a count saying more row ids than the
    entry holds is a CorruptFileError naming the block and the entry's offset."""
    builder = _BlockBuilder()
    for k in range(10):
        value = encode_row_ids([k * 300 + j for j in range(5)])
        if k == 6:
            value = write_var(6) + value[1:]  # says 6, holds 5
        builder.add(struct.pack("<i", k), value)
    block = builder.finish()
    blk = DataBlock(block, entry_starts(block, "f", "btree data block", 1000), 1000)
    assert block_row_ids(blk, 0, 6, "f").tolist() == [k * 300 + j for k in range(6) for j in range(5)]
    with pytest.raises(CorruptFileError, match="entry 6") as err:
        block_row_ids(blk, 0, 10, "f")
    assert err.value.offset == 1000 + int(blk.starts[6])
    with pytest.raises(CorruptFileError, match="entry 6"):
        block_row_ids(blk, 6, 7, "f")


def test_btree_corruption_is_our_error(external):
    data = bytearray((external / "paimon-rust/testdata/btree/btree_int_100_no_compress.bin").read_bytes())
    with pytest.raises(CorruptFileError, match="magic"):
        BTreeIndexReader(BytesSource(bytes(data[:-1]) + b"X"), parse_type("INT"))
    with pytest.raises(CorruptFileError):
        BTreeIndexReader(BytesSource(bytes(data[:30])), parse_type("INT"))
    data[10] ^= 0xFF  # inside the first data block
    reader = BTreeIndexReader(BytesSource(bytes(data)), parse_type("INT"))
    with pytest.raises(CorruptFileError, match="CRC"):
        reader.block(0)


def test_bitmap_global_index_java_files(external):
    folder = external / "paimon-rust/testdata/bitmap"
    cases = {"bitmap_int_logical_java.index": ("INT", {-1: {0}, 0: {1, 2}, 1: {3}, 256: {4}}, {5}),
             "bitmap_varchar_java.index": ("STRING", None, {4})}
    for name, (type_name, values, nulls) in cases.items():
        dtype = parse_type(type_name)
        meta = SortedIndexFileMeta.deserialize((folder / (name + ".meta")).read_bytes())
        reader = BitmapGlobalIndexReader(open_file(str(folder / name)), dtype, meta)
        assert set(reader.null_rows) == nulls
        dictionary = {k: set(reader.rows_of(k)) for k, _, _ in reader.dictionary}
        if values is not None:
            assert dictionary == values
        assert set().union(*dictionary.values()) == set(reader.non_null_rows)
        codec = key_codec(dtype)
        assert codec.decode(meta.first_key) == min(dictionary, key=codec.order)
        assert codec.decode(meta.last_key) == max(dictionary, key=codec.order)
        for key, rows in dictionary.items():
            assert set(reader.visit(Leaf("equal", "c", (key,)))) == rows
        rows = sorted([(k, r) for k, rs in dictionary.items() for r in rs] + [(None, r) for r in nulls],
                      key=lambda p: p[1])
        data, written_meta = write_bitmap_global_index(dtype, rows)
        assert written_meta == meta
        if name.startswith("bitmap_int"):  # the current (streaming) Java layout
            assert data == (folder / name).read_bytes()
        again = BitmapGlobalIndexReader(BytesSource(data), dtype)
        assert {k: set(again.rows_of(k)) for k, _, _ in again.dictionary} == dictionary
    assert set(reader.visit(Leaf("in", "c", ("k1", "k2")))) == {5, 6, 7}


def _index_files(external: Path) -> list[Path]:
    return sorted(p for p in external.rglob("*") if p.is_file() and p.parent.name == "index")


def test_detection_by_structure_never_says_hash_for_global_indexes(external):
    files = _index_files(external)
    assert len(files) > 100
    for path in files:
        kind = detect(open_file(str(path))).kind
        name = path.name
        if name.startswith("btree-global-index"):
            assert kind == "btree", name
        elif name.startswith("tantivy"):
            assert kind == "tantivy-fulltext", name
        elif name.startswith("vector-"):
            assert kind == "vector-index", name
        assert kind != "hash-index", name  # none of these tables has a dynamic-bucket hash index
    for path in _cpp_btree_files(external):
        assert detect(open_file(str(path))).kind == "btree"
    for path in (external / "paimon-rust/testdata/bitmap").glob("*.index"):
        assert detect(open_file(str(path))).kind == "bitmap-global-index"


def _tables_with_index(external: Path) -> list[Path]:
    return sorted({p.parent.parent for p in _index_files(external)})


def test_manifest_names_every_global_index_and_readers_agree_with_data(external):
    from indexcore.warehouse.data import read_table

    seen = set()
    for root in _tables_with_index(external):
        storage = Storage(str(root))
        table = Table(storage, storage.root, root.name)
        for gif in global_index_files(table):
            seen.add(gif.family)
            f = gif.entry.index_file
            assert gif.field is not None and (root / "index" / f.file_name).stat().st_size == f.file_size
            kind = detect(storage.open(gif.path)).kind
            assert kind == {"btree": "btree", "pk-btree": "btree", "bitmap": "bitmap-global-index",
                            "vector": kind, "full-text": "tantivy-fulltext"}[gif.family]
            if gif.family == "vector" and f.index_type == "ivf-flat":
                assert kind == "vector-index"
            if gif.family == "pk-btree":
                src = read_source_meta(gif.meta.source_meta)
                assert src.row_count == f.row_count
        if root.name == "append_with_btree_with_partition":
            rows = read_table(table).to_pylist()
            for gif in global_index_files(table):
                reader = open_reader(table, gif)
                lo, hi = gif.row_range
                part = gif.entry.partition
                # row ids follow file order within the partition's row range
                ordered = [r for r in rows if r["pt"] == part[0]]
                assert hi - lo + 1 == len(ordered) == 20
                for key, ids in reader.entries():
                    for rid in ids:
                        assert ordered[rid][gif.field.name] == _py(key, gif.field.type), (gif.field.name, rid)
                assert {i for i, r in enumerate(ordered) if r[gif.field.name] is None} == set(reader.null_rows)
    assert {"btree", "pk-btree", "vector", "full-text"} <= seen


def _py(key, dtype):
    from indexcore.types import to_python

    return to_python(dtype, key)


def test_inspect_cli_uses_the_index_manifest(external):
    root = external / "paimon-cpp/orc/append_with_btree_with_partition.db/append_with_btree_with_partition"
    storage = Storage(str(root))
    table = Table(storage, storage.root, root.name)
    gif = next(g for g in global_index_files(table) if g.field.name == "col_int")
    proc = subprocess.run([sys.executable, "-m", "indexcore", "inspect", gif.path, "--format", "json"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert got["kind"] == "btree" and "ITBP" in got["detected_by"]
    m = got["index_manifest"]
    assert (m["field"], m["field_type"], m["field_id"]) == ("col_int", "INT", gif.meta.index_field_id)
    assert m["row_range"] == list(gif.row_range)
    assert got["summary"]["non_null_rows"] + got["summary"]["null_rows"] == gif.entry.index_file.row_count
    tantivy = next((external / "paimon-rust/datafusion/default.db/test_tantivy_fulltext/index").iterdir())
    proc = subprocess.run([sys.executable, "-m", "indexcore", "inspect", str(tantivy), "--format", "json"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    got = json.loads(proc.stdout)
    assert got["kind"] == "tantivy-fulltext" and got["index_manifest"]["field"] == "content"
    assert got["summary"]["files"] > 0 and got["index_manifest"]["row_range"] == [0, 4]


def test_vector_index_metadata(external):
    storage = Storage(str(external / "paimon-rust/datafusion/default.db/test_lumina_vector"))
    table = Table(storage, storage.root, "test_lumina_vector")
    (gif,) = global_index_files(table)
    d = gif.describe()
    assert (d["family"], d["dimension"], d["metric"], d["field"], d["row_range"]) == \
        ("vector", 4, "l2", "embedding", [0, 5])
    assert d["field_type"] == "ARRAY<FLOAT>"  # pypaimon wrote this table with an ARRAY column


def test_pk_btree_source_meta_locates_rows(external):
    root = external / "paimon-cpp/orc/pk_btree_e2e.db/pk_btree_e2e"
    storage = Storage(str(root))
    table = Table(storage, storage.root, root.name)
    pk = [g for g in global_index_files(table, 2) if g.family == "pk-btree"]
    assert pk
    gif = max(pk, key=lambda g: g.entry.index_file.row_count)
    src = gif.source_meta()
    assert src.row_count == gif.entry.index_file.row_count == 2000
    reader = open_reader(table, gif)
    zero = reader.equal(0)
    located = src.locate(zero)
    assert sum(len(v) for v in located.values()) == len(zero) == 200
    assert set(located) <= {f.file_name for f in src.files}
    assert BitMap64(zero)


def test_bitmap_global_index_in_java_tables_agrees_with_the_data(conformance):
    """``warehouses/*/append_with_global_index*``: Java bitmap global indexes on f0, f1, f2."""
    import indexcore
    from indexcore.warehouse.data import read_table

    checked = 0
    for root in ("parquet", "orc"):
        wh_path = conformance / "warehouses" / root
        if not (wh_path / "append_with_global_index.db").is_dir():
            continue
        wh = indexcore.open_warehouse(str(wh_path))
        for name in ("append_with_global_index.append_with_global_index",
                     "append_with_global_index_with_partition.append_with_global_index_with_partition"):
            table = wh.table(name)
            rows = read_table(table).to_pylist()
            for gif in global_index_files(table):
                reader = open_reader(table, gif)
                lo, hi = gif.row_range
                part = gif.entry.partition
                keys = table.schema().partition_keys
                scoped = [r for r in rows if tuple(r[k] for k in keys) == tuple(part)] if keys else rows
                assert hi - lo + 1 == len(scoped)
                column = gif.field.name
                for value in {r[column] for r in scoped if r[column] is not None}:
                    want = {i for i, r in enumerate(scoped) if r[column] == value}
                    assert set(reader.visit(Leaf("equal", column, (value,)))) == want, (name, column, value)
                assert set(reader.null_rows) == {i for i, r in enumerate(scoped) if r[column] is None}
                checked += 1
    if not checked:
        pytest.skip("no warehouses/*/append_with_global_index tables")


# counts from paimon-cpp global_index_test.cpp TestBTreeScanWithPartitionWithMultiMeta
BTREE_SCAN_COUNTS = [("col_int = 15", 2), ("col_int = 100", 0), ("col_int > 30", 18), ("col_int > 57", 0),
                     ("col_boolean = true", 20), ("col_boolean = false", 20), ("col_double = 11.0", 2),
                     ("col_double > 22.0", 18), ("col_date > DATE '2019-04-24'", 18), ("col_date = DATE '2019-04-19'", 2)]


@pytest.mark.parametrize("fmt", ["orc", "parquet"])
def test_explain_global_index_stage_matches_paimon_cpp(external, fmt):
    from indexcore.expr import parse_where
    from indexcore.scan import explain
    from indexcore.scan.global_index import global_index_scan

    root = external / f"paimon-cpp/{fmt}/append_with_btree_with_partition.db/append_with_btree_with_partition"
    storage = Storage(str(root))
    table = Table(storage, storage.root, root.name)
    dates = {r["col_date"] for r in __import__("indexcore.warehouse.data", fromlist=["read_table"])
             .read_table(table).to_pylist()}
    assert len(dates) == 20  # 18000 + i: DATE '2019-04-24' is 18010
    for sql, count in BTREE_SCAN_COUNTS:
        scan = global_index_scan(table, parse_where(sql, table.schema().row_type()))
        assert scan is not None and len(scan.rows) == count, sql
        result = explain(table, sql, verify=True)
        assert result.funnel["global_index"]["rows"] == count, sql
        assert result.funnel["matching"]["rows"] == count and not result.violations, sql
        assert all((f.global_index_decision == "SKIP") == (f.global_index_rows == 0) for f in result.files)
    # an OR with a leaf matching every row keeps every row
    both = explain(table, "col_int = 15 OR col_string <> 'zzz'", verify=True)
    assert both.funnel["global_index"]["rows"] == 40 and not both.violations


def test_explain_cli_verify_global_index(external):
    root = external / "paimon-cpp/orc/append_with_btree_with_partition.db"
    proc = subprocess.run([sys.executable, "-m", "indexcore", "explain", str(root.parent),
                           "append_with_btree_with_partition.append_with_btree_with_partition",
                           "--where", "col_int > 30 AND col_string = 'str_00012'", "--verify", "--format", "json"],
                          cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["violations"] == [] and out["funnel"]["global_index"]["rows"] == out["funnel"]["matching"]["rows"] == 2
    assert {f["global_index_decision"] for f in out["files"]} <= {"REMAIN", "SKIP"}


def test_global_index_views_list_every_index_file_and_cover_the_table(external):
    """``$global_indexes`` has one row per BTree entry of ``$table_indexes``; coverage has no gap."""
    import indexcore
    from indexcore.views import view

    wh = indexcore.open_warehouse(str(external / "paimon-cpp" / "orc"))
    table = wh.table("append_with_btree_with_partition.append_with_btree_with_partition")
    listed = view(table, "$table_indexes").to_pylist()
    globals_ = view(table, "$global_indexes").to_pylist()
    assert sorted(r["file"] for r in globals_) == sorted(
        r["file_name"] for r in listed if r["index_type"] == "btree")
    assert all(r["row_range_end"] - r["row_range_start"] + 1 >= r["rows"] > 0 for r in globals_)
    coverage = view(table, "$global_index_coverage").to_pylist()
    int_cover = [r for r in coverage if r["field"] == "col_int"]
    assert int_cover and {r["status"] for r in int_cover} == {"indexed"}
    assert sum(r["rows"] for r in int_cover) == 40


def test_global_index_files_and_row_ranges_from_the_columnar_plan(external):
    """Without an object plan kept, the global index files and the table's row ranges come from the
    columnar plan (no object per data file) and equal those from the object plan."""
    from indexcore.analysis.coverage import table_row_ranges

    with_ranges = listed = 0
    for root in _tables_with_index(external):
        storage = Storage(str(root))
        table = Table(storage, storage.root, root.name)
        for sid in [None, *([2] if root.name == "pk_btree" else [])]:
            snap = table.snapshot(sid)
            if snap is None:
                continue
            columnar = [(g.path, g.entry, g.field) for g in global_index_files(table, sid)]
            ranges = table_row_ranges(table, sid)
            assert table.caches.plans.get(snap.id) is None  # no object plan was made
            table.plan(sid)
            assert [(g.path, g.entry, g.field) for g in global_index_files(table, sid)] == columnar
            assert table_row_ranges(table, sid) == ranges
            with_ranges += bool(ranges)  # row-tracking tables (a primary-key table has no row ids)
            listed += len(columnar)
    assert with_ranges and listed
