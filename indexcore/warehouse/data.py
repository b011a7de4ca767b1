"""Reading data files the way Paimon's batch read does: the rows a user sees.

* A data file is read through the table schema by **field id**: renamed columns keep their
  values, added columns read as null, altered types are cast like Paimon (:mod:`.values`).
  Parquet and ORC carry the ids (``PARQUET:field_id`` / ``paimon.id``); files without them
  (Paimon 0.9) are matched by name through the schema they were written with.
* Deletion vectors drop row positions.
* Primary-key tables merge records by key and sequence number per merge engine
  (:mod:`.merge`); tables with deletion vectors, and first-row tables, skip level-0 files.
* Data-evolution tables stitch column files sharing a ``first_row_id``.
* ``scan.fallback-branch`` reads partitions missing from the main branch from the fallback.
"""

from __future__ import annotations

import array
import decimal
import math
import posixpath
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.orc as pa_orc
import pyarrow.parquet as pq
from pyroaring import BitMap

from ..errors import IndexCoreError, PredicateError, StorageError, UnsupportedError
from ..io import Storage
from ..predicate import Leaf, Predicate
from ..types import (
    BINARY_ROOTS,
    FLOAT_ROOTS,
    INTEGER_ROOTS,
    STRING_ROOTS,
    TIMESTAMP_ROOTS,
    DataType,
    Timestamp,
)
from .merge import FILE_ORDER, LEVEL, POSITION, SEQUENCE_NUMBER, VALUE_KIND, merge_records
from .model import LiveFile, Problem, TableSchema
from .values import arrow_type, cast_column, from_internal, to_internal

KEY_PREFIX = "_KEY_"
ROW_ID = "_ROW_ID"
SYSTEM_COLUMNS = (SEQUENCE_NUMBER, VALUE_KIND, ROW_ID)
_ID_KEYS = (b"PARQUET:field_id", b"paimon.id", b"field_id")


# ---------------------------------------------------------------------------------------
# One data file.


def read_raw(storage: Storage, path: str, file_format: str | None = None) -> pa.Table:
    """All columns of one Parquet or ORC file, as stored; unreadable files raise IndexCoreError."""
    fmt = (file_format or path.rsplit(".", 1)[-1]).lower()
    full = storage.resolve(path)
    if fmt not in ("parquet", "orc"):
        raise UnsupportedError(f"data file format {fmt!r} is not supported", file=path)
    try:
        if storage.protocol in ("file", "local"):
            source = full
        else:
            with storage.fs.open(full, "rb") as fh:
                source = pa.BufferReader(fh.read())
        table = pq.read_table(source) if fmt == "parquet" else pa_orc.ORCFile(source).read()
    except FileNotFoundError as exc:
        raise StorageError("data file not found", file=path) from exc
    except (pa.ArrowException, OSError, ValueError) as exc:
        if isinstance(exc, OSError) and not storage.fs.exists(full):
            raise StorageError("data file not found", file=path) from exc
        raise IndexCoreError(f"cannot read {fmt} data file: {exc}", file=path, structure=fmt) from exc
    if table.num_rows:
        storage.stats.add(storage.fs.size(full))
    return table


def _column_ids(raw: pa.Table) -> dict[int, int]:
    """Field id -> column index, from the ids the writer stored in the file's schema."""
    out = {}
    for i, f in enumerate(raw.schema):
        meta = f.metadata or {}
        for key in _ID_KEYS:
            if key in meta:
                value = meta[key].decode("ascii", "replace").strip()
                if value.lstrip("-").isdigit():
                    out[int(value)] = i
                break
    return out


def _locate(raw: pa.Table, ids: dict[int, int], field_id: int, file_name: str | None) -> int | None:
    if ids:
        return ids.get(field_id)
    if file_name is not None and file_name in raw.column_names:
        return raw.column_names.index(file_name)
    return None


