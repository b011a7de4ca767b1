"""Paimon's BinaryRow: round trips, Paimon-written manifest bytes, and the key hash / bucket."""

from __future__ import annotations

import decimal
import glob
import json
import os
import struct

import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from indexcore.errors import CorruptFileError
from indexcore.formats.binary_row import (
    EMPTY_ROW,
    binary_row,
    bucket_of,
    decode_binary_row,
    hash_bytes_by_words,
    key_hash,
    serialize_binary_row,
)
from indexcore.types import Timestamp, parse_type, to_json_value, to_json_values, type_from_json
from indexcore.warehouse.manifest import read_records
from indexcore.warehouse.table_schemas import SYSTEM_BIGINT_FIELDS

PARQUET = "warehouses/parquet"

SCALARS = {
    "BOOLEAN": st.booleans(),
    "TINYINT": st.integers(-128, 127),
    "SMALLINT": st.integers(-(1 << 15), (1 << 15) - 1),
    "INT": st.integers(-(1 << 31), (1 << 31) - 1),
    "BIGINT": st.integers(-(1 << 63), (1 << 63) - 1),
    "DATE": st.integers(-(1 << 31), (1 << 31) - 1),
    "TIME": st.integers(0, 86_399_999),
    "FLOAT": st.floats(width=32, allow_nan=False),
    "DOUBLE": st.floats(allow_nan=False),
    "STRING": st.text(max_size=40),
    "CHAR(3)": st.text(min_size=0, max_size=3),
    "VARBINARY(64)": st.binary(max_size=40),
    "BYTES": st.binary(max_size=40),
    "DECIMAL(10, 2)": st.decimals(min_value=-(10 ** 8) + 1, max_value=10 ** 8 - 1, places=2),
    "DECIMAL(18, 0)": st.integers(-(10 ** 18) + 1, 10 ** 18 - 1).map(decimal.Decimal),
    "DECIMAL(38, 5)": st.integers(-(10 ** 38) + 1, 10 ** 38 - 1).map(lambda u: decimal.Decimal(u).scaleb(-5)),
    "TIMESTAMP(3)": st.integers(-(1 << 50), 1 << 50).map(lambda ms: Timestamp(ms, 0)),
    "TIMESTAMP(6)": st.tuples(st.integers(-(1 << 50), 1 << 50), st.integers(0, 999)).map(
        lambda t: Timestamp(t[0], t[1] * 1000)),
    "TIMESTAMP(9)": st.tuples(st.integers(-(1 << 50), 1 << 50), st.integers(0, 999_999)).map(
        lambda t: Timestamp(*t)),
    "TIMESTAMP_LTZ(3)": st.integers(-(1 << 50), 1 << 50).map(lambda ms: Timestamp(ms, 0)),
    "TIMESTAMP_LTZ(9)": st.tuples(st.integers(-(1 << 50), 1 << 50), st.integers(0, 999_999)).map(
        lambda t: Timestamp(*t)),
}
TYPES = {name: parse_type(name) for name in SCALARS}


@st.composite
def rows(draw):
    names = draw(st.lists(st.sampled_from(sorted(SCALARS)), min_size=0, max_size=70))
    values = [draw(st.none() | SCALARS[n]) for n in names]
    return [TYPES[n] for n in names], values


@settings(max_examples=300, deadline=None)
@given(rows())
def test_round_trip_every_scalar_type(row):
    """decode(encode(x)) == x over every scalar type, nulls, short/long strings, compact and
    non-compact decimals and timestamps, and arities crossing the 56-field header word."""
    types, values = row
    raw = serialize_binary_row(values, types)
    assert len(raw) % 8 == 4  # arity prefix + whole words
    assert decode_binary_row(raw, types) == tuple(values)
    assert serialize_binary_row(decode_binary_row(raw, types), types) == raw


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(sorted(SCALARS)).flatmap(lambda n: st.tuples(st.just(n), st.lists(st.none() | SCALARS[n],
                                                                                          max_size=30))))
def test_json_values_of_a_column_are_each_values_json(column):
    """``to_json_values`` (a frame's column of stats at once; timestamps through numpy) gives
    what ``to_json_value`` gives value by value, past year 9999 and before year 1 included."""
    name, values = column
    dtype = TYPES[name]
    if name.startswith("TIMESTAMP"):
        values += [Timestamp(-62_135_596_800_000), Timestamp(-62_135_596_800_001, 5), Timestamp(-1, 999_999),
                   Timestamp(253_402_300_799_999, 999_999), Timestamp(253_402_300_800_000), Timestamp(1_000, 0)]
    assert to_json_values(dtype, values) == [to_json_value(dtype, v) for v in values]


