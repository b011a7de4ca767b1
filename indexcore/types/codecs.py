"""Codecs between internal values and JSON (the golden vectors' shapes), Python values and text."""

from __future__ import annotations

import datetime as _dt
import decimal
import math
import struct
from typing import Any

import numpy as np

from indexcore.errors import PredicateError
from indexcore.types.data_type import (
    BINARY_ROOTS,
    FLOAT_ROOTS,
    INT_BITS,
    INTEGER_ROOTS,
    STRING_ROOTS,
    TIMESTAMP_ROOTS,
    DataType,
)
from indexcore.types.keys import decimal_from_unscaled
from indexcore.types.timestamp import (
    EPOCH,
    EPOCH_DATE,
    MILLIS_PER_DAY,
    Timestamp,
    parse_timestamp_text,
    time_millis,
)


def float32(value: float) -> float:
    """Round a Python float to the nearest float32, as Paimon's FLOAT holds it."""
    return struct.unpack(">f", struct.pack(">f", value))[0]



def _parse_float(dtype: DataType, value: Any) -> float:
    if isinstance(value, str):
        low = value.strip().lower()
        mapping = {"nan": math.nan, "infinity": math.inf, "+infinity": math.inf, "-infinity": -math.inf,
                   "inf": math.inf, "-inf": -math.inf}
        f = mapping[low] if low in mapping else float(value)
    else:
        f = float(value)
    return float32(f) if dtype.root == "FLOAT" else f


def from_json(dtype: DataType, value: Any, raw: Any = None) -> Any:
    """An internal value from the golden vectors' JSON encoding (``raw`` wins where given)."""
    if value is None and raw is None:
        return None
    r = dtype.root
    if r in FLOAT_ROOTS:
        if isinstance(raw, str):
            bits = int(raw, 16)
            if r == "FLOAT":
                return struct.unpack(">f", bits.to_bytes(4, "big"))[0]
            return struct.unpack(">d", bits.to_bytes(8, "big"))[0]
        return _parse_float(dtype, value)
    if r in TIMESTAMP_ROOTS and raw is not None:
        return Timestamp(int(raw[0]), int(raw[1]))
    if r in ("DATE", "TIME") and raw is not None:
        return int(raw) if isinstance(raw, int) else from_text_or_python(dtype, raw)
    if r == "DECIMAL" and raw is not None:
        return decimal_from_unscaled(dtype, int(raw))
    return from_text_or_python(dtype, value)


def _parse_temporal_text(dtype: DataType, text: str) -> Any:
    r = dtype.root
    text = text.strip()
    try:
        if r == "DATE":
            return (_dt.date.fromisoformat(text) - EPOCH_DATE).days
        if r == "TIME":
            hh, mm, rest = (text.split(":") + ["0"])[:3]
            sec, _, frac = rest.partition(".")
            return ((int(hh) * 60 + int(mm)) * 60 + int(sec)) * 1000 + int((frac + "000")[:3])
        return parse_timestamp_text(text, ltz=dtype.is_ltz)
    except (ValueError, IndexError) as exc:
        raise PredicateError(f"{text!r} is not a valid {dtype.sql()}") from exc


def from_text_or_python(dtype: DataType, value: Any) -> Any:
    """Coerce a Python value or literal text to the internal value of ``dtype``.

    Raises :class:`PredicateError` when the value does not fit the type.
    """
    if value is None:
        return None
    r = dtype.root
    try:
        if r in INTEGER_ROOTS:
            if isinstance(value, bool):
                raise ValueError("boolean")
            if isinstance(value, float) and not value.is_integer():
                raise ValueError("not an integer")
            iv = int(value) if not isinstance(value, str) else int(value.strip())
            bits = INT_BITS[r]
            if not -(1 << (bits - 1)) <= iv < (1 << (bits - 1)):
                raise ValueError(f"out of range for {r}")
            return iv
        if r in FLOAT_ROOTS:
            if isinstance(value, bool):
                raise ValueError("boolean")
            return _parse_float(dtype, value)
        if r in STRING_ROOTS:
            if isinstance(value, bytes):
                return value.decode("utf-8")
            if not isinstance(value, str):
                raise ValueError("not a string")
            return value
        if r in BINARY_ROOTS:
            return value if isinstance(value, bytes) else str(value).encode("utf-8")
        if r == "BOOLEAN":
            if isinstance(value, bool):
                return value
            if isinstance(value, str) and value.strip().lower() in ("true", "false"):
                return value.strip().lower() == "true"
            if isinstance(value, int) and value in (0, 1):
                return bool(value)
            raise ValueError("not a boolean")
        if r == "DATE":
            if isinstance(value, _dt.datetime):
                return (value.date() - EPOCH_DATE).days
            if isinstance(value, _dt.date):
                return (value - EPOCH_DATE).days
            if isinstance(value, int) and not isinstance(value, bool):
                return value
            return _parse_temporal_text(dtype, str(value))
        if r == "TIME":
            if isinstance(value, _dt.time):
                return time_millis(value)
            if isinstance(value, int) and not isinstance(value, bool):
                return value
            return _parse_temporal_text(dtype, str(value))
        if r in TIMESTAMP_ROOTS:
            if isinstance(value, Timestamp):
                return value
            if isinstance(value, _dt.datetime):
                return Timestamp.from_datetime(value)
            if isinstance(value, _dt.date):
                return Timestamp((value - EPOCH_DATE).days * MILLIS_PER_DAY, 0)
            return _parse_temporal_text(dtype, str(value))
        if r == "DECIMAL":
            if isinstance(value, bool):
                raise ValueError("boolean")
            dv = value if isinstance(value, decimal.Decimal) else decimal.Decimal(str(value).strip())
            if not dv.is_finite():
                raise ValueError("not finite")
            q = dv.quantize(decimal.Decimal(1).scaleb(-(dtype.scale or 0)), rounding=decimal.ROUND_HALF_UP)
            if len(q.as_tuple().digits) > (dtype.precision or 38) and q != 0:
                raise ValueError(f"does not fit DECIMAL({dtype.precision}, {dtype.scale})")
            return q
    except PredicateError:
        raise
    except (ValueError, TypeError, decimal.InvalidOperation, OverflowError) as exc:
        raise PredicateError(f"{value!r} is not a valid {dtype.sql()}: {exc}") from exc
    raise PredicateError(f"values of type {dtype.sql()} are not supported here")


