"""The one row-level predicate evaluator: vectorized over Arrow columns, with Paimon's semantics.

Used by the data reader, ``explain --verify``, the audit, what-if and the Spark jobs. A leaf
is answered column-at-a-time by a :class:`~indexcore.expr.functions.FunctionVisitor` over the
column's *keys*: keys order exactly like the internal values under Java's ``compareTo`` (int64
keys in numpy, or the Arrow array itself for strings, binaries and wide decimals), and a
literal becomes the interval ``[lo, hi]`` of keys equal to it (``lo > hi`` when no value of
the column can equal it):

* integers, DATE (days), TIME (millis, floored from finer units), BOOLEAN: the value itself;
* TIMESTAMP[_LTZ]: the stored count in the column's unit; a literal finer than the unit
  maps to ``[ceil, floor]`` of its nanoseconds over the unit, so TIMESTAMP(9) is exact;
* FLOAT/DOUBLE: the IEEE bits folded to a signed total order (``-0.0 < 0.0``), every NaN
  mapped to one key above ``+inf``, exactly ``Double.compareTo``;
* DECIMAL(p <= 18): the unscaled int64 (a literal scaled to the column, ceil/floor);
  DECIMAL(19..38): Arrow's exact decimal comparison against scaled literals;
* strings and binaries: Arrow's byte-wise comparison, which is UTF-8 = code point order.

Null rows are masked out afterwards, so Arrow's null propagation never leaks. A column or
literal with no key form is answered per value by the function's own ``test`` (the same
rule, one value at a time): nested, VARIANT and BLOB columns, Arrow layouts other than the
ones :func:`indexcore.types.values.arrow_type` produces (date64, fixed-size binary,
decimal256, ...), literals whose Python type does not belong to the column's type (an int
literal on a DOUBLE column is converted like Java; anything else is tested per value),
Timestamp literals with nanos outside ``[0, 1e6)``, non-finite decimal literals and strings
that are not valid UTF-8 (lone surrogates).
"""

from __future__ import annotations

import decimal
import math
import struct
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from indexcore.errors import PredicateError
from indexcore.expr.functions import FunctionVisitor
from indexcore.expr.tree import Leaf, Predicate
from indexcore.types import (
    BINARY_ROOTS,
    FLOAT_ROOTS,
    INTEGER_ROOTS,
    STRING_ROOTS,
    TIMESTAMP_ROOTS,
    DataType,
    Timestamp,
)
from indexcore.types.values import from_internal, to_internal

_I64_MIN, _I64_MAX = -(1 << 63), (1 << 63) - 1
_NAN_KEY = 0x7FF8_0000_0000_0000
_LOW63 = np.int64(_I64_MAX)
_DECIMAL_CONTEXT = decimal.Context(prec=200, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN)
_UNIT_NANOS = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1000, "ns": 1}


class _Fallback(Exception):
    """This leaf cannot be vectorized exactly; test it row by row."""


@dataclass(frozen=True)
class _Keys:
    """A column prepared for vectorized leaf tests (see the section comment)."""

    valid: np.ndarray
    bounds: Callable[[Any], tuple[Any, Any]]
    ge: Callable[[Any], np.ndarray]
    le: Callable[[Any], np.ndarray]
    isin: Callable[[list], np.ndarray]
    strings: pa.Array | None = None  # the column itself when it holds strings, for pattern tests


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

    keys = _arrow_keys(column, valid, bounds, lambda x: pa.scalar(x, column.type))
    if kind is str:
        return _Keys(keys.valid, keys.bounds, keys.ge, keys.le, keys.isin, column)
    return keys


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


class _MaskVisitor(FunctionVisitor):
    """A leaf's mask over prepared keys; raises :class:`_Fallback` for a literal it cannot map.

    NULL literals never reach it (null-false leaves are answered before; ``in`` drops them).
    """

    def __init__(self, keys: _Keys):
        self.keys = keys
        self.valid = keys.valid

    def _same(self, literal: Any) -> np.ndarray:
        lo, hi = self.keys.bounds(literal)
        return self.keys.ge(lo) & self.keys.le(hi)

    def _inside(self, low: Any, high: Any) -> np.ndarray:
        (lo, _), (_, hi) = self.keys.bounds(low), self.keys.bounds(high)
        return self.keys.ge(lo) & self.keys.le(hi)

    def _hits(self, literals: list) -> np.ndarray:
        exact = [lo for lo, hi in (self.keys.bounds(x) for x in literals) if lo == hi]
        return self.keys.isin(exact) if exact else np.zeros(len(self.valid), bool)

    def visit_is_null(self) -> np.ndarray:
        return ~self.valid

    def visit_is_not_null(self) -> np.ndarray:
        return self.valid

    def visit_equal(self, literal: Any) -> np.ndarray:
        return self.valid & self._same(literal)

    def visit_not_equal(self, literal: Any) -> np.ndarray:
        return self.valid & ~self._same(literal)

    def visit_less_than(self, literal: Any) -> np.ndarray:
        return self.valid & ~self.keys.ge(self.keys.bounds(literal)[0])

    def visit_less_or_equal(self, literal: Any) -> np.ndarray:
        return self.valid & self.keys.le(self.keys.bounds(literal)[1])

    def visit_greater_than(self, literal: Any) -> np.ndarray:
        return self.valid & ~self.keys.le(self.keys.bounds(literal)[1])

    def visit_greater_or_equal(self, literal: Any) -> np.ndarray:
        return self.valid & self.keys.ge(self.keys.bounds(literal)[0])

    def visit_in(self, literals: list) -> np.ndarray:
        return self.valid & self._hits(literals)

    def visit_not_in(self, literals: list) -> np.ndarray:
        return self.valid & ~self._hits(literals)

    def visit_between(self, low: Any, high: Any) -> np.ndarray:
        return self.valid & self._inside(low, high)

    def visit_not_between(self, low: Any, high: Any) -> np.ndarray:
        return self.valid & ~self._inside(low, high)

    def _pattern(self, kernel: Callable[..., pa.Array], literal: Any) -> np.ndarray:
        """Arrow's byte-wise string kernel (UTF-8 bytes, as Paimon's ``BinaryString``)."""
        if self.keys.strings is None:
            raise _Fallback
        self.keys.bounds(literal)  # _Fallback unless a valid UTF-8 string
        return self.valid & kernel(self.keys.strings, literal).fill_null(False).to_numpy(zero_copy_only=False)

    def visit_starts_with(self, literal: Any) -> np.ndarray:
        return self._pattern(pc.starts_with, literal)

    def visit_ends_with(self, literal: Any) -> np.ndarray:
        return self._pattern(pc.ends_with, literal)

    def visit_contains(self, literal: Any) -> np.ndarray:
        return self._pattern(pc.match_substring, literal)

    def unanswered(self) -> np.ndarray:
        raise _Fallback