def evolve_columns(raw: pa.Table, file_schema: TableSchema, table_schema: TableSchema,
                   columns: list[str] | None = None, partition_spec: dict[str, Any] | None = None,
                   write_cols: tuple[str, ...] | None = None) -> pa.Table:
    """The file's rows as ``table_schema`` columns: matched by field id, cast, null-filled.

    Partition columns absent from the file are filled from ``partition_spec``; ``write_cols``
    (data-evolution files) limits which fields the file really holds.
    """
    ids = _column_ids(raw)
    names = columns if columns is not None else list(table_schema.field_names)
    held = None
    if write_cols is not None:
        held = {file_schema.field(n).id for n in write_cols if n in file_schema.field_names}
    arrays, fields = [], []
    for name in names:
        tf = table_schema.field(name)
        ff = file_schema.field_by_id(tf.id)
        idx = None
        if ff is not None and (held is None or tf.id in held):
            idx = _locate(raw, ids, tf.id, ff.name)
        if idx is not None:
            col = cast_column(raw.column(idx), ff.type, tf.type)
        elif partition_spec and name in partition_spec and name in table_schema.partition_keys:
            col = from_internal([partition_spec[name]] * raw.num_rows, tf.type)
        else:
            col = pa.nulls(raw.num_rows, arrow_type(tf.type))
        if isinstance(col, pa.ChunkedArray):
            col = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
        arrays.append(col)
        fields.append(pa.field(name, arrow_type(tf.type)))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields)) if fields else \
        pa.table({"_dummy": pa.nulls(raw.num_rows)}).drop(["_dummy"])


def _deleted_positions(deletion_vector: Any) -> BitMap | None:
    if deletion_vector is None:
        return None
    positions = getattr(deletion_vector, "positions", deletion_vector)
    return positions


def _drop_positions(table: pa.Table, deleted: Any) -> pa.Table:
    if deleted is None or len(deleted) == 0 or table.num_rows == 0:
        return table
    keep = np.ones(table.num_rows, dtype=bool)
    if not hasattr(deleted, "to_array"):
        deleted = BitMap(deleted)
    # Clamp to the file's rows first (works for 32- and 64-bit roaring bitmaps alike).
    inside = deleted & type(deleted)(range(table.num_rows))
    keep[np.asarray(inside.to_array(), dtype=np.int64)] = False
    return table.filter(pa.array(keep))


def read_data_file(storage: Storage, live_file: LiveFile, file_schema: TableSchema,
                   table_schema: TableSchema, columns: list[str] | None = None,
                   deletion_vector: Any = None, system_columns: bool = False) -> pa.Table:
    """One data file's rows through ``table_schema``, with its deletion vector applied.

    ``deletion_vector``: a DeletionVector (``.positions``) or a BitMap of deleted positions.
    ``system_columns`` adds ``_SEQUENCE_NUMBER``/``_VALUE_KIND`` (primary-key files) and
    ``_POSITION`` (row position within the file).
    """
    raw = read_raw(storage, live_file.path, live_file.file.file_format)
    table = evolve_columns(raw, file_schema, table_schema, columns, live_file.partition_spec,
                           live_file.file.write_cols)
    if system_columns:
        n = raw.num_rows
        for name, dtype in ((SEQUENCE_NUMBER, pa.int64()), (VALUE_KIND, pa.int8())):
            if name in raw.column_names:
                col = raw.column(name).cast(dtype)
            elif name == SEQUENCE_NUMBER:
                col = pa.array([live_file.file.max_sequence_number] * n, pa.int64())
            else:
                col = pa.array([0] * n, pa.int8())
            table = table.append_column(name, col)
        table = table.append_column(POSITION, pa.array(range(n), pa.int64()))
    return _drop_positions(table, _deleted_positions(deletion_vector))


def matching_positions(storage: Storage, live_file: LiveFile, file_schema: TableSchema,
                       table_schema: TableSchema, predicate: Predicate) -> BitMap:
    """Row positions of one data file (before its deletion vector) where ``predicate`` holds."""
    needed = sorted(predicate.fields())
    raw = read_raw(storage, live_file.path, live_file.file.file_format)
    table = evolve_columns(raw, file_schema, table_schema, needed, live_file.partition_spec,
                           live_file.file.write_cols)
    positions = np.flatnonzero(_mask(table, predicate, table_schema)).astype(np.uint32)
    packed = array.array("I")
    if packed.itemsize != 4:
        return BitMap(positions.tolist())
    packed.frombytes(positions.tobytes())
    return BitMap(packed)