def to_python(dtype: DataType, value: Any) -> Any:
    """A display / Arrow-friendly Python value (date, time, datetime, Decimal, ...)."""
    if value is None:
        return None
    r = dtype.root
    try:
        if r == "DATE":
            return EPOCH_DATE + _dt.timedelta(days=value)
        if r == "TIME":
            return (EPOCH + _dt.timedelta(milliseconds=value)).time()
        if r in TIMESTAMP_ROOTS:
            dtv = value.to_datetime()
            return dtv.replace(tzinfo=_dt.UTC) if r == "TIMESTAMP_LTZ" else dtv
    except (OverflowError, ValueError):
        return value  # beyond Python's datetime range (year 1..9999): keep the internal value
    return value


def json_as_is(dtype: DataType) -> bool:
    """Whether :func:`to_json_value` gives every value of ``dtype`` back unchanged (integers, text,
    booleans): a caller of thousands of values skips the call."""
    return dtype.root not in (*FLOAT_ROOTS, "DATE", "TIME", *TIMESTAMP_ROOTS, "DECIMAL", *BINARY_ROOTS)


def to_json_value(dtype: DataType, value: Any) -> Any:
    """A JSON-serialisable form (the same shapes the golden vectors use)."""
    if value is None:
        return None
    r = dtype.root
    if r in FLOAT_ROOTS:
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return value
    if r in ("DATE", "TIME"):
        py = to_python(dtype, value)
        if isinstance(py, int):
            return py
        return py.isoformat() if r == "DATE" else py.strftime("%H:%M:%S")
    if r in TIMESTAMP_ROOTS:
        return str(value) + ("Z" if dtype.is_ltz else "")
    if r == "DECIMAL":
        return str(value)
    if r in BINARY_ROOTS:
        return value.hex()
    return value


# epoch milliseconds Python's datetime can show (years 1..9999); ``Timestamp.__str__`` falls back outside
_SHOWN_MILLIS = (-62_135_596_800_000, 253_402_300_799_999)


_FORMATTED = 1 << 16  # timestamps formatted together by numpy at most (at 1,000,000 files: slices)


def to_json_values(dtype: DataType, values: list) -> list:
    """:func:`to_json_value` over a column of one type. Timestamps are formatted together by numpy
    (a millisecond text without its trailing zeros), which a frame of tens of thousands of files'
    min / max needs; one with nanoseconds, or outside years 1..9999, as one value."""
    if dtype.root not in TIMESTAMP_ROOTS:
        return [to_json_value(dtype, v) for v in values]
    suffix = "Z" if dtype.is_ltz else ""
    low, high = _SHOWN_MILLIS
    shown = [v is not None and v.nanos == 0 and low <= v.millis <= high for v in values]
    texts = iter(_millis_texts(np.fromiter((v.millis for v, ok in zip(values, shown, strict=True) if ok), np.int64)))
    return [next(texts) + suffix if ok else (None if v is None else str(v) + suffix)
            for v, ok in zip(values, shown, strict=True)]


def millis_json_values(dtype: DataType, millis: np.ndarray) -> list[str]:
    """:func:`to_json_values` of ``Timestamp(m, 0)`` for each of ``millis`` (epoch milliseconds, a
    timestamp column's ``dtype``), formatted off the numbers: no Timestamp made per value."""
    suffix = "Z" if dtype.is_ltz else ""
    low, high = _SHOWN_MILLIS
    shown = (millis >= low) & (millis <= high)
    if shown.all():
        texts = _millis_texts(millis)
        return [t + suffix for t in texts] if suffix else texts
    texts = iter(_millis_texts(millis[shown]))
    return [next(texts) + suffix if ok else str(Timestamp(m, 0)) + suffix
            for m, ok in zip(millis.tolist(), shown.tolist(), strict=True)]


def _millis_texts(millis: np.ndarray) -> list[str]:
    """Epoch milliseconds (years 1..9999) as ISO texts without trailing zeros ("…:17.300" -> "…:17.3")."""
    made: list[str] = []
    for lo in range(0, len(millis), _FORMATTED):  # numpy's fixed-width texts a slice at a time, not 3 x 92 MB
        text = np.datetime_as_string(millis[lo:lo + _FORMATTED].astype("datetime64[ms]"), unit="ms")
        made.extend(np.char.rstrip(np.char.rstrip(text, "0"), ".").tolist())
    return made