@dataclass(frozen=True)
class _NullsOnly:
    """The keys of a column for ``isNull`` / ``isNotNull``, which read only validity."""

    valid: np.ndarray


class _Columns:
    """The predicate's columns of one table, prepared lazily (keys, or internal values)."""

    def __init__(self, table: pa.Table, row_type: Mapping[str, DataType]):
        self.table = table
        self.row_type = row_type
        self.keys: dict[str, _Keys | None] = {}
        self.values: dict[str, list] = {}

    def dtype(self, name: str) -> DataType:
        return self.row_type.get(name) or DataType("BIGINT")

    def column(self, name: str) -> pa.Array:
        col = self.table.column(name)
        return col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)

    def leaf(self, leaf: Leaf) -> np.ndarray:
        fn, name, literals = leaf.function, leaf.field, leaf.literals
        if fn.null_false(literals):
            return np.zeros(self.table.num_rows, bool)
        if fn.arity == 0:
            return fn.visit(_MaskVisitor(_NullsOnly(self.column(name).is_valid().to_numpy(zero_copy_only=False))),
                            literals)
        if name not in self.keys:
            self.keys[name] = _prepare(self.column(name), self.dtype(name))
        keys = self.keys[name]
        if keys is not None:
            try:
                return fn.visit(_MaskVisitor(keys), [x for x in literals if x is not None])
            except _Fallback:
                pass
        return self.per_value(leaf)

    def per_value(self, leaf: Leaf) -> np.ndarray:
        """The leaf's function tested on each internal value (no key form for this column or literal)."""
        if leaf.field not in self.values:
            self.values[leaf.field] = to_internal(self.table.column(leaf.field), self.dtype(leaf.field))
        fn, literals = leaf.function, leaf.literals
        return np.fromiter((fn.test(v, literals) for v in self.values[leaf.field]), bool, self.table.num_rows)


def _eval(pred: Predicate, columns: _Columns, n: int) -> np.ndarray:
    if isinstance(pred, Leaf):
        return columns.leaf(pred)
    fn = pred.function
    out = np.full(n, fn.empty)
    for child in pred.children:
        out = fn.combine(out, _eval(child, columns, n))
    return out


def _row_type(schema: Any) -> Mapping[str, DataType]:
    """A row type from a :class:`~indexcore.warehouse.model.TableSchema` or a name -> type mapping."""
    return schema.row_type() if hasattr(schema, "row_type") else schema


def mask(table: pa.Table, predicate: Predicate, schema: Any) -> np.ndarray:
    """Per row of ``table``: does ``predicate`` hold? A numpy bool array; NULL never matches
    except ``isNull`` (Paimon's semantics). ``schema``: TableSchema or name -> DataType."""
    for name in predicate.fields():
        if name not in table.column_names:
            raise PredicateError(f"unknown column {name!r}")
    return _eval(predicate, _Columns(table, _row_type(schema)), table.num_rows)


def filter_table(table: pa.Table, predicate: Predicate | None, schema: Any) -> pa.Table:
    """The rows of ``table`` where ``predicate`` holds."""
    if predicate is None or table.num_rows == 0:
        return table
    return table.filter(pa.array(mask(table, predicate, schema), pa.bool_()))


def rows_matching(predicate: Predicate, rows: Sequence[Mapping[str, Any]], schema: Any) -> np.ndarray:
    """Per row of internal values (partition tuples, say; a missing field is NULL): does
    ``predicate`` hold? The rows become one Arrow table, evaluated like any other."""
    row_type = _row_type(schema)
    dtypes = {n: row_type.get(n) or DataType("BIGINT") for n in sorted(predicate.fields())}
    table = pa.table({n: from_internal([row.get(n) for row in rows], t) for n, t in dtypes.items()}
                     if dtypes else {"_": pa.nulls(len(rows))})
    return mask(table, predicate, dtypes)


def row_matches(predicate: Predicate, row: Mapping[str, Any], schema: Any) -> bool:
    """:func:`rows_matching` for one row."""
    return bool(rows_matching(predicate, [row], schema)[0])