# ---------------------------------------------------------------------------------------
# Predicates with SQL null semantics over internal values (Paimon's ``LeafFunction.test``).
#
# Leaves are evaluated column-at-a-time. A column becomes *keys* that order exactly like its
# internal values under Java's ``compareTo`` (int64 keys in numpy, or the Arrow array itself
# for strings, binaries and wide decimals), and a literal becomes the interval ``[lo, hi]`` of
# keys equal to it (``lo > hi`` when no value of the column can equal it):
#
# * integers, DATE (days), TIME (millis, floored from finer units), BOOLEAN: the value itself;
# * TIMESTAMP[_LTZ]: the stored count in the column's unit; a literal finer than the unit
#   maps to ``[ceil, floor]`` of its nanoseconds over the unit, so TIMESTAMP(9) is exact;
# * FLOAT/DOUBLE: the IEEE bits folded to a signed total order (``-0.0 < 0.0``), every NaN
#   mapped to one key above ``+inf``, exactly ``Double.compareTo``;
# * DECIMAL(p <= 18): the unscaled int64 (a literal scaled to the column, ceil/floor);
#   DECIMAL(19..38): Arrow's exact decimal comparison against scaled literals;
# * strings and binaries: Arrow's byte-wise comparison, which is UTF-8 = code point order.
#
# Null rows are masked out afterwards, so Arrow's null propagation never leaks. Evaluated
# row by row in Python instead (``_row_leaf_test``): nested, VARIANT and BLOB columns, Arrow
# layouts other than the ones :func:`.values.arrow_type` produces (date64, fixed-size binary,
# decimal256, ...), literals whose Python type does not belong to the column's type (an int
# literal on a DOUBLE column is converted like Java; anything else falls back), Timestamp
# literals with nanos outside ``[0, 1e6)``, non-finite decimal literals and strings that are
# not valid UTF-8 (lone surrogates).

_I64_MIN, _I64_MAX = -(1 << 63), (1 << 63) - 1
_NAN_KEY = 0x7FF8_0000_0000_0000
_LOW63 = np.int64(_I64_MAX)
_DECIMAL_CONTEXT = decimal.Context(prec=200, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN)
_UNIT_NANOS = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1000, "ns": 1}
_COMPARISONS = ("equal", "notEqual", "lessThan", "lessOrEqual", "greaterThan", "greaterOrEqual")


class _Fallback(Exception):
    """This leaf cannot be vectorized exactly; test it row by row."""


def _java_compare(a: Any, b: Any) -> int:
    """``a.compareTo(b)`` on internal values; a float on either side compares as doubles."""
    if isinstance(a, float) or isinstance(b, float):
        a, b = float(a), float(b)
        a_nan, b_nan = math.isnan(a), math.isnan(b)
        if a_nan or b_nan:
            return a_nan - b_nan
        if a == b == 0.0:
            a_neg, b_neg = math.copysign(1, a) < 0, math.copysign(1, b) < 0
            return b_neg - a_neg
    return (a > b) - (a < b)


def _row_leaf_test(leaf: Leaf) -> Callable[[Any], bool]:
    """One leaf as a per-value test (the exact reference the vectorized path reproduces)."""
    op, lits = leaf.op, leaf.literals
    if op == "isNull":
        return lambda v: v is None
    if op == "isNotNull":
        return lambda v: v is not None
    if op == "in":
        present = [x for x in lits if x is not None]
        return lambda v: v is not None and any(_java_compare(v, x) == 0 for x in present)
    if op == "notIn":
        if any(x is None for x in lits):
            return lambda v: False
        return lambda v: v is not None and all(_java_compare(v, x) != 0 for x in lits)
    if op in ("between", "notBetween"):
        if len(lits) != 2:
            raise PredicateError(f"{op} needs two literals")
        lo, hi = lits
        if lo is None or hi is None:
            return lambda v: False
        if op == "between":
            return lambda v: v is not None and _java_compare(v, lo) >= 0 and _java_compare(v, hi) <= 0
        return lambda v: v is not None and (_java_compare(v, lo) < 0 or _java_compare(v, hi) > 0)
    if op not in _COMPARISONS:
        raise PredicateError(f"unknown predicate function {op!r}")
    if not lits or lits[0] is None:
        return lambda v: False
    lit = lits[0]
    test = {"equal": lambda c: c == 0, "notEqual": lambda c: c != 0, "lessThan": lambda c: c < 0,
            "lessOrEqual": lambda c: c <= 0, "greaterThan": lambda c: c > 0,
            "greaterOrEqual": lambda c: c >= 0}[op]
    return lambda v: v is not None and test(_java_compare(v, lit))