def test_json_values_of_a_long_timestamp_column_across_its_formatting_slices():
    """More timestamps than numpy formats at once (65,536), nulls and nanoseconds between them:
    each one's own ``to_json_value``, in order."""
    dtype = TYPES["TIMESTAMP(3)"] if "TIMESTAMP(3)" in TYPES else parse_type("TIMESTAMP(3)")
    values = [None if i % 997 == 0 else Timestamp(1_700_000_000_000 + 37 * i, 5 if i % 1009 == 0 else 0)
              for i in range(140_000)]
    assert to_json_values(dtype, values) == [to_json_value(dtype, v) for v in values]


@pytest.mark.parametrize("name", sorted(SCALARS))
def test_null_and_boundary_values_round_trip(name):
    dtype = TYPES[name]
    samples = {"STRING": ["", "1234567", "12345678", "ü" * 4, "x" * 100],
               "BYTES": [b"", b"\x00" * 7, b"\xff" * 8],
               "DECIMAL(38, 5)": [decimal.Decimal(v).scaleb(-5) for v in (0, -1, 127, -128, 128, -129, -32768)],
               "TIMESTAMP(9)": [Timestamp(-1, 999_999), Timestamp(0, 0)]}.get(name, [])
    for value in [None, *samples]:
        raw = serialize_binary_row([value, 1], [dtype, TYPES["INT"]])
        assert decode_binary_row(raw, [dtype, TYPES["INT"]]) == (value, 1)


def test_decimal_bytes_are_java_minimal():
    """A non-compact decimal stores ``BigInteger.toByteArray()``: -128 is one byte, 128 two."""
    dtype = parse_type("DECIMAL(20, 0)")
    for unscaled, size in ((0, 1), (127, 1), (128, 2), (-128, 1), (-129, 2), (-32768, 2), (32768, 3)):
        row = binary_row([decimal.Decimal(unscaled)], [dtype])
        (slot,) = struct.unpack_from("<q", row, 8)
        assert slot & 0xFFFFFFFF == size, unscaled
        start = slot >> 32
        assert int.from_bytes(row[start:start + size], "big", signed=True) == unscaled


def test_decoding_hand_built_row():
    # arity 3: INT 7, STRING "hello world" (variable part), TIMESTAMP(6) 1 ms + 500 ns
    row = bytearray(8 + 8 * 3)
    row[8:12] = (7).to_bytes(4, "little")
    text = b"hello world"
    var_off = len(row)
    row[16:24] = ((var_off << 32) | len(text)).to_bytes(8, "little")
    row += text + b"\0" * 5
    ts_off = len(row)
    row[24:32] = ((ts_off << 32) | 500).to_bytes(8, "little")
    row += (1).to_bytes(8, "little")
    raw = (3).to_bytes(4, "big") + bytes(row)
    types = [parse_type("INT"), parse_type("STRING"), parse_type("TIMESTAMP(6)")]
    assert decode_binary_row(raw, types) == (7, "hello world", Timestamp(1, 500))
    assert serialize_binary_row((7, "hello world", Timestamp(1, 500)), types) == raw
    nulled = bytearray(raw)
    nulled[4 + 1] |= 1 << 1  # null bit of field 1 is bit 9 (bits 0..7 are the row-kind header)
    assert decode_binary_row(bytes(nulled), types) == (7, None, Timestamp(1, 500))


def test_truncated_rows_raise_corrupt():
    types = [parse_type("STRING"), parse_type("TIMESTAMP(9)")]
    raw = serialize_binary_row(["a long string value", Timestamp(5, 6)], types)
    for cut in (10, len(raw) - 30, len(raw) - 1):
        with pytest.raises(CorruptFileError):
            decode_binary_row(raw[:cut], types)
    assert decode_binary_row(b"", types) == (None, None)


def test_hash_matches_paimon_bucket_selector_test():
    """Hash codes and buckets of (a, 1, 2) INT rows from Paimon's ``BucketSelectorTest``."""
    ints = [parse_type("INT")] * 3
    expected = {5: (-1272936927, 7), 6: (582056914, 14), 7: (-1234868890, 10), 0: (None, 11)}
    for a, (code, bucket) in expected.items():
        row = [a, 1, 2] if a else [0, 1, 2]
        h = key_hash(row, ints)
        if code is not None:
            assert h == code
        assert bucket_of(h, 20) == bucket
    assert key_hash([0, 1, 2], ints) == 1141287431
    assert hash_bytes_by_words(binary_row([5, 1, 2], ints)) == -1272936927


# ---------------------------------------------------------------------------------------------
# Paimon-written manifests


def _bytes(path) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


def _schemas(table_dir: str) -> dict[int, dict]:
    out = {}
    for path in glob.glob(os.path.join(table_dir, "schema", "schema-*")):
        doc = json.loads(_bytes(path))
        out[doc["id"]] = doc
    return out


def _types(doc: dict, names=None) -> list:
    fields = {f["name"]: type_from_json(f["type"]) for f in doc["fields"]}
    fields.update({name: parse_type("BIGINT") for name in SYSTEM_BIGINT_FIELDS})
    return [fields[n] for n in (names if names is not None else [f["name"] for f in doc["fields"]])]


