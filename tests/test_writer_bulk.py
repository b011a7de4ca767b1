"""Bulk writer paths (``write_batch``, ``write_arrow``) give exactly the bytes of row-by-row
``write()``: on every golden vector's values (and so Paimon's bytes), and on random columns
with nulls, written in one go or mixed with single rows."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from indexcore.errors import UnsupportedError
from indexcore.formats.registry import new_writer
from indexcore.types import Timestamp, from_json, parse_type
from indexcore.write.datafile import arrow_type, internal_values

GOLDEN_SINGLE = Path(__file__).resolve().parent.parent.parent / "shared" / "conformance" / "golden" / "single"
WRITER_TYPES = ("bloom-filter", "bitmap", "bsi", "range-bitmap")
VECTOR_IDS = sorted(p.stem for p in GOLDEN_SINGLE.glob("*.json")) if GOLDEN_SINGLE.is_dir() else []


def arrow_column(values: list, dtype) -> pa.Array | None:
    """Internal values as the Arrow column the table writer would hold (None if none can)."""
    target = arrow_type(dtype)
    r = dtype.root
    if r in ("DATE", "TIME"):
        return pa.array(values, pa.int32()).cast(target)
    if r in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        unit = target.unit
        ints = [None if v is None else v.millis if unit == "ms" else v.to_micros() if unit == "us" else v.to_nanos()
                for v in values]
        if any(v is not None and not -(1 << 63) <= v < (1 << 63) for v in ints):
            return None
        return pa.array(ints, pa.int64()).cast(target)
    if r in ("CHAR", "VARCHAR") and any(v is not None and not _utf8(v) for v in values):
        return None  # lone surrogates have no Arrow string form
    return pa.array(values, target)


def row_by_row(index_type: str, dtype, options: dict, values: list) -> bytes:
    writer = new_writer(index_type, dtype, options)
    for v in values:
        writer.write(v)
    return writer.serialized_bytes()


def batched(index_type: str, dtype, options: dict, values: list) -> bytes:
    writer = new_writer(index_type, dtype, options)
    writer.write_batch(values)
    assert writer.empty == (not values)
    return writer.serialized_bytes()


def from_arrow(index_type: str, dtype, options: dict, column) -> bytes | None:
    """``write_arrow`` bytes, or None when the writer does not take this Arrow type."""
    writer = new_writer(index_type, dtype, options)
    if not writer.accepts_arrow(column.type):
        with pytest.raises(UnsupportedError):
            writer.write_arrow(column)
        return None
    writer.write_arrow(column)
    assert writer.empty == (len(column) == 0)
    return writer.serialized_bytes()


@pytest.mark.parametrize("vid", VECTOR_IDS or ["<no golden vectors>"])
def test_golden_values_bulk_equals_row_by_row(golden: Path, vid: str) -> None:
    vec = json.loads((golden / "single" / f"{vid}.json").read_text(encoding="utf-8"))
    dtype = parse_type(vec["column"]["type"])
    raws = vec.get("values_raw") or [None] * len(vec["values"])
    values = [from_json(dtype, v, r) for v, r in zip(vec["values"], raws, strict=True)]
    kind, options = vec["index_type"], vec["options"]
    expected = (golden / "single" / vec["bin_file"]).read_bytes()
    assert row_by_row(kind, dtype, options, values) == expected
    assert batched(kind, dtype, options, values) == expected
    column = arrow_column(values, dtype)
    if column is None:
        return
    arrow_values = internal_values(column, dtype)
    out = from_arrow(kind, dtype, options, column)
    if out is not None:
        assert out == row_by_row(kind, dtype, options, arrow_values)
        if _same(arrow_values, values):
            assert out == expected
        chunked = pa.chunked_array([column[:len(column) // 2], column[len(column) // 2:]], type=column.type)
        assert from_arrow(kind, dtype, options, chunked) == out


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _same(a: list, b: list) -> bool:
    def norm(v):
        return "nan" if isinstance(v, float) and math.isnan(v) else v
    return [norm(v) for v in a] == [norm(v) for v in b]


def test_golden_vectors_present() -> None:
    if not GOLDEN_SINGLE.is_dir():
        pytest.skip(f"golden vectors not found at {GOLDEN_SINGLE}")
    kinds = {json.loads((GOLDEN_SINGLE / f"{v}.json").read_text())["index_type"] for v in VECTOR_IDS}
    assert kinds == set(WRITER_TYPES)


# ---------------------------------------------------------------------------------------
# Random columns with nulls.

_INT_RANGES = {"TINYINT": 7, "SMALLINT": 15, "INT": 31, "BIGINT": 63}


def _ints(bits: int, small: bool):
    return st.integers(-8, 8) if small else st.integers(-(1 << bits) + 1, (1 << bits) - 1)


def _value_strategy(type_text: str, small: bool):
    dtype = parse_type(type_text)
    r = dtype.root
    if r in _INT_RANGES:
        return _ints(_INT_RANGES[r], small)
    if r == "DATE":
        return _ints(20, small)
    if r == "TIME":
        return st.integers(0, 86_399_999) if not small else st.integers(0, 8)
    if r in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        p = dtype.precision
        nanos = st.just(0) if p <= 3 else st.integers(0, 999).map(lambda u: u * 1000) if p <= 6 \
            else st.integers(0, 999_999)
        return st.builds(Timestamp, _ints(43, small), nanos)  # p 9 fits Arrow int64 nanos
    if r == "FLOAT":
        return st.floats(width=32) if not small else st.sampled_from([0.0, -0.0, 1.5, math.nan, math.inf, -2.0])
    if r == "DOUBLE":
        return st.floats() if not small else st.sampled_from([0.0, -0.0, 1.5, math.nan, -math.inf, 3.25])
    if r == "BOOLEAN":
        return st.booleans()
    alphabet = st.characters(blacklist_categories=("Cs",))
    return st.text(alphabet, max_size=6) if not small else st.sampled_from(["", "a", "b", "ab", "é", "z" * 20])


_TYPES = {
    "bloom-filter": ["TINYINT", "INT", "BIGINT", "DATE", "TIME(0)", "TIMESTAMP(3)", "TIMESTAMP(6)",
                     "TIMESTAMP(9)", "TIMESTAMP(6) WITH LOCAL TIME ZONE", "FLOAT", "DOUBLE", "STRING"],
    "bitmap": ["TINYINT", "SMALLINT", "INT", "BIGINT", "DATE", "TIME(0)", "TIMESTAMP(3)", "TIMESTAMP(6)",
               "FLOAT", "DOUBLE", "BOOLEAN", "STRING"],
    "bsi": ["TINYINT", "SMALLINT", "INT", "BIGINT", "DATE", "TIME(0)", "TIMESTAMP(3)", "TIMESTAMP(6)",
            "TIMESTAMP(9)"],
    "range-bitmap": ["TINYINT", "SMALLINT", "INT", "BIGINT", "DATE", "TIME(0)", "TIMESTAMP(3)",
                     "TIMESTAMP(6) WITH LOCAL TIME ZONE", "FLOAT", "DOUBLE", "BOOLEAN", "STRING"],
}
_OPTIONS = {
    "bloom-filter": st.sampled_from([{"items": "10"}, {"items": "500", "fpp": "0.01"}, {"items": "3", "fpp": "0.3"}]),
    "bitmap": st.sampled_from([{}, {"version": "1"}, {"index-block-size": "64b"}]),
    "bsi": st.just({}),
    "range-bitmap": st.sampled_from([{}, {"chunk-size": "0b"}, {"chunk-size": "16b"}, {"chunk-size": "64b"}]),
}


@st.composite
def _case(draw, index_type: str):
    type_text = draw(st.sampled_from(_TYPES[index_type]))
    dtype = parse_type(type_text)
    values = _value_strategy(type_text, draw(st.booleans()))
    rows = draw(st.lists(st.one_of(st.none(), values) if draw(st.booleans()) else values, max_size=60))
    cut = sorted(draw(st.lists(st.integers(0, len(rows)), min_size=2, max_size=2)))
    return dtype, draw(_OPTIONS[index_type]), rows, cut


def _check(index_type: str, case) -> None:
    dtype, options, rows, (a, b) = case
    column = arrow_column(rows, dtype)
    values = internal_values(column, dtype)
    expected = row_by_row(index_type, dtype, options, values)
    assert batched(index_type, dtype, options, values) == expected
    assert from_arrow(index_type, dtype, options, column) == expected
    mixed = new_writer(index_type, dtype, options)
    for v in values[:a]:
        mixed.write(v)
    mixed.write_arrow(column[a:b])
    mixed.write_batch(values[b:])
    assert mixed.serialized_bytes() == expected


_SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_SETTINGS
@given(_case("bloom-filter"))
def test_bloom_bulk_random(case) -> None:
    _check("bloom-filter", case)


@_SETTINGS
@given(_case("bitmap"))
def test_bitmap_bulk_random(case) -> None:
    _check("bitmap", case)


@_SETTINGS
@given(_case("bsi"))
def test_bsi_bulk_random(case) -> None:
    _check("bsi", case)


@_SETTINGS
@given(_case("range-bitmap"))
def test_range_bitmap_bulk_random(case) -> None:
    _check("range-bitmap", case)


def test_default_write_batch_loops_over_write() -> None:
    from indexcore.formats.base import FileIndexWriter

    class Recorder(FileIndexWriter):
        def __init__(self):
            super().__init__(parse_type("INT"))
            self.seen: list = []

        def write(self, value):
            self.seen.append(value)

    w = Recorder()
    w.write_batch([3, None, 1])
    assert w.seen == [3, None, 1]
    assert not w.accepts_arrow(pa.int32())
    with pytest.raises(UnsupportedError):
        w.write_arrow(pa.array([1], pa.int32()))


def test_bsi_refuses_long_min_in_bulk() -> None:
    dtype = parse_type("BIGINT")
    for feed in (lambda w: w.write_batch([1, -(1 << 63)]), lambda w: w.write_arrow(pa.array([1, -(1 << 63)]))):
        with pytest.raises(UnsupportedError):
            feed(new_writer("bsi", dtype, {}))


RESIZE_KEYS = list(range(12)) + [16]  # 13 keys; 0 and 16 share a bucket of 16 but not of 32


@pytest.mark.parametrize("tail", [[], [None], [0], [0, 13]])
def test_bitmap_hashmap_resize_after_last_new_key(tail: list) -> None:
    """13 keys pass Java's 3/4 threshold: whether a non-null row follows the last new key
    decides a final resize, so the dictionary order (and bytes) depend on it."""
    dtype = parse_type("INT")
    values = RESIZE_KEYS + tail
    expected = row_by_row("bitmap", dtype, {"version": "1"}, values)
    assert batched("bitmap", dtype, {"version": "1"}, values) == expected
    assert from_arrow("bitmap", dtype, {"version": "1"}, arrow_column(values, dtype)) == expected
    split = new_writer("bitmap", dtype, {"version": "1"})
    split.write_arrow(arrow_column(values[:13], dtype))
    split.write_batch(values[13:])
    assert split.serialized_bytes() == expected


def test_bitmap_resize_flag_changes_order() -> None:
    """The case above can fail: the flag moves key 16 relative to key 0."""
    from indexcore.formats.bitmap.writer import java_hashmap_order

    assert java_hashmap_order(RESIZE_KEYS, True) != java_hashmap_order(RESIZE_KEYS, False)


@pytest.mark.parametrize("rows,count", [(0, 3), (60, 6), (997, 14), (5000, 20), (70_000, 2), (3, 63)])
def test_bit_slices_both_ways(rows, count):
    """Slice i holds the rows whose value has bit i set, from one array operation on a small file
    and slice by slice on a large one (truth: each value's bits tested one by one)."""
    import numpy as np

    from indexcore.formats.bulk import bit_slices

    rng = np.random.default_rng(rows + count)
    ids = np.sort(rng.choice(3 * rows + 1, size=rows, replace=False)).astype(np.int64)
    values = rng.integers(0, 1 << min(count, 62), size=rows, dtype=np.int64)
    got = bit_slices(ids, values, count)
    assert len(got) == count
    for i in range(count):
        assert list(got[i]) == [int(r) for r, v in zip(ids, values, strict=True) if (int(v) >> i) & 1]
