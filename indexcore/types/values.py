"""Arrow columns <-> internal values, and Paimon's casts for columns whose type was altered.

A data file written under an older schema is read through the current schema; a changed
column type is cast value by value the way Paimon's ``CastExecutors`` do (session time zone
taken as UTC for ``TIMESTAMP_LTZ``).
"""

from __future__ import annotations

import datetime as _dt
import decimal
import math
from collections.abc import Callable
from typing import Any

import pyarrow as pa

from indexcore.errors import UnsupportedError
from indexcore.types import (
    BINARY_ROOTS,
    EPOCH,
    EPOCH_DATE,
    FLOAT_ROOTS,
    INT_BITS,
    INTEGER_ROOTS,
    MAX_LENGTH,
    MILLIS_PER_DAY,
    STRING_ROOTS,
    TIMESTAMP_ROOTS,
    DataType,
    Timestamp,
    float32,
    to_json_value,
)
from indexcore.types.timestamp import time_millis


def _ts_unit(dtype: DataType) -> str:
    p = dtype.precision if dtype.precision is not None else 6
    return "ms" if p <= 3 else "us" if p <= 6 else "ns"


def arrow_type(dtype: DataType) -> pa.DataType:
    """The Arrow type a column of ``dtype`` is returned as."""
    r = dtype.root
    simple = {"BOOLEAN": pa.bool_(), "TINYINT": pa.int8(), "SMALLINT": pa.int16(), "INT": pa.int32(),
              "BIGINT": pa.int64(), "FLOAT": pa.float32(), "DOUBLE": pa.float64(), "DATE": pa.date32(),
              "TIME": pa.time32("ms"), "VARIANT": pa.binary(), "BLOB": pa.binary()}
    if r in simple:
        return simple[r]
    if r in STRING_ROOTS:
        return pa.string()
    if r in BINARY_ROOTS:
        return pa.binary()
    if r == "TIMESTAMP":
        return pa.timestamp(_ts_unit(dtype))
    if r == "TIMESTAMP_LTZ":
        return pa.timestamp(_ts_unit(dtype), tz="UTC")
    if r == "DECIMAL":
        p = dtype.precision or 10
        return pa.decimal128(p, dtype.scale or 0) if p <= 38 else pa.decimal256(p, dtype.scale or 0)
    if r in ("ARRAY", "VECTOR"):
        return pa.list_(arrow_type(dtype.element))
    if r == "MULTISET":
        return pa.map_(arrow_type(dtype.element), pa.int32())
    if r == "MAP":
        return pa.map_(arrow_type(dtype.key), arrow_type(dtype.value))
    if r == "ROW":
        return pa.struct([pa.field(f.name, arrow_type(f.type)) for f in dtype.fields])
    raise UnsupportedError(f"no Arrow type for {dtype}")


_UNIT_NANOS = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1000, "ns": 1}


def _python_to_internal(dtype: DataType, v: Any) -> Any:
    """A value from ``to_pylist`` (datetime, date, pandas Timestamp...) to the internal form."""
    if v is None:
        return None
    r = dtype.root
    if r == "DATE":
        return (v - EPOCH_DATE).days if isinstance(v, _dt.date) else int(v)
    if r == "TIME":
        return time_millis(v) if isinstance(v, _dt.time) else int(v)
    if r in TIMESTAMP_ROOTS:
        if hasattr(v, "value") and hasattr(v, "nanosecond"):
            return Timestamp.from_nanos(int(v.value))
        return Timestamp.from_datetime(v) if isinstance(v, _dt.datetime) else v
    if r in ("ARRAY", "VECTOR"):
        return [_python_to_internal(dtype.element, e) for e in v]
    if r == "MULTISET":
        return [(_python_to_internal(dtype.element, k), c) for k, c in v]
    if r == "MAP":
        return [(_python_to_internal(dtype.key, k), _python_to_internal(dtype.value, x)) for k, x in v]
    if r == "ROW":
        return {f.name: _python_to_internal(f.type, v.get(f.name)) for f in dtype.fields}
    return v