@dataclass(frozen=True)
class _Keys:
    """A column prepared for vectorized leaf tests (see the section comment)."""

    valid: np.ndarray
    bounds: Callable[[Any], tuple[Any, Any]]
    ge: Callable[[Any], np.ndarray]
    le: Callable[[Any], np.ndarray]
    isin: Callable[[list], np.ndarray]


def _int_keys(keys: np.ndarray, valid: np.ndarray, bounds: Callable[[Any], tuple[int, int]]) -> _Keys:
    n = len(keys)

    def ge(x: int) -> np.ndarray:
        if x > _I64_MAX:
            return np.zeros(n, bool)
        return np.ones(n, bool) if x <= _I64_MIN else keys >= np.int64(x)

    def le(x: int) -> np.ndarray:
        if x < _I64_MIN:
            return np.zeros(n, bool)
        return np.ones(n, bool) if x >= _I64_MAX else keys <= np.int64(x)

    def isin(xs: list) -> np.ndarray:
        inside = [x for x in xs if _I64_MIN <= x <= _I64_MAX]
        if len(inside) <= 4:
            out = np.zeros(n, bool)
            for x in inside:
                out |= keys == np.int64(x)
            return out
        return np.isin(keys, np.array(inside, np.int64))

    return _Keys(valid, bounds, ge, le, isin)


def _arrow_keys(column: pa.Array, valid: np.ndarray, bounds: Callable[[Any], tuple[Any, Any]],
                scalar: Callable[[Any], pa.Scalar | int]) -> _Keys:
    """Keys compared by Arrow; ``scalar`` may answer +1/-1 for a bound above/below every value."""
    n = len(column)

    def run(fn, x, true_when_above: bool) -> np.ndarray:
        s = scalar(x)
        if isinstance(s, int):
            return np.full(n, (s > 0) == true_when_above)
        return fn(column, s).fill_null(False).to_numpy(zero_copy_only=False)

    def isin(xs: list) -> np.ndarray:
        scalars = [s for s in (scalar(x) for x in xs) if not isinstance(s, int)]
        if not scalars:
            return np.zeros(n, bool)
        value_set = pa.array([s.as_py() for s in scalars], scalars[0].type)
        return pc.is_in(column, value_set=value_set).fill_null(False).to_numpy(zero_copy_only=False)

    return _Keys(valid, bounds, lambda x: run(pc.greater_equal, x, False),
                 lambda x: run(pc.less_equal, x, True), isin)


def _exact_int(x: Any) -> tuple[int, int]:
    if not isinstance(x, int) or isinstance(x, bool):
        raise _Fallback
    return x, x


def _exact_bool(x: Any) -> tuple[int, int]:
    if not isinstance(x, bool):
        raise _Fallback
    return int(x), int(x)


def _double_key(x: float) -> int:
    if math.isnan(x):
        return _NAN_KEY
    bits = struct.unpack("<q", struct.pack("<d", x))[0]
    return bits ^ _I64_MAX if bits < 0 else bits


def _double_keys(values: np.ndarray) -> np.ndarray:
    bits = values.view(np.int64)
    keys = np.where(bits < 0, bits ^ _LOW63, bits)
    keys[np.isnan(values)] = _NAN_KEY
    return keys


def _double_bounds(x: Any) -> tuple[int, int]:
    if isinstance(x, bool) or not isinstance(x, int | float):
        raise _Fallback
    try:
        key = _double_key(float(x))
    except OverflowError as exc:
        raise _Fallback from exc
    return key, key


def _scaled_bounds(value: decimal.Decimal, scale: int) -> tuple[int, int]:
    """``[ceil, floor]`` of ``value * 10**scale``; values beyond 10**60 clamp (no column reaches)."""
    if value.is_zero():
        return 0, 0
    if value.adjusted() + scale > 60:
        big = -(10 ** 61) if value < 0 else 10 ** 61
        return big, big
    scaled = value.scaleb(scale, context=_DECIMAL_CONTEXT)
    lo = scaled.to_integral_value(rounding=decimal.ROUND_CEILING, context=_DECIMAL_CONTEXT)
    hi = scaled.to_integral_value(rounding=decimal.ROUND_FLOOR, context=_DECIMAL_CONTEXT)
    return int(lo), int(hi)