def _re_encoded_layout(raw: bytes, types: list) -> str | None:
    """Which writer's null layout re-encodes ``raw`` to the same bytes: ``"current"``,
    ``"older"`` (no area for null non-compact fields), ``"none"``; None when not comparable."""
    arity = int.from_bytes(raw[:4], "big")
    if arity != len(types) or any(t.is_nested for t in types):
        return None
    values = decode_binary_row(raw, types)
    if serialize_binary_row(values, types) == raw:
        return "current"
    if serialize_binary_row(values, types, reserve_nulls=False) == raw:
        return "older"
    return "none"


def test_paimon_manifest_rows_re_encode_identically(conformance):
    """Partitions, min/max keys and key/value stats of every Paimon-written manifest (and the
    partition stats of manifest lists) decode and re-encode to the same bytes."""
    checked = kinds = 0
    seen_types: set[str] = set()
    layouts: dict[str, int] = {}
    for root in ("parquet", "mixed"):
        for table_dir in sorted(glob.glob(str(conformance / "warehouses" / root / "*.db" / "*"))):
            schemas = _schemas(table_dir)
            if not schemas:
                continue
            latest = schemas[max(schemas)]
            fmt = latest["options"].get("manifest.format", "avro")
            part_types = _types(latest, latest["partitionKeys"])
            for path in sorted(glob.glob(os.path.join(table_dir, "manifest", "manifest-*"))):
                records = read_records(_bytes(path), fmt, path)
                for rec in records:
                    pairs = []
                    if "_PARTITION_STATS" in rec:  # manifest list
                        stats = rec["_PARTITION_STATS"]
                        pairs += [(stats["_MIN_VALUES"], part_types), (stats["_MAX_VALUES"], part_types)]
                    elif "_FILE" in rec:
                        f = rec["_FILE"]
                        doc = schemas[f["_SCHEMA_ID"]]
                        pairs.append((rec["_PARTITION"], _types(doc, doc["partitionKeys"])))
                        keys = [k for k in doc["primaryKeys"] if k not in doc["partitionKeys"]]
                        ktypes = _types(doc, keys)
                        for raw in (f["_MIN_KEY"], f["_MAX_KEY"], f["_KEY_STATS"]["_MIN_VALUES"],
                                    f["_KEY_STATS"]["_MAX_VALUES"]):
                            pairs.append((raw, ktypes if int.from_bytes(raw[:4], "big") else []))
                        cols = f.get("_VALUE_STATS_COLS")
                        if cols is None:
                            cols = f.get("_WRITE_COLS")
                        vtypes = _types(doc, cols)
                        stats = f["_VALUE_STATS"]
                        for raw in (stats["_MIN_VALUES"], stats["_MAX_VALUES"]):
                            pairs.append((raw, vtypes if int.from_bytes(raw[:4], "big") else []))
                    for raw, types in pairs:
                        layout = _re_encoded_layout(raw, types)
                        if layout is None:
                            continue
                        assert layout != "none", (path, types, raw.hex())
                        layouts[layout] = layouts.get(layout, 0) + 1
                        checked += 1
                        kinds += bool(types)
                        seen_types.update(t.root for t in types)
    assert checked > 500 and kinds > 300 and layouts["current"] > 500, layouts
    # the interesting layouts were met: long strings, non-compact decimals and timestamps
    assert {"VARCHAR", "DECIMAL", "TIMESTAMP", "DATE", "BOOLEAN", "DOUBLE"} <= seen_types
    assert serialize_binary_row((), ()) == EMPTY_ROW


def _bucket_cases(conformance):
    for schema_path in sorted(glob.glob(str(conformance / PARQUET / "*/*/schema/schema-0"))):
        doc = json.loads(_bytes(schema_path))
        n = int(doc["options"].get("bucket", "-1"))
        if n <= 1:
            continue
        keys = doc["options"].get("bucket-key")
        keys = keys.split(",") if keys else [k for k in doc["primaryKeys"] if k not in doc["partitionKeys"]]
        if not keys:
            continue
        types = {f["name"]: type_from_json(f["type"]) for f in doc["fields"]}
        if any(types[k].is_nested or types[k].root in ("DECIMAL", "TIMESTAMP", "TIMESTAMP_LTZ") for k in keys):
            continue
        yield os.path.dirname(os.path.dirname(schema_path)), n, keys, [types[k] for k in keys]


def test_fixed_bucket_of_every_paimon_row(conformance):
    """Every row of Paimon's fixed-bucket tables sits in the bucket our key hash picks."""
    rows_seen = tables = 0
    for table, n, keys, types in _bucket_cases(conformance):
        tables += 1
        for path in glob.glob(os.path.join(table, "**/bucket-*/*.parquet"), recursive=True):
            bucket = int(path.split("bucket-")[-1].split("/")[0])
            data = pq.read_table(path, columns=keys).to_pylist()
            for row in data:
                assert bucket_of(key_hash([row[k] for k in keys], types), n) == bucket, (path, row)
                rows_seen += 1
    assert tables >= 2 and rows_seen > 20
