"""Writers built together (``FileIndexWriter.many``: one per column of many small files, their
parts computed in one pass) hold exactly what one writer per file holds: the same bytes (so
Paimon's, tests/test_writer_bulk.py) and a reader answering alike, for every fixed-width type
of range-bitmap and BSI, string bitmaps and every bloom-filter type, with nulls, all-null and empty files, negative keys
and NaN."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_writer_bulk import _OPTIONS, _SETTINGS, _TYPES, _value_strategy, arrow_column
from test_writer_readers import _literals, _visits

from indexcore.formats.registry import new_writer, new_writers
from indexcore.types import parse_type
from indexcore.write.datafile import internal_values


@st.composite
def _files(draw, index_type: str):
    # range-bitmap and BSI build fixed-width keys together, bitmap string keys
    types = (["STRING"] if index_type == "bitmap" else _TYPES[index_type] if index_type == "bloom-filter"
             else [t for t in _TYPES[index_type] if t != "STRING"])
    type_text = draw(st.sampled_from(types))
    dtype = parse_type(type_text)
    values = _value_strategy(type_text, draw(st.booleans()))
    files = draw(st.lists(st.lists(st.one_of(st.none(), values) if draw(st.booleans()) else values, max_size=40),
                          min_size=1, max_size=8))
    return dtype, draw(_OPTIONS[index_type]), files


def _check(index_type: str, case) -> None:
    dtype, options, files = case
    columns = [arrow_column(rows, dtype) for rows in files]
    if len({c.type for c in columns}) != 1:  # e.g. an empty column typed apart: many refuses
        assert new_writers(index_type, dtype, options, columns) is None
        return
    together = new_writers(index_type, dtype, options, columns)
    assert together is not None and len(together) == len(columns)
    for column, writer in zip(columns, together, strict=True):
        alone = new_writer(index_type, dtype, options)
        alone.write_arrow(column)
        assert writer.empty == alone.empty
        if alone.empty:
            continue
        reader = writer.reader()  # before the bytes: the same bytes after it
        assert writer.serialized_bytes() == alone.serialized_bytes()
        if reader is None:  # a bloom filter's reader reads the bytes
            continue
        literals = _literals(internal_values(column, dtype), dtype)
        assert _visits(reader, literals) == _visits(alone.reader(), literals)


@_SETTINGS
@given(_files("range-bitmap"))
def test_range_bitmap_many(case) -> None:
    _check("range-bitmap", case)


@_SETTINGS
@given(_files("bsi"))
def test_bsi_many(case) -> None:
    _check("bsi", case)


@_SETTINGS
@given(_files("bloom-filter"))
def test_bloom_filter_many(case) -> None:
    """Every type the bloom filter takes as Arrow (strings by their UTF-8 bytes, numbers by their
    keys), nulls, all-null and empty files, NaN, three filter sizes."""
    _check("bloom-filter", case)


def test_bloom_filter_many_refuses_a_mask_past_the_limit() -> None:
    """Large filters (the default 1M items) of many files are written one by one."""
    columns = [pa.array(["a", "b"])] * 40
    assert new_writers("bloom-filter", parse_type("STRING"), {}, columns) is None
    assert new_writers("bloom-filter", parse_type("STRING"), {"items": "400"}, columns) is not None


@_SETTINGS
@given(_files("bitmap"))
def test_bitmap_many(case) -> None:
    """String keys (empty, multi-byte, long), nulls, both versions, small index blocks."""
    _check("bitmap", case)


def test_bitmap_many_hashmap_resize() -> None:
    """13 keys in a file: whether a non-null row follows the last new key decides Java's last
    resize (so the bytes), for every file of the batch (tests/test_writer_bulk.py's keys)."""
    keys = [f"k{i}" for i in range(13)]
    many = [f"key-{i}" for i in range(40)]  # keys sharing Java buckets: their order in a file shows
    files = [keys, keys + [None], keys + ["k0"], keys + ["k0", "new"], [None, None], [], ["a", "a"],
             many, many[::-1], many[20:] + many[:20]]
    for version in ({}, {"version": "1"}):
        _check("bitmap", (parse_type("STRING"), version, files))


def test_many_keys_many_files() -> None:
    """Files of hundreds of keys (slices past a byte, codes numbered within each file)."""
    import numpy as np

    rng = np.random.default_rng(7)
    dtype = parse_type("BIGINT")
    columns = [pa.array(rng.integers(-5000, 5000, size=n), pa.int64()) for n in (0, 1, 300, 999, 64, 2)]
    for kind in ("range-bitmap", "bsi"):
        _check(kind, (dtype, {}, [c.to_pylist() for c in columns]))


@pytest.mark.parametrize("kind,dtype,columns", [
    ("range-bitmap", "STRING", [pa.array(["a", None]), pa.array(["b"])]),  # string keys: one by one
    ("bsi", "BIGINT", [pa.array([1], pa.int64()), pa.array([-(1 << 63)], pa.int64())]),  # Long.MIN_VALUE
    ("bsi", "BIGINT", [pa.array([1], pa.int64()), pa.array([2], pa.int32())]),  # mixed Arrow types
    ("bitmap", "INT", [pa.array([1], pa.int32())]),  # bitmap keys but strings: one by one
    ("bloom-filter", "BIGINT", [pa.array([1], pa.int64()), pa.array([2], pa.int32())]),  # mixed Arrow types
])
def test_many_declines(kind, dtype, columns) -> None:
    assert new_writers(kind, parse_type(dtype), {"items": "10"} if kind == "bloom-filter" else {}, columns) is None


def test_string_hashes_together_are_each_keys_hash():
    """Keys hashed together (vectorised, a bitmap writer's distinct strings) give each key's
    ``MurmurHashUtils.hashBytes``, one at a time: every length mod 4, high (sign-extended) bytes,
    empty keys, few keys and many."""
    import random

    from indexcore.formats.murmur import hash_bytes, hash_bytes_many

    rng = random.Random(30)
    for n in (0, 1, 7, 8, 9, 100, 1000):
        keys = [bytes(rng.randrange(256) for _ in range(rng.randrange(0, 41))) for _ in range(n)]
        assert hash_bytes_many(keys) == [hash_bytes(k) for k in keys]
    assert hash_bytes_many([b""] * 10) == [hash_bytes(b"")] * 10


def test_string_bitmaps_together_write_the_scalar_hash_order(monkeypatch):
    """A string bitmap's bytes (key order: Java ``HashMap`` over each key's hashCode) are those of
    the writer hashing key by key, whether the keys were hashed for every file at once
    (``many``) or per writer, and after more rows are written into a writer built by ``many``."""
    import random

    from indexcore.formats.bitmap.keys import KeyCodec
    from indexcore.formats.murmur import hash_bytes

    rng = random.Random(27)
    alphabet = "ab\u00e9\u4e2d\U0001f600xyz0123"
    files = [[None if rng.random() < 0.1 else "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 9)))
              for _ in range(rng.randrange(0, 80))] for _ in range(12)]
    dtype = parse_type("STRING")
    columns = [pa.array(rows, pa.string()) for rows in files]
    together = new_writers("bitmap", dtype, {}, columns)
    alone = []
    for column in columns:
        w = new_writer("bitmap", dtype, {})
        w.write_arrow(column)
        alone.append(w)
    fast = [w.serialized_bytes() for w in together]
    assert fast == [w.serialized_bytes() for w in alone]
    together[0].write_batch([b"a new key", b"another"])
    fast_more = together[0].serialized_bytes()
    monkeypatch.setattr(KeyCodec, "java_hashes", lambda self, keys: [hash_bytes(k) for k in keys])
    scalar = []
    for column in columns:
        w = new_writer("bitmap", dtype, {})
        w.write_arrow(column)
        scalar.append(w.serialized_bytes())
    assert fast == scalar
    w = new_writer("bitmap", dtype, {})
    w.write_arrow(columns[0])
    w.write_batch([b"a new key", b"another"])
    assert fast_more == w.serialized_bytes()