def _decimal_bounds(scale: int) -> Callable[[Any], tuple[int, int]]:
    def bounds(x: Any) -> tuple[int, int]:
        if isinstance(x, int) and not isinstance(x, bool):
            x = decimal.Decimal(x)
        if not isinstance(x, decimal.Decimal) or not x.is_finite():
            raise _Fallback
        return _scaled_bounds(x, scale)
    return bounds


def _timestamp_bounds(unit_nanos: int) -> Callable[[Any], tuple[int, int]]:
    def bounds(x: Any) -> tuple[int, int]:
        if not isinstance(x, Timestamp) or not 0 <= x.nanos < 1_000_000:
            raise _Fallback
        nanos = x.to_nanos()
        return -(-nanos // unit_nanos), nanos // unit_nanos
    return bounds


def _int64(column: pa.Array) -> np.ndarray:
    """The stored integers (days, time units, timestamp units...) as int64, nulls as 0."""
    t = column.type
    if pa.types.is_date32(t) or pa.types.is_time32(t):
        column = column.cast(pa.int32())
    return column.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)


def _decimal_keys(column: pa.Array, valid: np.ndarray) -> _Keys:
    t = column.type
    bounds = _decimal_bounds(t.scale)
    if t.precision <= 18 and len(column):
        words = np.frombuffer(column.buffers()[1], dtype="<i8")
        words = words[2 * column.offset: 2 * (column.offset + len(column))]
        low, high = words[0::2], words[1::2]
        if np.array_equal(high[valid], low[valid] >> 63):
            return _int_keys(low, valid, bounds)
    limit = 10 ** 38
    wide = pa.decimal128(38, t.scale)

    def scalar(x: int) -> pa.Scalar | int:
        if x >= limit:
            return 1
        if x <= -limit:
            return -1
        return pa.scalar(decimal.Decimal(x).scaleb(-t.scale, context=_DECIMAL_CONTEXT), wide)

    return _arrow_keys(column, valid, bounds, scalar)


def _text_keys(column: pa.Array, valid: np.ndarray, kind: type) -> _Keys:
    def bounds(x: Any) -> tuple[Any, Any]:
        if kind is bytes and isinstance(x, bytearray):
            x = bytes(x)
        if not isinstance(x, kind):
            raise _Fallback
        if kind is str:
            try:
                x.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise _Fallback from exc
        return x, x

    return _arrow_keys(column, valid, bounds, lambda x: pa.scalar(x, column.type))


def _prepare(column: pa.Array, dtype: DataType) -> _Keys | None:  # noqa: C901
    """Keys for a column of ``dtype`` stored as Arrow ``column``; ``None`` when not vectorizable."""
    t, r = column.type, dtype.root
    valid = column.is_valid().to_numpy(zero_copy_only=False)
    if r in INTEGER_ROOTS and pa.types.is_integer(t):
        try:
            return _int_keys(_int64(column), valid, _exact_int)
        except pa.ArrowInvalid:
            return None
    if r == "BOOLEAN" and pa.types.is_boolean(t):
        return _int_keys(_int64(column), valid, _exact_bool)
    if r == "DATE" and pa.types.is_date32(t):
        return _int_keys(_int64(column), valid, _exact_int)
    if r == "TIME" and pa.types.is_time(t):
        raw = _int64(column)
        keys = raw * 1000 if t.unit == "s" else raw // {"ms": 1, "us": 1000, "ns": 1_000_000}[t.unit]
        return _int_keys(keys, valid, _exact_int)
    if r in TIMESTAMP_ROOTS and pa.types.is_timestamp(t):
        return _int_keys(_int64(column), valid, _timestamp_bounds(_UNIT_NANOS[t.unit]))
    if r in FLOAT_ROOTS and (pa.types.is_float32(t) or pa.types.is_float64(t)):
        values = column.cast(pa.float64()).fill_null(0.0).to_numpy(zero_copy_only=False)
        return _int_keys(_double_keys(values), valid, _double_bounds)
    if r == "DECIMAL" and pa.types.is_decimal128(t):
        return _decimal_keys(column, valid)
    if r in STRING_ROOTS and (pa.types.is_string(t) or pa.types.is_large_string(t)):
        return _text_keys(column, valid, str)
    if r in BINARY_ROOTS and (pa.types.is_binary(t) or pa.types.is_large_binary(t)):
        return _text_keys(column, valid, bytes)
    return None


