"""Bitmap file index (V1 and V2) against Paimon's golden vectors and 100k-row conformance blobs."""

from __future__ import annotations

import json
from pathlib import Path

import fsspec
import pytest
from pyroaring import BitMap

from indexcore.errors import CorruptFileError, UnsupportedError
from indexcore.expr import Leaf
from indexcore.formats.base import BitmapResult, parse_memory_size
from indexcore.formats.bitmap import meta as bitmap_meta
from indexcore.formats.bitmap.reader import BitmapReader
from indexcore.formats.bitmap.writer import BitmapWriter
from indexcore.formats.registry import new_writer, open_reader
from indexcore.io import BytesSource, FileSource
from indexcore.types import from_json, parse_type

GOLDEN_SINGLE = Path(__file__).resolve().parent.parent.parent / "shared" / "conformance" / "golden" / "single"
BITMAP_IDS = sorted(p.stem for p in GOLDEN_SINGLE.glob("bitmap_*.json")) if GOLDEN_SINGLE.is_dir() else []
STRING = parse_type("STRING")


def _load(golden: Path, vid: str):
    vec = json.loads((golden / "single" / f"{vid}.json").read_text())
    assert vec["index_type"] == "bitmap"
    data = (golden / "single" / vec["bin_file"]).read_bytes()
    return vec, parse_type(vec["column"]["type"]), data


def _values(vec: dict, dtype) -> list:
    raws = vec.get("values_raw") or [None] * len(vec["values"])
    return [from_json(dtype, v, r) for v, r in zip(vec["values"], raws, strict=True)]


def _rows(result) -> object:
    """A result as the golden JSON spells it; an empty bitmap is SKIP."""
    if isinstance(result, BitmapResult):
        return sorted(result.bitmap) or "SKIP"
    return result.name


def _expected(result) -> object:
    return "SKIP" if result == [] else result


@pytest.mark.parametrize("vid", BITMAP_IDS or ["<no golden vectors>"])
def test_golden_predicates_and_dictionary(golden: Path, vid: str):
    vec, dtype, data = _load(golden, vid)
    reader = open_reader("bitmap", dtype, BytesSource(data, vid), vec["options"])
    leaves = [p for p in vec["predicates"] if p["predicate"]["op"] not in ("and", "or")]
    assert leaves
    for p in leaves:
        pred = p["predicate"]
        raws = pred.get("literals_raw") or [None] * len(pred["literals"])
        literals = tuple(from_json(dtype, lit, raw) for lit, raw in zip(pred["literals"], raws, strict=True))
        got = reader.visit(Leaf(pred["op"], "c", literals))
        assert _rows(got) == _expected(p["result"]), p["id"]
        assert got.remain() == p["remain"], p["id"]
        if pred["op"] == "equal":
            # a fresh reader reads exactly what lookup_bytes reports: head, V2's block, the bitmap
            source = BytesSource(data, vid)
            fresh = BitmapReader(dtype, source, vec["options"])
            fresh.visit(Leaf("equal", "c", literals))
            assert source.stats.bytes_read == fresh.lookup_bytes(literals[0]) <= len(data)
            if fresh.version == 2 and literals[0] is not None:
                biggest_block = max((b.size for b in fresh.meta.blocks), default=0)
                entry = fresh.find_entry(fresh.codec.key(literals[0]))
                bitmap = entry.length if entry is not None and entry.offset >= 0 else 0
                assert source.stats.bytes_read <= fresh.meta.head_size + biggest_block + bitmap

    decoded = vec.get("decoded_dictionary")
    if decoded is not None:
        for e in decoded:
            if e["value"] is None:
                assert sorted(reader.null_bitmap()) == e["rows"]
            else:
                value = from_json(dtype, e["value"], e.get("value_raw"))
                assert sorted(reader.bitmap_for(value)) == e["rows"], e["value"]
        # the dictionary lists the same keys in the same (ascending) order, with cardinalities;
        # input values that share a key (TIMESTAMP(9) within one microsecond) share its rows
        listed = list(reader.dictionary())
        expected = list({tuple(e["rows"]): e for e in decoded if e["value"] is not None}.values())
        assert [card for _, card in listed] == [len(e["rows"]) for e in expected]
        for (value, _), e in zip(listed, expected, strict=True):
            assert sorted(reader.bitmap_for(value)) == e["rows"]

    values = _values(vec, dtype)
    summary = reader.summary()
    assert summary["version"] == int(vec["options"].get("version", 2))
    assert summary["row_count"] == vec["row_count"] == len(values)
    assert summary["null_count"] == sum(v is None for v in values)