def to_internal(column: pa.Array | pa.ChunkedArray, dtype: DataType) -> list:
    """Internal values (see :mod:`indexcore.types`) of one Arrow column of type ``dtype``."""
    t = column.type
    if dtype.root in TIMESTAMP_ROOTS and pa.types.is_timestamp(t):
        scale = _UNIT_NANOS[t.unit]
        return [None if x is None else Timestamp.from_nanos(x * scale)
                for x in column.cast(pa.int64()).to_pylist()]
    if dtype.root == "DATE" and pa.types.is_date32(t):
        return column.cast(pa.int32()).to_pylist()
    if dtype.root == "TIME" and pa.types.is_time(t):
        div = {"s": 1 / 1000, "ms": 1, "us": 1000, "ns": 1_000_000}[t.unit]
        raw = column.cast(pa.int64() if pa.types.is_time64(t) else pa.int32()).to_pylist()
        return [None if x is None else int(x // div) if div >= 1 else int(x * 1000) for x in raw]
    return [_python_to_internal(dtype, v) for v in column.to_pylist()]


def _internal_to_python(dtype: DataType, v: Any) -> Any:
    if v is None:
        return None
    r = dtype.root
    if r == "DATE":
        return EPOCH_DATE + _dt.timedelta(days=v)
    if r == "TIME":
        return (EPOCH + _dt.timedelta(milliseconds=v)).time()
    if r in TIMESTAMP_ROOTS:
        return v.to_datetime()
    if r in ("ARRAY", "VECTOR"):
        return [_internal_to_python(dtype.element, e) for e in v]
    if r == "MULTISET":
        return [(_internal_to_python(dtype.element, k), c) for k, c in v]
    if r == "MAP":
        return [(_internal_to_python(dtype.key, k), _internal_to_python(dtype.value, x)) for k, x in v]
    if r == "ROW":
        return {f.name: _internal_to_python(f.type, v.get(f.name)) for f in dtype.fields}
    return v


def from_internal(values: list, dtype: DataType) -> pa.Array:
    """An Arrow array of :func:`arrow_type` from internal values (timestamps keep their nanos)."""
    target = arrow_type(dtype)
    r = dtype.root
    if r in TIMESTAMP_ROOTS:
        scale = _UNIT_NANOS[target.unit]
        ints = [None if v is None else v.to_nanos() // scale for v in values]
        return pa.array(ints, pa.int64()).cast(target)
    if r == "DATE":
        return pa.array(values, pa.int32()).cast(target)
    if r == "TIME":
        return pa.array(values, pa.int32()).cast(target)
    if r == "DECIMAL":
        q = decimal.Decimal(1).scaleb(-(dtype.scale or 0))
        wide = decimal.Context(prec=80)  # DECIMAL(38+) values exceed the default 28 digits
        return pa.array([None if v is None else decimal.Decimal(v).quantize(q, context=wide) for v in values],
                        target)
    if dtype.is_nested:
        return pa.array([_internal_to_python(dtype, v) for v in values], target)
    return pa.array(values, target)


def json_value(dtype: DataType, value: Any) -> Any:
    """JSON-friendly form of an internal value; maps become ``[[key, value], ...]``."""
    if value is None:
        return None
    r = dtype.root
    if r in ("ARRAY", "VECTOR"):
        return [json_value(dtype.element, e) for e in value]
    if r == "MULTISET":
        return [[json_value(dtype.element, k), c] for k, c in value]
    if r == "MAP":
        return [[json_value(dtype.key, k), json_value(dtype.value, x)] for k, x in value]
    if r == "ROW":
        return {f.name: json_value(f.type, value.get(f.name)) for f in dtype.fields}
    if r in ("VARIANT", "BLOB"):
        return value.hex() if isinstance(value, bytes | bytearray) else value
    return to_json_value(dtype, value)


# ---------------------------------------------------------------------------------------
# Casts (Paimon's CastExecutors, value by value).


def _java_div(a: int, b: int) -> int:
    """Java's integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _wrap(value: int, root: str) -> int:
    bits = INT_BITS[root]
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >= 1 << (bits - 1) else value


def _double_to_int(value: float, root: str) -> int:
    """Java ``(int)``/``(long)`` of a double (NaN -> 0, saturating), then narrowed."""
    if math.isnan(value):
        return 0
    wide = 64 if root == "BIGINT" else 32
    lo, hi = -(1 << (wide - 1)), (1 << (wide - 1)) - 1
    iv = hi if value >= hi else lo if value <= lo else int(value)
    return _wrap(iv, root)


def _java_double_str(value: float, is_float: bool) -> str:
    """Java's ``Double.toString`` / ``Float.toString`` (shortest repr, E-notation outside 1e-3..1e7)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1, value) < 0 else "0.0"
    text = repr(value) if not is_float else f"{value:.9g}"
    if is_float:
        for digits in range(1, 10):
            candidate = f"{value:.{digits}g}"
            if float32(float(candidate)) == value:
                text = candidate
                break
    d = decimal.Decimal(text)
    if 1e-3 <= abs(value) < 1e7:
        s = format(d, "f")
        return s if "." in s else s + ".0"
    sign, digits, exp = d.normalize().as_tuple()
    mant = "".join(map(str, digits))
    e = exp + len(mant) - 1
    frac = mant[1:] or "0"
    return f"{'-' if sign else ''}{mant[0]}.{frac}E{e}"


def format_timestamp(ts: Timestamp, precision: int) -> str:
    """``yyyy-MM-dd HH:mm:ss[.fraction]`` with trailing zeros cut down to ``precision`` digits."""
    base = EPOCH + _dt.timedelta(milliseconds=ts.millis)
    frac = f"{(ts.millis % 1000) * 1_000_000 + ts.nanos:09d}"
    while len(frac) > precision and frac.endswith("0"):
        frac = frac[:-1]
    return base.strftime("%Y-%m-%d %H:%M:%S") + (f".{frac}" if frac else "")


def _format_time(millis: int, precision: int) -> str:
    t = (EPOCH + _dt.timedelta(milliseconds=millis)).time()
    s = t.strftime("%H:%M:%S")
    if precision > 0:
        s += "." + f"{millis % 1000:03d}"[:min(precision, 3)].ljust(precision, "0")[:precision]
    return s


def _truncate_ts(ts: Timestamp, precision: int) -> Timestamp:
    if precision >= 9:
        return ts
    if precision <= 3:
        step = 10 ** (3 - precision)
        return Timestamp(_java_div(ts.millis, step) * step, 0)
    step = 10 ** (9 - precision)
    return Timestamp(ts.millis, (ts.nanos // step) * step)


def _fit_decimal(value: decimal.Decimal, dst: DataType) -> decimal.Decimal | None:
    """Round half-up to the target scale; null when it no longer fits the precision."""
    q = value.quantize(decimal.Decimal(1).scaleb(-(dst.scale or 0)), rounding=decimal.ROUND_HALF_UP)
    if q != 0 and len(q.as_tuple().digits) > (dst.precision or 10):
        return None
    return q


_TRUE = {"t", "true", "y", "yes", "1"}
_FALSE = {"f", "false", "n", "no", "0"}


def _string_to_timestamp(text: str, precision: int) -> Timestamp | None:
    text = text.strip()
    try:
        date_part, _, time_part = text.replace("T", " ").partition(" ")
        y, m, d = (int(x) for x in date_part.split("-"))
        hh = mm = ss = 0
        nanos = 0
        if time_part:
            pieces = time_part.split(":")
            hh, mm = int(pieces[0]), int(pieces[1])
            sec = pieces[2] if len(pieces) > 2 else "0"
            whole, _, frac = sec.partition(".")
            ss = int(whole)
            nanos = int(frac.ljust(9, "0")[:9]) if frac else 0
        base = _dt.datetime(y, m, d, hh, mm, ss)
    except (ValueError, IndexError):
        return None
    step = 10 ** (9 - min(max(precision, 0), 9))
    nanos = nanos // step * step
    delta = base - EPOCH
    secs = delta.days * 86400 + delta.seconds
    return Timestamp(secs * 1000 + nanos // 1_000_000, nanos % 1_000_000)


def _string_to_number(text: str, root: str) -> Any:
    text = text.strip()
    try:
        if root in FLOAT_ROOTS:
            v = float(text)
            return float32(v) if root == "FLOAT" else v
        d = decimal.Decimal(text)
        if not d.is_finite():
            return None
        iv = int(d)
        bits = INT_BITS[root]
        return iv if -(1 << (bits - 1)) <= iv < (1 << (bits - 1)) else None
    except (ValueError, decimal.InvalidOperation):
        return None


def _pad_or_trim(text: str, dst: DataType) -> str:
    n = dst.length if dst.length is not None else MAX_LENGTH
    if dst.root == "CHAR":
        return text[:n].ljust(n)
    return text[:n]


def caster(src: DataType, dst: DataType) -> Callable[[Any], Any] | None:
    """A function casting internal values of ``src`` to ``dst``; ``None`` when they are the same."""
    if _same_type(src, dst):
        return None
    if src.is_nested or dst.is_nested:
        raise UnsupportedError(f"cast from {src} to {dst} is not supported")
    fn = _resolve_cast(src, dst)
    if fn is None:
        raise UnsupportedError(f"cast from {src} to {dst} is not supported")
    return fn


def _same_type(a: DataType, b: DataType) -> bool:
    """Equal ignoring nullability (nested field ids and descriptions do not matter either)."""
    return a.sql().replace(" NOT NULL", "") == b.sql().replace(" NOT NULL", "")


def _resolve_cast(src: DataType, dst: DataType) -> Callable[[Any], Any] | None:  # noqa: C901
    s, d = src.root, dst.root
    numeric = INTEGER_ROOTS + FLOAT_ROOTS
    if s == "DECIMAL" and d == "DECIMAL":
        return lambda v: _fit_decimal(v, dst)
    if s in numeric and d == "DECIMAL":
        return lambda v: _fit_decimal(decimal.Decimal(repr(v)) if isinstance(v, float) else decimal.Decimal(v),
                                      dst)
    if s == "DECIMAL" and d in numeric:
        if d in FLOAT_ROOTS:
            return lambda v: float32(float(v)) if d == "FLOAT" else float(v)
        return lambda v: _wrap(int(v), d)
    if s in numeric and d in numeric:
        if d in FLOAT_ROOTS:
            return lambda v: float32(float(v)) if d == "FLOAT" else float(v)
        if s in FLOAT_ROOTS:
            return lambda v: _double_to_int(v, d)
        return lambda v: _wrap(v, d)
    if s in ("INT", "BIGINT") and d in TIMESTAMP_ROOTS:
        return lambda v: Timestamp(v * 1000, 0)
    if s == "BOOLEAN" and d in numeric:
        return lambda v: (1.0 if v else 0.0) if d in FLOAT_ROOTS else int(bool(v))
    if s in numeric and d == "BOOLEAN":
        return lambda v: v != 0
    if d in STRING_ROOTS:
        if s in INTEGER_ROOTS:
            to_text = str
        elif s in FLOAT_ROOTS:
            def to_text(v):
                return _java_double_str(v, s == "FLOAT")
        elif s == "DECIMAL":
            def to_text(v):
                return format(v, "f")
        elif s == "BOOLEAN":
            def to_text(v):
                return "true" if v else "false"
        elif s in TIMESTAMP_ROOTS:
            def to_text(v):
                return format_timestamp(v, src.precision if src.precision is not None else 6)
        elif s == "TIME":
            def to_text(v):
                return _format_time(v, src.precision or 0)
        elif s == "DATE":
            def to_text(v):
                return (EPOCH_DATE + _dt.timedelta(days=v)).isoformat()
        elif s in STRING_ROOTS:
            to_text = str
        elif s in BINARY_ROOTS:
            def to_text(v):
                return v.decode("utf-8", errors="replace")
        else:
            return None
        return lambda v: _pad_or_trim(to_text(v), dst)
    if s in STRING_ROOTS:
        if d == "BOOLEAN":
            def to_bool(v):
                low = v.strip().lower()
                return True if low in _TRUE else False if low in _FALSE else None
            return to_bool
        if d == "DECIMAL":
            def to_dec(v):
                try:
                    return _fit_decimal(decimal.Decimal(v.strip()), dst)
                except decimal.InvalidOperation:
                    return None
            return to_dec
        if d in numeric:
            return lambda v: _string_to_number(v, d)
        if d == "DATE":
            def to_date(v):
                try:
                    return (_dt.date.fromisoformat(v.strip().split(" ")[0].split("T")[0]) - EPOCH_DATE).days
                except ValueError:
                    return None
            return to_date
        if d == "TIME":
            def to_time(v):
                try:
                    t = _dt.time.fromisoformat(v.strip())
                except ValueError:
                    return None
                return time_millis(t)
            return to_time
        if d in TIMESTAMP_ROOTS:
            return lambda v: _string_to_timestamp(v, dst.precision if dst.precision is not None else 6)
        if d in BINARY_ROOTS:
            return lambda v: _fit_binary(v.encode("utf-8"), dst)
    if s in TIMESTAMP_ROOTS:
        if d in TIMESTAMP_ROOTS:
            p = dst.precision if dst.precision is not None else 6
            return lambda v: _truncate_ts(v, p)
        if d == "DATE":
            if s == "TIMESTAMP":
                return lambda v: _java_div(v.millis, MILLIS_PER_DAY)
            return lambda v: v.millis // MILLIS_PER_DAY
        if d == "TIME":
            return lambda v: v.millis % MILLIS_PER_DAY
        if d in ("INT", "BIGINT"):
            return lambda v: _wrap(_java_div(v.millis, 1000), d)
    if s == "DATE" and d in TIMESTAMP_ROOTS:
        return lambda v: Timestamp(v * MILLIS_PER_DAY, 0)
    if s == "TIME" and d in TIMESTAMP_ROOTS:
        return lambda v: Timestamp(v, 0)
    if s in BINARY_ROOTS and d in BINARY_ROOTS:
        return lambda v: _fit_binary(v, dst)
    return None


def _fit_binary(value: bytes, dst: DataType) -> bytes:
    n = dst.length if dst.length is not None else MAX_LENGTH
    if dst.root == "BINARY":
        return value[:n].ljust(n, b"\0")
    return value[:n]


def cast_column(column: pa.Array | pa.ChunkedArray, src: DataType, dst: DataType) -> pa.Array:
    """One file column (of ``src``) as ``dst``: cast like Paimon, returned as :func:`arrow_type`."""
    fn = caster(src, dst)
    target = arrow_type(dst)
    if fn is None:
        if column.type == target:
            return column
        try:
            return column.cast(target)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return from_internal(to_internal(column, src), dst)
    values = to_internal(column, src)
    return from_internal([None if v is None else fn(v) for v in values], dst)