def _vector_leaf(leaf: Leaf, keys: _Keys) -> np.ndarray:
    """One leaf over prepared keys; raises :class:`_Fallback` for a literal it cannot map."""
    op, lits, valid = leaf.op, leaf.literals, keys.valid
    none = np.zeros(len(valid), bool)
    if op in ("in", "notIn"):
        if op == "notIn" and any(x is None for x in lits):
            return none
        intervals = [keys.bounds(x) for x in lits if x is not None]
        exact = [lo for lo, hi in intervals if lo == hi]
        hit = keys.isin(exact) if exact else none
        return valid & (hit if op == "in" else ~hit)
    if op in ("between", "notBetween"):
        if len(lits) != 2:
            raise PredicateError(f"{op} needs two literals")
        if lits[0] is None or lits[1] is None:
            return none
        (lo, _), (_, hi) = keys.bounds(lits[0]), keys.bounds(lits[1])
        inside = keys.ge(lo) & keys.le(hi)
        return valid & (inside if op == "between" else ~inside)
    if op not in _COMPARISONS:
        raise PredicateError(f"unknown predicate function {op!r}")
    if not lits or lits[0] is None:
        return none
    lo, hi = keys.bounds(lits[0])
    if op in ("equal", "notEqual"):
        same = keys.ge(lo) & keys.le(hi)
        return valid & (same if op == "equal" else ~same)
    if op == "lessThan":
        return valid & ~keys.ge(lo)
    if op == "lessOrEqual":
        return valid & keys.le(hi)
    if op == "greaterThan":
        return valid & ~keys.le(hi)
    return valid & keys.ge(lo)


class _Columns:
    """The predicate's columns of one table, prepared lazily (keys, or internal values)."""

    def __init__(self, table: pa.Table, schema: TableSchema):
        self.table = table
        self.schema = schema
        self.keys: dict[str, _Keys | None] = {}
        self.values: dict[str, list] = {}

    def dtype(self, name: str) -> DataType:
        return self.schema.field(name).type if name in self.schema.field_names else DataType("BIGINT")

    def column(self, name: str) -> pa.Array:
        col = self.table.column(name)
        return col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)

    def leaf(self, leaf: Leaf) -> np.ndarray:
        name = leaf.field
        if leaf.op in ("isNull", "isNotNull"):
            valid = self.column(name).is_valid().to_numpy(zero_copy_only=False)
            return valid if leaf.op == "isNotNull" else ~valid
        if name not in self.keys:
            self.keys[name] = _prepare(self.column(name), self.dtype(name))
        keys = self.keys[name]
        if keys is not None:
            try:
                return _vector_leaf(leaf, keys)
            except _Fallback:
                pass
        return self.row_by_row(leaf)

    def row_by_row(self, leaf: Leaf) -> np.ndarray:
        test = _row_leaf_test(leaf)
        if leaf.field not in self.values:
            self.values[leaf.field] = to_internal(self.table.column(leaf.field), self.dtype(leaf.field))
        return np.fromiter((test(v) for v in self.values[leaf.field]), bool, self.table.num_rows)


def _eval(pred: Predicate, columns: _Columns, n: int) -> np.ndarray:
    if isinstance(pred, Leaf):
        return columns.leaf(pred)
    if pred.op not in ("and", "or"):
        raise PredicateError(f"unknown compound {pred.op!r}")
    out = np.full(n, pred.op == "and")
    for child in pred.children:
        part = _eval(child, columns, n)
        out = out & part if pred.op == "and" else out | part
    return out


def _mask(table: pa.Table, predicate: Predicate, schema: TableSchema) -> np.ndarray:
    for name in predicate.fields():
        if name not in table.column_names:
            raise PredicateError(f"unknown column {name!r}")
    return _eval(predicate, _Columns(table, schema), table.num_rows)


def predicate_mask(table: pa.Table, predicate: Predicate, schema: TableSchema) -> list[bool]:
    """Per row: does ``predicate`` hold (null comparisons are false, as in Paimon)."""
    return _mask(table, predicate, schema).tolist()


def filter_table(table: pa.Table, predicate: Predicate | None, schema: TableSchema) -> pa.Table:
    """The rows of ``table`` where ``predicate`` holds."""
    if predicate is None or table.num_rows == 0:
        return table
    return table.filter(pa.array(_mask(table, predicate, schema), pa.bool_()))


