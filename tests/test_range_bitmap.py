"""Range-bitmap index against Paimon's golden vectors: every leaf predicate, every TopN case,
byte-identical writer output, summaries, and corrupt input."""

from __future__ import annotations

import math
import struct

import pytest
from golden_vectors import leaf_of, load, normalize, pick, values_of, vector_ids
from hypothesis import given, settings
from hypothesis import strategies as st
from pyroaring import BitMap

from indexcore.errors import CorruptFileError, IndexCoreError, UnsupportedError
from indexcore.expr import Leaf
from indexcore.formats.base import REMAIN, SKIP, BitmapResult, parse_memory_size
from indexcore.formats.range_bitmap.reader import RangeBitmapReader
from indexcore.formats.range_bitmap.writer import RangeBitmapWriter
from indexcore.io import BytesSource
from indexcore.types import from_json, parse_type, to_json_value

IDS = vector_ids("range_bitmap*.json")


@pytest.mark.parametrize("vid", IDS)
def test_leaf_predicates_match_paimon(golden, vid):
    vec, dtype, data = load(golden, vid)
    reader = RangeBitmapReader(dtype, BytesSource(data, vec["bin_file"]), vec["options"])
    leaves = [p for p in vec["predicates"] if p["predicate"]["op"] not in ("and", "or")]
    assert leaves
    for p in leaves:
        got = normalize(reader.visit(leaf_of(dtype, p["predicate"])))
        assert got == normalize(p["result"]), p["id"]


@pytest.mark.parametrize("vid", IDS)
def test_top_n_matches_paimon(golden, vid):
    vec, dtype, data = load(golden, vid)
    topn = vec.get("topn")
    if not topn:
        pytest.skip("vector has no TopN cases")
    reader = RangeBitmapReader(dtype, BytesSource(data), vec["options"])
    filtered = topn.get("filter", {}).get("result")
    for case in topn["cases"]:
        if case["input"] == "REMAIN":
            incoming = REMAIN
        elif filtered in ("REMAIN", "SKIP"):
            incoming = REMAIN if filtered == "REMAIN" else SKIP
        else:
            incoming = BitmapResult(BitMap(filtered))
        got = reader.visit_top_n(case["k"], case["direction"] == "ASC", case["nulls"] == "FIRST",
                                 case["strict"], incoming)
        assert normalize(got) == normalize(case["result"]), case


@pytest.mark.parametrize("vid", IDS)
def test_writer_is_byte_identical(golden, vid):
    vec, dtype, data = load(golden, vid)
    writer = RangeBitmapWriter(dtype, vec["options"])
    for value in values_of(vec, dtype):
        writer.write(value)
    assert writer.empty == vec["writer_empty"]
    assert writer.serialized_bytes() == data


@pytest.mark.parametrize("vid", IDS)
def test_summary_matches_the_written_values(golden, vid):
    vec, dtype, data = load(golden, vid)
    summary = RangeBitmapReader(dtype, BytesSource(data), vec["options"]).summary()
    values = values_of(vec, dtype)
    present = [v for v in values if v is not None]
    assert summary["row_count"] == vec["row_count"]
    assert summary["null_count"] == len(values) - len(present)
    assert sum(t["cardinality"] for t in summary["top_values"]) <= len(present)
    if present and len(summary["top_values"]) == summary["dictionary_size"]:
        assert sum(t["cardinality"] for t in summary["top_values"]) == len(present)
    if dtype.root not in ("FLOAT", "DOUBLE", "CHAR", "VARCHAR"):
        keys = sorted({to_json_value(dtype, v) for v in present}, key=lambda v: from_json(dtype, v))
        assert summary["dictionary_size"] == len(keys)
        assert (summary["min"], summary["max"]) == ((keys[0], keys[-1]) if keys else (None, None))
    assert sum(summary["chunk_key_counts"]) == summary["dictionary_size"]


def test_reads_lazily(golden):
    vid = pick(golden, "range_bitmap_chunk64__string__highcard", "range_bitmap_chunk64__char10__highcard")
    vec, dtype, data = load(golden, vid)
    source = BytesSource(data)
    reader = RangeBitmapReader(dtype, source, vec["options"])
    eq = next(p for p in vec["predicates"] if p["id"] == "eq_mid")
    assert normalize(reader.visit(leaf_of(dtype, eq["predicate"]))) == normalize(eq["result"])
    keys_area = reader.bsi_offset - reader.dictionary.keys_base
    assert keys_area > 10_000
    assert source.stats.bytes_read <= len(data) - keys_area + 2 * 64

    source = BytesSource(data)
    reader = RangeBitmapReader(dtype, source, vec["options"])
    reader.visit(Leaf("isNull", "c"))
    assert reader._dictionary is None
    assert source.stats.bytes_read < reader.bsi_offset - reader.dictionary_offset


