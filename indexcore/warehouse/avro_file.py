"""Avro data files as Arrow tables, with the raw values Paimon stored.

Paimon writes one Avro record per row, fields named like the table's (``_KEY_`` prefixed keys,
``_SEQUENCE_NUMBER`` and ``_VALUE_KIND`` in primary-key files). Each column becomes the Arrow type
of its Avro type (logical types included: dates, times, timestamps, decimals), which
:func:`~indexcore.types.values.cast_column` then casts to the table's type. A map whose keys are not strings is
an array of ``{key, value}`` records.
"""

from __future__ import annotations

import decimal
import io
from typing import Any

import fastavro
import pyarrow as pa

from indexcore.errors import CorruptFileError
from indexcore.warehouse import manifest as _manifest  # noqa: F401  (installs the zstandard codec for fastavro)

_PRIMITIVE = {"boolean": pa.bool_(), "int": pa.int32(), "long": pa.int64(), "float": pa.float32(),
              "double": pa.float64(), "string": pa.string(), "bytes": pa.binary(), "null": pa.null()}
_LOGICAL = {"date": pa.date32(), "time-millis": pa.time32("ms"), "time-micros": pa.time64("us"),
            "timestamp-millis": pa.timestamp("ms"), "timestamp-micros": pa.timestamp("us"),
            "timestamp-nanos": pa.timestamp("ns"), "local-timestamp-millis": pa.timestamp("ms"),
            "local-timestamp-micros": pa.timestamp("us"), "local-timestamp-nanos": pa.timestamp("ns")}


def _nonnull(schema: Any) -> Any:
    if isinstance(schema, list):
        rest = [s for s in schema if s != "null"]
        return rest[0] if len(rest) == 1 else schema
    return schema


def _is_entry_array(schema: dict) -> bool:
    items = _nonnull(schema.get("items"))
    return isinstance(items, dict) and items.get("type") == "record" and \
        [f["name"] for f in items.get("fields", [])] == ["key", "value"]


def _converter(schema: Any, named: dict) -> tuple[pa.DataType, Any]:
    """The Arrow type of an Avro schema and a function turning one raw value into Arrow's form."""
    s = _nonnull(schema)
    if isinstance(s, str) and s in named:
        s = named[s]
    if isinstance(s, str):
        return _PRIMITIVE.get(s, pa.binary()), lambda v: v
    if isinstance(s, list):  # a union of several types: keep the value as text
        return pa.string(), lambda v: None if v is None else str(v)
    kind, logical = s.get("type"), s.get("logicalType")
    if isinstance(kind, dict | list):
        return _converter(kind, named)
    if s.get("name"):
        named[s["name"]] = s
    if logical == "decimal":
        p, scale = int(s.get("precision", 38)), int(s.get("scale", 0))
        t = pa.decimal128(p, scale) if p <= 38 else pa.decimal256(p, scale)

        def dec(v: Any) -> decimal.Decimal | None:
            if v is None or isinstance(v, decimal.Decimal):
                return v
            return decimal.Decimal(int.from_bytes(v, "big", signed=True)).scaleb(-scale)

        return t, dec
    if logical in _LOGICAL:
        return _LOGICAL[logical], lambda v: v
    if kind == "fixed":
        return pa.binary(), lambda v: v
    if kind == "enum":
        return pa.string(), lambda v: v
    if kind == "array" and _is_entry_array(s):
        fields = _nonnull(s["items"])["fields"]
        kt, kc = _converter(fields[0]["type"], named)
        vt, vc = _converter(fields[1]["type"], named)
        return pa.map_(kt, vt), lambda v: None if v is None else [(kc(e["key"]), vc(e["value"])) for e in v]
    if kind == "array":
        et, ec = _converter(s["items"], named)
        return pa.list_(et), lambda v: None if v is None else [ec(e) for e in v]
    if kind == "map":
        vt, vc = _converter(s["values"], named)
        return pa.map_(pa.string(), vt), lambda v: None if v is None else [(k, vc(x)) for k, x in v.items()]
    if kind == "record":
        convs = [(f["name"], *_converter(f["type"], named)) for f in s["fields"]]
        t = pa.struct([pa.field(n, ft) for n, ft, _ in convs])
        return t, lambda v: None if v is None else {n: c(v.get(n)) for n, _, c in convs}
    return _PRIMITIVE.get(kind, pa.binary()), lambda v: v


def read_avro_table(data: bytes, name: str) -> pa.Table:
    """Every column of one Avro data file, as stored."""
    try:
        reader = fastavro.reader(io.BytesIO(data))
        writer_schema = reader.writer_schema
        records = list(reader)
    except Exception as exc:  # fastavro raises many kinds on bad bytes
        raise CorruptFileError(f"cannot read avro data file: {exc}", file=name, structure="avro") from exc
    if writer_schema.get("type") != "record":
        raise CorruptFileError("an avro data file must hold records", file=name, structure="avro schema")
    named: dict = {}
    arrays, fields = [], []
    for f in writer_schema["fields"]:
        t, conv = _converter(f["type"], named)
        values = [conv(r.get(f["name"])) for r in records]
        try:
            arr = pa.array(values, type=t)
        except (pa.ArrowException, TypeError, ValueError, OverflowError) as exc:
            raise CorruptFileError(f"avro column {f['name']!r} does not convert: {exc}", file=name,
                                   structure="avro data") from exc
        arrays.append(arr)
        fields.append(pa.field(f["name"], t))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))