# ---------------------------------------------------------------------------------------
# A whole table.


def _empty(schema: TableSchema, columns: list[str] | None = None) -> pa.Table:
    names = columns if columns is not None else list(schema.field_names)
    return pa.schema([pa.field(n, arrow_type(schema.field(n).type)) for n in names]).empty_table()


def _concat(tables: list[pa.Table], schema: TableSchema, columns: list[str] | None) -> pa.Table:
    tables = [t for t in tables if t.num_rows]
    if not tables:
        return _empty(schema, columns)
    return pa.concat_tables(tables)


def _problem(problems: list, path: str, structure: str, exc: Exception) -> None:
    reason = exc.message if isinstance(exc, IndexCoreError) else str(exc)
    problems.append(Problem(path, structure, reason))


class _Reader:
    """Reads the live files of one plan through one table schema, collecting problems."""

    def __init__(self, table, schema: TableSchema, problems: list, progress=None):
        self.table = table
        self.schema = schema
        self.problems = problems
        self.progress = progress
        self.done = 0
        self.total = 0

    def file_schema(self, lf: LiveFile) -> TableSchema:
        return self.table.file_schema(lf, self.problems)

    def read(self, lf: LiveFile, system: bool = False, with_dv: bool = True) -> pa.Table | None:
        try:
            dv = self.table.deletion_vector(lf) if with_dv and lf.deletion_vector is not None else None
        except (IndexCoreError, ImportError) as exc:
            _problem(self.problems, lf.dv_file_path or lf.path, "deletion vector", exc)
            dv = None
        try:
            out = read_data_file(self.table.storage, lf, self.file_schema(lf), self.schema,
                                 deletion_vector=dv, system_columns=system)
        except IndexCoreError as exc:
            _problem(self.problems, lf.path, "data file", exc)
            out = None
        self.done += 1
        if self.progress is not None:
            self.progress(self.done, self.total, posixpath.basename(lf.path))
        return out


def _read_append(reader: _Reader, files: list[LiveFile]) -> list[pa.Table]:
    out = []
    for lf in files:
        t = reader.read(lf)
        if t is not None:
            out.append(t)
    return out


def _read_data_evolution(reader: _Reader, files: list[LiveFile]) -> list[pa.Table]:
    """Stitch column files by row id: per field, the newest file that wrote it wins."""
    schema = reader.schema
    plain = [lf for lf in files if lf.file.first_row_id is None]
    out = _read_append(reader, plain)
    groups: dict[tuple, list[LiveFile]] = {}
    for lf in files:
        if lf.file.first_row_id is not None:
            groups.setdefault((lf.partition, lf.file.first_row_id), []).append(lf)
    for (_part, first_row_id), group in sorted(groups.items(), key=lambda kv: kv[0][1]):
        group.sort(key=lambda lf: lf.file.max_sequence_number, reverse=True)
        counts = {lf.file.row_count for lf in group}
        if len(counts) != 1:
            reader.problems.append(Problem(group[0].path, "data evolution",
                                           f"files at first row id {first_row_id} differ in row count"))
            continue
        owner: dict[str, LiveFile] = {}
        for name in schema.field_names:
            fid = schema.field(name).id
            for lf in group:
                fs = reader.file_schema(lf)
                ff = fs.field_by_id(fid)
                if ff is None:
                    continue
                cols = lf.file.write_cols if lf.file.write_cols is not None else fs.field_names
                if ff.name in cols:
                    owner[name] = lf
                    break
        parts: dict[str, pa.Table] = {}
        arrays = []
        n = counts.pop()
        for name in schema.field_names:
            lf = owner.get(name)
            if lf is None:
                if name in schema.partition_keys and name in group[0].partition_spec:
                    arrays.append(from_internal([group[0].partition_spec[name]] * n, schema.field(name).type))
                else:
                    arrays.append(pa.nulls(n, arrow_type(schema.field(name).type)))
                continue
            if lf.path not in parts:
                parts[lf.path] = reader.read(lf, with_dv=False)
            t = parts[lf.path]
            arrays.append(t.column(name) if t is not None else pa.nulls(n, arrow_type(schema.field(name).type)))
        out.append(pa.table(arrays, schema=_empty(schema).schema))
    return out


