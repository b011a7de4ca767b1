"""BSI index against Paimon's golden vectors: every leaf predicate, byte-identical writer
output, summaries, and corrupt input."""

from __future__ import annotations

import struct

import pytest
from golden_vectors import leaf_of, load, normalize, pick, values_of, vector_ids
from hypothesis import given, settings
from hypothesis import strategies as st

from indexcore.errors import CorruptFileError, UnsupportedError
from indexcore.expr import Leaf
from indexcore.formats.bsi import BsiReader, BsiWriter
from indexcore.io import BytesSource
from indexcore.types import parse_type, to_json_value, to_long

IDS = vector_ids("bsi__*.json")


@pytest.mark.parametrize("vid", IDS)
def test_leaf_predicates_match_paimon(golden, vid):
    vec, dtype, data = load(golden, vid)
    reader = BsiReader(dtype, BytesSource(data, vec["bin_file"]), vec["options"])
    leaves = [p for p in vec["predicates"] if p["predicate"]["op"] not in ("and", "or")]
    assert leaves
    for p in leaves:
        got = normalize(reader.visit(leaf_of(dtype, p["predicate"])))
        assert got == normalize(p["result"]), p["id"]


@pytest.mark.parametrize("vid", IDS)
def test_writer_is_byte_identical(golden, vid):
    vec, dtype, data = load(golden, vid)
    writer = BsiWriter(dtype, vec["options"])
    for value in values_of(vec, dtype):
        writer.write(value)
    assert writer.empty == vec["writer_empty"]
    assert writer.serialized_bytes() == data


@pytest.mark.parametrize("vid", IDS)
def test_summary_matches_the_written_values(golden, vid):
    vec, dtype, data = load(golden, vid)
    summary = BsiReader(dtype, BytesSource(data), {}).summary()
    values = values_of(vec, dtype)
    present = sorted((v for v in values if v is not None), key=lambda v: to_long(dtype, v))
    assert summary["row_count"] == vec["row_count"]
    assert summary["null_count"] == len(values) - len(present)
    bounds = (to_json_value(dtype, present[0]), to_json_value(dtype, present[-1])) if present else (None, None)
    if dtype.root in ("TIMESTAMP", "TIMESTAMP_LTZ") and (dtype.precision or 0) > 6:
        return  # the index keys TIMESTAMP(9) by microseconds, so the nanos are not in it
    assert (summary["min"], summary["max"]) == bounds


def test_truncated_input_is_corrupt(golden):
    vec, dtype, data = load(golden, pick(golden, "bsi__int__somenull", "bsi__dec10_2__edge", "bsi__int__edge"))
    for cut in range(len(data)):
        with pytest.raises(CorruptFileError) as info:
            BsiReader(dtype, BytesSource(data[:cut], "blob"), {})
        assert info.value.file == "blob" and info.value.offset is not None and info.value.structure
    with pytest.raises(CorruptFileError):
        BsiReader(dtype, BytesSource(data + b"\x00", "blob"), {})


def test_damaged_bitmaps_and_versions(golden):
    vec, dtype, data = load(golden, pick(golden, "bsi__int__somenull", "bsi__dec10_2__edge", "bsi__int__edge"))
    assert data[5] == 1, "vector should have a positive part"
    ebm_at = 6 + 17
    broken = data[:ebm_at] + b"\x00\x00\x00\x00" + data[ebm_at + 4:]
    with pytest.raises(CorruptFileError) as info:
        BsiReader(dtype, BytesSource(broken), {})
    assert info.value.offset == ebm_at
    with pytest.raises(UnsupportedError):
        BsiReader(dtype, BytesSource(b"\x02" + data[1:]), {})
    with pytest.raises(UnsupportedError):
        BsiWriter(parse_type("DOUBLE"))
    with pytest.raises(UnsupportedError):
        BsiWriter(parse_type("BIGINT")).write(-(1 << 63))
    negative_rows = data[:1] + struct.pack(">i", -5) + data[5:]
    with pytest.raises(CorruptFileError):
        BsiReader(dtype, BytesSource(negative_rows), {})


@settings(max_examples=40, deadline=None)
@given(st.lists(st.one_of(st.none(), st.integers(-(2 ** 63) + 1, 2 ** 63 - 1)), max_size=60),
       st.integers(-(2 ** 63), 2 ** 63 - 1))
def test_round_trip_against_brute_force(values, probe):
    dtype = parse_type("BIGINT")
    writer = BsiWriter(dtype)
    for v in values:
        writer.write(v)
    reader = BsiReader(dtype, BytesSource(writer.serialized_bytes()), {})
    checks = {"equal": lambda v: v == probe, "notEqual": lambda v: v != probe, "lessThan": lambda v: v < probe,
              "lessOrEqual": lambda v: v <= probe, "greaterThan": lambda v: v > probe,
              "greaterOrEqual": lambda v: v >= probe}
    for op, test in checks.items():
        expected = [i for i, v in enumerate(values) if v is not None and test(v)]
        assert normalize(reader.visit(Leaf(op, "c", (probe,)))) == (expected or "SKIP"), op
    assert normalize(reader.visit(Leaf("notBetween", "c", (probe, probe)))) == "REMAIN"


def test_a_lookup_decodes_only_the_part_it_needs(monkeypatch) -> None:
    """Without the C decoder (tests/test_bsi_native.py covers it), a BSI reader finds each bitmap's
    extent at open but deserializes a part's bitmaps only when a predicate needs them: a min/max
    shortcut decodes nothing, a lookup of a positive key never the negative part, and the answers
    stay the rows written."""
    from indexcore.formats import bsi

    monkeypatch.setattr(bsi, "_roaring_rows", None)
    dtype = parse_type("BIGINT")
    values = [v * 7 - 300 for v in range(200)] + [None]
    writer = BsiWriter(dtype)
    for v in values:
        writer.write(v)
    reader = BsiReader(dtype, BytesSource(writer.serialized_bytes()), {})
    pos, neg = reader.positive, reader.negative
    assert pos._slices is None and neg._slices is None and pos._ebm is None
    assert reader.visit(Leaf("greaterThan", "c", (10**9,))).remain() is False
    assert pos._slices is None and neg._slices is None
    assert set(reader.visit(Leaf("equal", "c", (700,))).bitmap) == {i for i, v in enumerate(values) if v == 700}
    assert pos._slices is not None and neg._slices is None
    assert set(reader.visit(Leaf("lessThan", "c", (-100,))).bitmap) == {
        i for i, v in enumerate(values) if v is not None and v < -100}
    assert reader.summary()["slice_count"] == len(pos.slices) + len(neg.slices)