@pytest.mark.parametrize("vid", BITMAP_IDS or ["<no golden vectors>"])
def test_golden_writer_is_byte_identical(golden: Path, vid: str):
    vec, dtype, data = _load(golden, vid)
    writer = new_writer("bitmap", dtype, vec["options"])
    for v in _values(vec, dtype):
        writer.write(v)
    assert writer.empty == vec["writer_empty"]
    assert writer.serialized_bytes() == data


def test_golden_covers_all_bitmap_configs():
    if not BITMAP_IDS:
        pytest.skip(f"golden vectors not found at {GOLDEN_SINGLE}")
    configs = {vid.split("__")[0] for vid in BITMAP_IDS}
    assert configs == {"bitmap_v1", "bitmap_v2", "bitmap_v2_blk256"}


@pytest.mark.parametrize("version", [1, 2])
def test_conformance_100k_string(conformance: Path, version: int):
    path = conformance / "file_index" / f"bitmap-index-v{version}"
    expected = json.loads((conformance / "file_index" / "expected.json").read_text())["equal"]
    for value, rows in expected.items():
        source = FileSource(fsspec.filesystem("file"), str(path))
        reader = BitmapReader(STRING, source, {})
        assert sorted(reader.visit(Leaf("equal", "c", (value,))).bitmap) == rows
        assert reader.version == version
        meta = reader.meta
        entry = reader.find_entry(value.encode())
        assert entry is not None and entry.offset >= 0
        if version == 2:
            # the head, the one index block holding the value, and that bitmap: nothing else
            block = max((b for b in meta.blocks if b.first_key <= value.encode()), key=lambda b: b.offset)
            bound = meta.head_size + block.size + entry.length
            assert source.stats.bytes_read <= bound
            assert source.stats.bytes_read < source.size // 20
        else:
            # V1 reads the whole dictionary, then only the bitmap
            assert source.stats.bytes_read <= meta.body_start + entry.length
        assert source.stats.bytes_read == reader.lookup_bytes(value)


def test_conformance_v1_and_v2_agree(conformance: Path):
    def dictionary(version: int):
        data = (conformance / "file_index" / f"bitmap-index-v{version}").read_bytes()
        return BitmapReader(STRING, BytesSource(data), {})

    v1, v2 = dictionary(1), dictionary(2)
    d1 = list(v1.dictionary())
    assert d1 == list(v2.dictionary())
    assert sum(c for _, c in d1) == v1.row_count == 100_000
    s2 = v2.summary()
    assert s2["block_count"] == len(s2["blocks"]) > 1
    assert sum(b["entries"] for b in s2["blocks"]) == s2["dictionary_size"] == len(d1)


def test_writer_round_trip_unique_rows():
    writer = BitmapWriter(parse_type("INT"), {"version": "2", "index-block-size": "64b"})
    values = [i % 7 if i % 11 else None for i in range(500)] + [1000, None, 1001]
    for v in values:
        writer.write(v)
    reader = BitmapReader(parse_type("INT"), BytesSource(writer.serialized_bytes()), {})
    assert reader.summary()["block_count"] > 1
    for target in (0, 3, 6, 1000, 1001, None, 99):
        assert sorted(reader.bitmap_for(target)) == [i for i, v in enumerate(values) if v == target]
    not_equal = reader.visit(Leaf("notEqual", "c", (3,)))
    assert sorted(not_equal.bitmap) == [i for i, v in enumerate(values) if v != 3]
    assert reader.visit(Leaf("lessThan", "c", (3,))).name == "REMAIN"


def test_decimal_and_binary_are_refused():
    for text in ("DECIMAL(10, 2)", "BYTES", "ARRAY<INT>"):
        with pytest.raises(UnsupportedError):
            BitmapWriter(parse_type(text), {})
        with pytest.raises(UnsupportedError):
            BitmapReader(parse_type(text), BytesSource(b"\x02"), {})