def _read_primary_key(reader: _Reader, files: list[LiveFile]) -> list[pa.Table]:
    schema = reader.schema
    if schema.skips_level0:
        files = [lf for lf in files if lf.file.level > 0]
    buckets: dict[tuple, list[LiveFile]] = {}
    for lf in files:
        buckets.setdefault((lf.partition, lf.bucket), []).append(lf)
    names = list(schema.field_names)
    out = []
    for group in buckets.values():
        parts = []
        for order, lf in enumerate(sorted(group, key=lambda f: (-f.file.level, f.file.max_sequence_number))):
            t = reader.read(lf, system=True)
            if t is None:
                continue
            t = t.append_column(LEVEL, pa.array([lf.file.level] * t.num_rows, pa.int32()))
            t = t.append_column(FILE_ORDER, pa.array([order] * t.num_rows, pa.int32()))
            parts.append(t)
        parts = [p for p in parts if p.num_rows]
        if not parts:
            continue
        records = pa.concat_tables(parts)
        try:
            out.append(merge_records(records, list(schema.primary_keys), names, schema.core_options))
        except IndexCoreError as exc:
            _problem(reader.problems, group[0].path, "merge", exc)
    return out


def _read_plan(table, plan, schema: TableSchema, problems: list, progress=None,
               skip_partitions: set | None = None) -> pa.Table:
    files = [lf for lf in plan.files if skip_partitions is None or lf.partition not in skip_partitions]
    reader = _Reader(table, schema, problems, progress)
    reader.total = len(files)
    if schema.primary_keys:
        parts = _read_primary_key(reader, files)
    elif schema.core_options.data_evolution_enabled:
        parts = _read_data_evolution(reader, files)
    else:
        parts = _read_append(reader, files)
    return _concat(parts, schema, None)


def _conform(t: pa.Table, source: TableSchema, target: TableSchema) -> pa.Table:
    """A branch's rows in the main table's columns (matched by name, cast like Paimon)."""
    arrays = []
    for f in target.fields:
        if f.name in source.field_names:
            arrays.append(cast_column(t.column(f.name), source.field(f.name).type, f.type))
        else:
            arrays.append(pa.nulls(t.num_rows, arrow_type(f.type)))
    return pa.table(arrays, schema=_empty(target).schema)


def read_table(table, snapshot_id: int | None = None, predicate: Predicate | None = None,
               limit: int | None = None, progress=None, problems: list | None = None,
               columns: list[str] | None = None) -> pa.Table:
    """The rows of ``table`` at a snapshot (latest by default), like Paimon's batch read.

    The latest schema is used for the latest snapshot, the snapshot's own schema for time
    travel. Unreadable parts are appended to ``problems`` (a list) and skipped.
    """
    problems = problems if problems is not None else []
    plan = table.plan(snapshot_id)
    problems.extend(plan.problems)
    schema = table.read_schema(snapshot_id, plan.snapshot)
    result = _read_plan(table, plan, schema, problems, progress) if plan.snapshot is not None \
        else _empty(schema)
    fallback = schema.core_options.scan_fallback_branch
    if fallback and snapshot_id is None:
        try:
            branch = table.branch(fallback)
            bplan = branch.plan()
            problems.extend(bplan.problems)
            if bplan.snapshot is not None:
                bschema = branch.schema()
                main_parts = {lf.partition for lf in plan.files}
                extra = _read_plan(branch, bplan, bschema, problems, progress, skip_partitions=main_parts)
                if extra.num_rows:
                    result = pa.concat_tables([result, _conform(extra, bschema, schema)])
        except IndexCoreError as exc:
            _problem(problems, table.path, f"fallback branch {fallback!r}", exc)
    if predicate is not None:
        result = filter_table(result, predicate, schema)
    if columns is not None:
        result = result.select(columns)
    if limit is not None:
        result = result.slice(0, max(int(limit), 0))
    return result


def table_rows(table: pa.Table, schema: TableSchema) -> list[dict[str, Any]]:
    """Rows as dicts of internal values (columns of ``schema``; others as Arrow gives them)."""
    cols = {}
    for name in table.column_names:
        if name in schema.field_names:
            cols[name] = to_internal(table.column(name), schema.field(name).type)
        else:
            cols[name] = table.column(name).to_pylist()
    return [{n: cols[n][i] for n in table.column_names} for i in range(table.num_rows)]