def test_options_and_types():
    assert parse_memory_size("16kb") == 16384
    assert parse_memory_size("64b") == 64
    assert parse_memory_size("0b") == 0
    with pytest.raises(UnsupportedError):
        RangeBitmapWriter(parse_type("TIMESTAMP(9)"))
    with pytest.raises(UnsupportedError):
        RangeBitmapWriter(parse_type("DECIMAL(20, 4)"))
    with pytest.raises(UnsupportedError):
        RangeBitmapWriter(parse_type("INT"), {"chunk-size": "lots"})


def _full_read(reader: RangeBitmapReader, dtype) -> None:
    reader.summary()
    for op in ("equal", "lessThan", "greaterThan"):
        reader.visit(Leaf(op, "c", (reader.codec.to_value(reader.max_raw),)))


@pytest.mark.parametrize("vid", ["range_bitmap_chunk64__string__unique", "range_bitmap__int__lowcard",
                                 "range_bitmap_chunk64__double__edge"])
def test_truncated_input_is_corrupt(golden, vid):
    vec, dtype, data = load(golden, pick(golden, vid))
    for cut in range(0, len(data), max(1, len(data) // 97)):
        with pytest.raises(CorruptFileError) as info:
            _full_read(RangeBitmapReader(dtype, BytesSource(data[:cut], "blob"), {}), dtype)
        assert info.value.file == "blob" and info.value.offset is not None and info.value.structure


def test_damaged_lengths_and_bitmaps_are_corrupt(golden):
    vid = pick(golden, "range_bitmap__int__somenull", "range_bitmap__int__lowcard", "range_bitmap__date__somenull")
    vec, dtype, data = load(golden, vid)
    huge_header = struct.pack(">i", 0x7FFFFFF0) + data[4:]
    with pytest.raises(CorruptFileError):
        RangeBitmapReader(dtype, BytesSource(huge_header), {})
    head_len = struct.unpack(">i", data[:4])[0]
    dict_len_at = 4 + head_len - 4
    big_dict = data[:dict_len_at] + struct.pack(">i", 0x7FFFFFF0) + data[dict_len_at + 4:]
    with pytest.raises(CorruptFileError):
        RangeBitmapReader(dtype, BytesSource(big_dict), {})
    reader = RangeBitmapReader(dtype, BytesSource(data), {})
    ebm_at = reader.bsi.body
    broken = bytearray(data)
    broken[ebm_at:ebm_at + 4] = b"\xff\xff\xff\xff"
    with pytest.raises(CorruptFileError) as info:
        RangeBitmapReader(dtype, BytesSource(bytes(broken)), {}).visit(Leaf("isNotNull", "c"))
    assert info.value.offset == ebm_at
    newer = data[:4] + b"\x02" + data[5:]
    with pytest.raises(UnsupportedError):
        RangeBitmapReader(dtype, BytesSource(newer), {})


def _java_order(dtype, v):
    if dtype.root == "DOUBLE":
        return (1, 0.0, 0) if math.isnan(v) else (0, v, 0 if math.copysign(1.0, v) < 0 else 1)
    return v.encode("utf-8") if isinstance(v, str) else v


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(["INT", "DOUBLE", "STRING"]), st.data())
def test_round_trip_against_brute_force(type_name, data):
    dtype = parse_type(type_name)
    elems = {"INT": st.integers(-(2 ** 31), 2 ** 31 - 1),
             "DOUBLE": st.sampled_from([0.0, -0.0, 1.5, -2.25, math.inf, -math.inf, math.nan, 7.0]),
             "STRING": st.text(max_size=6)}[type_name]
    values = data.draw(st.lists(st.one_of(st.none(), elems), max_size=80))
    chunk = data.draw(st.sampled_from(["0b", "16b", "64b", "16kb"]))
    writer = RangeBitmapWriter(dtype, {"chunk-size": chunk})
    for v in values:
        writer.write(v)
    try:
        reader = RangeBitmapReader(dtype, BytesSource(writer.serialized_bytes()), {})
    except IndexCoreError as exc:  # pragma: no cover - a failure to read our own bytes
        pytest.fail(str(exc))
    probe = data.draw(elems)
    key = _java_order(dtype, probe)
    checks = {"equal": lambda k: k == key, "notEqual": lambda k: k != key, "lessThan": lambda k: k < key,
              "lessOrEqual": lambda k: k <= key, "greaterThan": lambda k: k > key,
              "greaterOrEqual": lambda k: k >= key}
    for op, test in checks.items():
        expected = [i for i, v in enumerate(values) if v is not None and test(_java_order(dtype, v))]
        assert normalize(reader.visit(Leaf(op, "c", (probe,)))) == (expected or "SKIP"), op
    nulls = [i for i, v in enumerate(values) if v is None]
    assert normalize(reader.visit(Leaf("isNull", "c"))) == (nulls or "SKIP")


def _string_blob(chunk: str = "64b") -> tuple[object, bytes, list[str]]:
    dtype = parse_type("STRING")
    words = [f"key-{i:04d}" for i in range(300)]
    writer = RangeBitmapWriter(dtype, {"chunk-size": chunk})
    for i in range(600):
        writer.write(None if i % 7 == 0 else words[(i * 37) % len(words)])
    return dtype, writer.serialized_bytes(), words


@pytest.mark.parametrize("vid", ["range_bitmap_chunk64__string__highcard", "range_bitmap__string__highcard",
                                 "range_bitmap_chunk64__bigint__highcard", "range_bitmap__int__unique"])
def test_dictionary_find_and_raw_key_agree_on_every_code(golden, vid):
    """Keys decoded one probe at a time: every code round-trips, and absent keys get insertion points."""
    vec, dtype, data = load(golden, pick(golden, vid))
    reader = RangeBitmapReader(dtype, BytesSource(data), vec["options"])
    dictionary, order = reader.dictionary, reader.codec.order
    raws = [dictionary.raw_key(code) for code in range(reader.cardinality)]
    assert [order(r) for r in raws] == sorted(order(r) for r in raws)
    assert (raws[0], raws[-1]) == (reader.min_raw, reader.max_raw)
    for code, raw in enumerate(raws):
        assert dictionary.find(order(raw)) == code
    if dtype.root in ("CHAR", "VARCHAR"):
        for code, raw in enumerate(raws):
            assert dictionary.find(raw + b"\x00") == -(code + 1) - 1
    else:
        for code, raw in enumerate(raws[:-1]):
            if raws[code + 1] - raw > 1:
                assert dictionary.find(raw + 1) == -(code + 1) - 1


def test_damaged_variable_keys_are_corrupt_when_probed():
    dtype, data, words = _string_blob()
    reader = RangeBitmapReader(dtype, BytesSource(data), {})
    dictionary = reader.dictionary
    index = dictionary.size // 2
    chunk = dictionary._chunk(index)
    assert chunk.size > 0
    where = dictionary.keys_base + chunk.offset
    probe = Leaf("greaterThan", "c", (words[len(words) // 2],))

    bad_offsets = bytearray(data)
    bad_offsets[where:where + 4 * chunk.size] = struct.pack(">i", 0x7FFFFFFF) * chunk.size
    with pytest.raises(CorruptFileError) as info:
        _probe_every_key(RangeBitmapReader(dtype, BytesSource(bytes(bad_offsets), "blob"), {}), words)
    assert info.value.file == "blob" and "keys" in info.value.structure
    assert where <= info.value.offset < where + chunk.lengths[0] + chunk.lengths[1]

    bad_lengths = bytearray(data)
    keys_at = where + chunk.lengths[0]
    for off in struct.unpack_from(f">{chunk.size}i", data, where):
        bad_lengths[keys_at + off:keys_at + off + 4] = struct.pack(">i", 0x7FFFFFF0)
    with pytest.raises(CorruptFileError) as info:
        _probe_every_key(RangeBitmapReader(dtype, BytesSource(bytes(bad_lengths), "blob"), {}), words)
    assert keys_at <= info.value.offset < keys_at + chunk.lengths[1]
    assert normalize(RangeBitmapReader(dtype, BytesSource(data), {}).visit(probe)) != "SKIP"


def _probe_every_key(reader: RangeBitmapReader, words: list[str]) -> None:
    for word in words:
        reader.visit(Leaf("equal", "c", (word,)))


def test_negative_chunk_field_names_its_offset():
    dtype, data, words = _string_blob()
    reader = RangeBitmapReader(dtype, BytesSource(data), {})
    dictionary = reader.dictionary
    start = struct.unpack_from(">i", data, dictionary.body)[0]
    head = dictionary.body + dictionary.offsets_length + start
    head_len = struct.unpack_from(">i", data, head + 1)[0]
    size_at = head + 1 + 4 + head_len + 8        # version, head key, code, keys offset, then the size
    broken = data[:size_at] + struct.pack(">i", -3) + data[size_at + 4:]
    with pytest.raises(CorruptFileError) as info:
        _probe_every_key(RangeBitmapReader(dtype, BytesSource(broken, "blob"), {}), words)
    assert info.value.offset == size_at and info.value.structure == "dictionary chunk 0"


@pytest.mark.parametrize("field", [0, 1])
def test_damaged_slice_index_is_corrupt(field):
    dtype, data, _ = _string_blob()
    reader = RangeBitmapReader(dtype, BytesSource(data), {})
    bsi_at = reader.bsi_offset
    assert reader.bsi.slice_count > 3
    pair_at = bsi_at + 14 + 8 * 3
    broken = data[:pair_at + 4 * field] + struct.pack(">i", -1) + data[pair_at + 4 * field + 4:]
    with pytest.raises(CorruptFileError) as info:
        RangeBitmapReader(dtype, BytesSource(broken, "blob"), {}).visit(Leaf("greaterThan", "c", ("key-0100",)))
    assert info.value.offset == pair_at and info.value.structure == "bsi indexes"