def test_key_too_large_for_block_fails_like_paimon():
    writer = BitmapWriter(STRING, {"index-block-size": "256b"})
    writer.write("x" * 300)
    with pytest.raises(UnsupportedError, match="index fail"):
        writer.serialized_bytes()


def test_memory_size():
    assert parse_memory_size("16kb") == 16384
    assert parse_memory_size("256b") == 256
    assert parse_memory_size("1 MB") == 1 << 20


def _sample_blob(version: int) -> bytes:
    writer = BitmapWriter(STRING, {"version": str(version), "index-block-size": "64b"})
    for i in range(300):
        writer.write(None if i % 13 == 0 else f"value-{i % 17}")
    return writer.serialized_bytes()


@pytest.mark.parametrize("version", [1, 2])
def test_truncated_file_is_corrupt(version: int):
    blob = _sample_blob(version)
    full = BitmapReader(STRING, BytesSource(blob), {})
    for cut in (1, 5, 12, 30, len(blob) // 2, len(blob) - 3):
        reader = BitmapReader(STRING, BytesSource(blob[:cut], name="cut.index"), {})
        with pytest.raises(CorruptFileError) as info:
            for value, _ in full.dictionary():
                reader.visit(Leaf("equal", "c", (value,)))
            reader.visit(Leaf("isNull", "c", ()))
        err = info.value
        assert err.file == "cut.index" and err.structure and err.offset is not None


@pytest.mark.parametrize("version_byte,error", [(0, CorruptFileError), (3, UnsupportedError),
                                                (255, UnsupportedError)])
def test_bad_version(version_byte: int, error: type):
    blob = bytearray(_sample_blob(2))
    blob[0] = version_byte
    reader = BitmapReader(STRING, BytesSource(bytes(blob), name="bad.index"), {})
    with pytest.raises(error) as info:
        reader.visit(Leaf("equal", "c", ("value-1",)))
    assert info.value.offset == 0


def test_huge_declared_lengths_are_corrupt_not_allocated():
    # V2 head with a block count far beyond the file
    blob = bytes([2]) + (10).to_bytes(4, "big") + (3).to_bytes(4, "big") + b"\x00" + (2**31 - 1).to_bytes(4, "big")
    with pytest.raises(CorruptFileError, match="index blocks"):
        BitmapReader(STRING, BytesSource(blob, "huge"), {}).visit(Leaf("equal", "c", ("a",)))
    # V1 dictionary whose first string claims 2 GB
    blob = bytes([1]) + (10).to_bytes(4, "big") + (1).to_bytes(4, "big") + b"\x00" + (2**31 - 1).to_bytes(4, "big")
    blob += bytes(8)
    with pytest.raises(CorruptFileError, match="string length") as info:
        BitmapReader(STRING, BytesSource(blob, "huge"), {}).visit(Leaf("equal", "c", ("a",)))
    assert info.value.offset == 10


def test_garbage_bitmap_is_corrupt():
    writer = BitmapWriter(parse_type("INT"), {})
    for i in range(100):
        writer.write(i % 3)
    blob = bytearray(writer.serialized_bytes())
    reader = BitmapReader(parse_type("INT"), BytesSource(bytes(blob)), {})
    entry = reader.find_entry(1)
    blob[reader.meta.body_start + entry.offset:reader.meta.body_start + entry.offset + 4] = b"\xff" * 4
    broken = BitmapReader(parse_type("INT"), BytesSource(bytes(blob), "garbage"), {})
    with pytest.raises(CorruptFileError, match="RoaringBitmap"):
        broken.bitmap_for(1)
    assert broken.bitmap_for(0) == BitMap(range(0, 100, 3))


@pytest.mark.parametrize("version", [1, 2])
def test_key_bytes_inside_other_entries_are_not_matches(version: int):
    # the lookup compares serialized key bytes; a match must begin an entry, not lie inside one
    inner = "b"
    outer = "zz" + (1).to_bytes(4, "big").decode() + inner   # holds the 5 bytes that encode "b"
    values = [outer, outer, "c", "c", outer]
    writer = BitmapWriter(STRING, {"version": str(version)})
    for v in values:
        writer.write(v)
    reader = BitmapReader(STRING, BytesSource(writer.serialized_bytes()), {})
    assert sorted(reader.bitmap_for(inner)) == []
    assert sorted(reader.bitmap_for(outer)) == [0, 1, 4]
    # INT keys whose value equals a bitmap offset in the dictionary
    writer = BitmapWriter(parse_type("INT"), {"version": str(version)})
    ints = [1000, 2000, 1000, 2000, 3000]
    for v in ints:
        writer.write(v)
    reader = BitmapReader(parse_type("INT"), BytesSource(writer.serialized_bytes()), {})
    offsets = {e.offset for e in reader.entries()}
    for probe in offsets | {1000, 2000, 3000}:
        assert sorted(reader.bitmap_for(probe)) == [i for i, v in enumerate(ints) if v == probe]


def test_v1_key_listed_twice_maps_to_its_last_entry():
    # Paimon reads the V1 dictionary into a map, so a repeated key keeps the later offset
    entry = (1).to_bytes(4, "big") + b"a"
    blob = bytes([1]) + (3).to_bytes(4, "big") + (2).to_bytes(4, "big") + b"\x00"
    blob += entry + (-1 - 0).to_bytes(4, "big", signed=True) + entry + (-1 - 2).to_bytes(4, "big", signed=True)
    reader = BitmapReader(STRING, BytesSource(blob), {})
    assert sorted(reader.bitmap_for("a")) == [2]


def test_negative_key_length_in_index_block_is_corrupt():
    blob = bytearray(_sample_blob(2))
    reader = BitmapReader(STRING, BytesSource(bytes(blob)), {})
    block = reader.meta.blocks[-1]
    at = reader.meta.index_block_start + block.offset + 4   # the first entry's key length
    blob[at:at + 4] = (-5).to_bytes(4, "big", signed=True)
    broken = BitmapReader(STRING, BytesSource(bytes(blob), "neg.index"), {})
    with pytest.raises(CorruptFileError, match="negative string length") as info:
        broken.find_entry(block.first_key)
    assert info.value.structure == "bitmap index block" and info.value.offset == at


def test_file_source_reads_the_same_with_and_without_kept_descriptors(conformance: Path, monkeypatch):
    from indexcore.io.source import DESCRIPTORS_KEPT, Descriptors

    path = str(conformance / "file_index" / "bitmap-index-v2")
    value = next(iter(json.loads((conformance / "file_index" / "expected.json").read_text())["equal"]))
    results = []
    for limit in (DESCRIPTORS_KEPT, 0):
        source = FileSource(fsspec.filesystem("file"), path, descriptors=Descriptors(limit))
        assert (source._fd is not None) == (limit > 0)
        rows = sorted(BitmapReader(STRING, source, {}).visit(Leaf("equal", "c", (value,))).bitmap)
        results.append((rows, source.stats.snapshot()))
        source.close()
    assert results[0] == results[1] and results[0][0]


@pytest.mark.parametrize("version", ["1", "2"])
def test_walked_entry_starts_are_reused_only_for_the_same_bytes(version: str):
    """Readers opened again on one blob reuse its walked V1 dictionary / V2 index block; a blob
    whose dictionary begins with the same bytes but differs further on is walked afresh, and
    every reader answers from its own blob."""
    def blob(values: list[str]) -> bytes:
        writer = BitmapWriter(STRING, {"version": version, "index-block-size": "1 mb"})
        for v in values:
            writer.write(v)
        return writer.serialized_bytes()

    common = [f"key-{i:05d}-{'x' * 20}" for i in range(600)]
    first, second = blob(common + ["zz-lasts"] * 3), blob(common + ["zz-other"] * 3)
    assert len(first) == len(second) and first[:4096] == second[:4096] and first != second
    bitmap_meta._STARTS.clear()
    for data, mine, theirs in ((first, "zz-lasts", "zz-other"), (second, "zz-other", "zz-lasts"),
                               (first, "zz-lasts", "zz-other"), (second, "zz-other", "zz-lasts")):
        for value, rows in ((mine, [600, 601, 602]), (theirs, []), (common[7], [7])):
            reader = BitmapReader(STRING, BytesSource(data), {})
            assert sorted(reader.visit(Leaf("equal", "c", (value,))).bitmap) == rows, (version, value)
    # V2: one walked block per blob, reused on every reopen; V1: the two dictionaries share their
    # first 4 KiB, so they share one slot, each proving itself by all of its bytes
    assert len(bitmap_meta._STARTS) == (1 if version == "1" else 2)
