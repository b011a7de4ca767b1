"""Paimon data types, parsed from their SQL strings, and the value codecs the indexes need.

Internal values (what every format, predicate and evaluator works with) follow Paimon's
internal data structures:

=====================  ===========================================================
type                   internal Python value
=====================  ===========================================================
TINYINT..BIGINT        ``int``
FLOAT, DOUBLE          ``float`` (``-0.0`` and NaN kept; FLOAT values are float32-exact)
CHAR, VARCHAR, STRING  ``str`` (the index never pads CHAR)
BINARY, VARBINARY      ``bytes``
BOOLEAN                ``bool``
DATE                   ``int`` days since 1970-01-01
TIME(p)                ``int`` milliseconds of the day
TIMESTAMP(p)[_LTZ]     :class:`Timestamp` (epoch millis, nanos of the milli)
DECIMAL(p, s)          ``decimal.Decimal``
=====================  ===========================================================
"""

from __future__ import annotations

import datetime as _dt
import decimal
import json
import math
import re
import struct
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from indexcore.errors import PredicateError, UnsupportedError

EPOCH_DATE = _dt.date(1970, 1, 1)
EPOCH = _dt.datetime(1970, 1, 1)
MILLIS_PER_DAY = 86_400_000

INTEGER_ROOTS = ("TINYINT", "SMALLINT", "INT", "BIGINT")
FLOAT_ROOTS = ("FLOAT", "DOUBLE")
STRING_ROOTS = ("CHAR", "VARCHAR")
BINARY_ROOTS = ("BINARY", "VARBINARY")
TIMESTAMP_ROOTS = ("TIMESTAMP", "TIMESTAMP_LTZ")
INT_BITS = {"TINYINT": 8, "SMALLINT": 16, "INT": 32, "BIGINT": 64}
_ALIASES = {"INTEGER": "INT", "STRING": "VARCHAR", "BYTES": "VARBINARY", "DEC": "DECIMAL",
            "NUMERIC": "DECIMAL", "REAL": "FLOAT", "DOUBLE PRECISION": "DOUBLE"}
MAX_LENGTH = 2_147_483_647


@dataclass(frozen=True, order=True)
class Timestamp:
    """Paimon's ``Timestamp``: epoch milliseconds plus nanoseconds within that millisecond."""

    millis: int
    nanos: int = 0

    @classmethod
    def of_millis(cls, millis: list[int]) -> list[Timestamp]:
        """``[Timestamp(m, 0) for m in millis]``, made without the frozen ``__init__``'s checked sets:
        a column of stats (9,104 files' min and max) made them in 4 ms, this in about half."""
        new = object.__new__
        made = [new(cls) for _ in millis]
        for ts, m in zip(made, millis, strict=True):
            ts.__dict__.update(millis=m, nanos=0)
        return made

    @classmethod
    def from_micros(cls, micros: int) -> Timestamp:
        return cls(micros // 1000, (micros % 1000) * 1000)

    @classmethod
    def from_nanos(cls, nanos: int) -> Timestamp:
        return cls(nanos // 1_000_000, nanos % 1_000_000)

    def to_micros(self) -> int:
        return self.millis * 1000 + self.nanos // 1000

    def to_nanos(self) -> int:
        return self.millis * 1_000_000 + self.nanos

    def to_datetime(self) -> _dt.datetime:
        """Naive datetime (microsecond precision; nanos below a microsecond are dropped)."""
        return EPOCH + _dt.timedelta(microseconds=self.to_micros())

    def __str__(self) -> str:
        try:
            base = EPOCH + _dt.timedelta(milliseconds=self.millis)
        except OverflowError:
            return f"Timestamp(millis={self.millis}, nanos={self.nanos})"
        frac = f"{(self.millis % 1000) * 1_000_000 + self.nanos:09d}".rstrip("0")
        return base.isoformat(timespec="seconds") + (f".{frac}" if frac else "")  # four-digit years, as Java


@dataclass(frozen=True)
class DataField:
    """A named field of a ROW type or a table schema (``id`` is Paimon's field id)."""

    id: int
    name: str
    type: DataType
    description: str | None = None


@dataclass(frozen=True)
class DataType:
    """A Paimon data type. ``root`` is the canonical type name (``STRING`` is ``VARCHAR``)."""

    root: str
    nullable: bool = True
    length: int | None = None
    precision: int | None = None
    scale: int | None = None
    element: DataType | None = None
    key: DataType | None = None
    value: DataType | None = None
    fields: tuple[DataField, ...] = field(default=())

    @property
    def is_ltz(self) -> bool:
        return self.root == "TIMESTAMP_LTZ"

    @property
    def is_timestamp(self) -> bool:
        return self.root in TIMESTAMP_ROOTS

    @property
    def is_string(self) -> bool:
        return self.root in STRING_ROOTS

    @property
    def is_nested(self) -> bool:
        return self.root in ("ARRAY", "MAP", "MULTISET", "ROW", "VECTOR")

    def __str__(self) -> str:
        return self.sql()

    def sql(self) -> str:
        r = self.root
        if r == "VARCHAR" and self.length in (None, MAX_LENGTH):
            s = "STRING"
        elif r == "VARBINARY" and self.length in (None, MAX_LENGTH):
            s = "BYTES"
        elif r in ("CHAR", "VARCHAR", "BINARY", "VARBINARY"):
            s = f"{r}({self.length})"
        elif r == "DECIMAL":
            s = f"DECIMAL({self.precision}, {self.scale})"
        elif r in ("TIME", "TIMESTAMP"):
            s = f"{r}({self.precision})"
        elif r == "TIMESTAMP_LTZ":
            s = f"TIMESTAMP({self.precision}) WITH LOCAL TIME ZONE"
        elif r in ("ARRAY", "MULTISET"):
            s = f"{r}<{self.element.sql()}>"
        elif r == "VECTOR":
            s = f"VECTOR<{self.element.sql()}, {self.length}>"
        elif r == "MAP":
            s = f"MAP<{self.key.sql()}, {self.value.sql()}>"
        elif r == "ROW":
            s = "ROW<" + ", ".join(f"{f.name} {f.type.sql()}" for f in self.fields) + ">"
        else:
            s = r
        return s if self.nullable else s + " NOT NULL"


_TOKEN = re.compile(r"\s*(<|>|\(|\)|,|`[^`]*`|'[^']*'|[A-Za-z_][A-Za-z_0-9]*|\d+)")


class _TypeParser:
    def __init__(self, text: str):
        self.text = text
        self.tokens = []
        pos = 0
        text = text.strip()
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if not m:
                raise UnsupportedError(f"cannot parse data type {self.text!r} near {text[pos:]!r}")
            self.tokens.append(m.group(1))
            pos = m.end()
            while pos < len(text) and text[pos].isspace():
                pos += 1
        self.i = 0

    def peek(self, k: int = 0) -> str | None:
        j = self.i + k
        return self.tokens[j] if j < len(self.tokens) else None

    def take(self, expect: str | None = None) -> str:
        tok = self.peek()
        if tok is None or (expect is not None and tok.upper() != expect):
            raise UnsupportedError(f"cannot parse data type {self.text!r}: expected {expect or 'more'}")
        self.i += 1
        return tok

    def ints(self) -> list[int]:
        out = []
        if self.peek() == "(":
            self.take()
            while True:
                out.append(int(self.take()))
                if self.peek() == ",":
                    self.take()
                    continue
                self.take(")")
                break
        return out

    def parse(self) -> DataType:
        word = self.take().upper()
        if word == "DOUBLE" and (self.peek() or "").upper() == "PRECISION":
            self.take()
        if word in ("CHARACTER",) and (self.peek() or "").upper() == "VARYING":
            self.take()
            word = "VARCHAR"
        root = _ALIASES.get(word, word)
        args = self.ints() if root not in ("ARRAY", "MAP", "MULTISET", "ROW", "VECTOR") else []
        kw: dict[str, Any] = {}
        if root in ("CHAR", "BINARY"):
            kw["length"] = args[0] if args else 1
        elif root in ("VARCHAR", "VARBINARY"):
            kw["length"] = args[0] if args else MAX_LENGTH
        elif root == "DECIMAL":
            kw["precision"] = args[0] if args else 10
            kw["scale"] = args[1] if len(args) > 1 else 0
        elif root in ("TIME",):
            kw["precision"] = args[0] if args else 0
        elif root in ("TIMESTAMP", "TIMESTAMP_LTZ", "TIMESTAMP_WITH_LOCAL_TIME_ZONE"):
            kw["precision"] = args[0] if args else 6
            if root != "TIMESTAMP":
                root = "TIMESTAMP_LTZ"
            elif [t.upper() for t in self.tokens[self.i:self.i + 4]] == ["WITH", "LOCAL", "TIME", "ZONE"]:
                self.i += 4
                root = "TIMESTAMP_LTZ"
            elif [t.upper() for t in self.tokens[self.i:self.i + 3]] == ["WITHOUT", "TIME", "ZONE"]:
                self.i += 3
        elif root in ("ARRAY", "MULTISET"):
            self.take("<")
            kw["element"] = self.parse()
            self.take(">")
        elif root == "VECTOR":  # VECTOR<FLOAT, 768>: a fixed-length array of numbers
            self.take("<")
            kw["element"] = self.parse()
            self.take(",")
            kw["length"] = int(self.take())
            self.take(">")
        elif root == "MAP":
            self.take("<")
            kw["key"] = self.parse()
            self.take(",")
            kw["value"] = self.parse()
            self.take(">")
        elif root == "ROW":
            self.take("<")
            fields = []
            while self.peek() != ">":
                name = self.take().strip("`")
                fields.append(DataField(len(fields), name, self.parse()))
                if self.peek() and self.peek().startswith("'"):
                    self.take()
                if self.peek() == ",":
                    self.take()
            self.take(">")
            kw["fields"] = tuple(fields)
        elif root not in ("BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE",
                          "DATE", "VARIANT", "BLOB"):
            raise UnsupportedError(f"unknown data type {self.text!r}")
        nullable = True
        if (self.peek() or "").upper() == "NOT" and (self.peek(1) or "").upper() == "NULL":
            self.i += 2
            nullable = False
        elif (self.peek() or "").upper() == "NULL":
            self.i += 1
        return DataType(root, nullable, **kw)


def parse_type(text: str) -> DataType:
    """Parse a Paimon SQL type string such as ``TIMESTAMP(6) WITH LOCAL TIME ZONE NOT NULL``."""
    parser = _TypeParser(text)
    dtype = parser.parse()
    if parser.peek() is not None:
        raise UnsupportedError(f"cannot parse data type {text!r}: trailing {parser.peek()!r}")
    return dtype


def type_from_json(obj: Any) -> DataType:
    """A type as Paimon's schema JSON writes it: a string, or an object for nested types."""
    if isinstance(obj, str):
        return parse_type(obj)
    if not isinstance(obj, dict) or "type" not in obj:
        raise UnsupportedError(f"unknown data type {obj!r}")
    text = obj["type"]
    nullable = not text.upper().endswith("NOT NULL")
    root = text.upper().replace("NOT NULL", "").strip()
    if root in ("ARRAY", "MULTISET"):
        return DataType(root, nullable, element=type_from_json(obj["element"]))
    if root == "VECTOR":
        return DataType(root, nullable, element=type_from_json(obj["element"]), length=int(obj["length"]))
    if root == "MAP":
        return DataType(root, nullable, key=type_from_json(obj["key"]), value=type_from_json(obj["value"]))
    if root == "ROW":
        fields = tuple(DataField(f["id"], f["name"], field_type_from_json(f["name"], f["type"]), f.get("description"))
                       for f in obj["fields"])
        return DataType(root, nullable, fields=fields)
    return parse_type(text)


def field_type_from_json(name: str, obj: Any) -> DataType:
    """:func:`type_from_json` for one field; an unknown type names the field and the type."""
    try:
        return type_from_json(obj)
    except UnsupportedError as exc:
        raise UnsupportedError(f"field {name!r} has type {json.dumps(obj) if not isinstance(obj, str) else obj}"
                               f" that indexcore does not know: {exc.message}") from exc


# ---------------------------------------------------------------------------------------
# Index keys: the integer every index uses for a temporal or decimal value.


def timestamp_key(dtype: DataType, ts: Timestamp) -> int:
    """Indexes key timestamps by epoch millis when p <= 3 and by epoch micros (truncated) above."""
    return ts.millis if (dtype.precision or 0) <= 3 else ts.to_micros()


def timestamp_from_key(dtype: DataType, key: int) -> Timestamp:
    return Timestamp(key, 0) if (dtype.precision or 0) <= 3 else Timestamp.from_micros(key)


def decimal_unscaled(dtype: DataType, value: decimal.Decimal) -> int:
    return int(value.scaleb(dtype.scale or 0).to_integral_value(rounding=decimal.ROUND_HALF_UP))


def decimal_from_unscaled(dtype: DataType, unscaled: int) -> decimal.Decimal:
    return decimal.Decimal(unscaled).scaleb(-(dtype.scale or 0))


def float32(value: float) -> float:
    """Round a Python float to the nearest float32, as Paimon's FLOAT holds it."""
    return struct.unpack(">f", struct.pack(">f", value))[0]


def float_bits(dtype: DataType, value: float) -> int:
    """Raw IEEE bits (Java ``floatToRawIntBits`` / ``doubleToRawLongBits``)."""
    if dtype.root == "FLOAT":
        return struct.unpack(">I", struct.pack(">f", value))[0]
    return struct.unpack(">Q", struct.pack(">d", value))[0]


def to_long(dtype: DataType, value: Any) -> int:
    """The 64-bit integer an index keys this value by (ints, DATE, TIME, TIMESTAMP, DECIMAL)."""
    r = dtype.root
    if r in INTEGER_ROOTS or r in ("DATE", "TIME"):
        return int(value)
    if r in TIMESTAMP_ROOTS:
        return timestamp_key(dtype, value)
    if r == "DECIMAL":
        return decimal_unscaled(dtype, value)
    if r == "BOOLEAN":
        return 1 if value else 0
    raise UnsupportedError(f"{dtype} has no integer index key")


# ---------------------------------------------------------------------------------------
# Codecs between internal values and JSON / Python / text.


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


_TS = re.compile(r"^(\d{1,4})-(\d{2})-(\d{2})(?:[ T](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?)?"
                 r"\s*(Z|[+-]\d{2}(?::?\d{2})?)?$")


def parse_timestamp_text(text: str, ltz: bool = False) -> Timestamp:
    """``YYYY-MM-DD[ T]HH:MM:SS[.f{1,9}][Z|+hh:mm]`` to a Timestamp (UTC for LTZ columns).

    An offset moves the instant to UTC; without one the text is taken as UTC (for LTZ) or as
    the wall-clock value (for TIMESTAMP).
    """
    m = _TS.match(text.strip())
    if not m:
        raise ValueError(f"not a timestamp: {text!r}")
    y, mo, d, hh, mi, ss, frac, tz = m.groups()
    base = _dt.datetime(int(y), int(mo), int(d), int(hh or 0), int(mi or 0), int(ss or 0))
    nanos_total = int((frac or "").ljust(9, "0")) if frac else 0
    days = (base.date() - EPOCH_DATE).days
    secs = days * 86400 + base.hour * 3600 + base.minute * 60 + base.second
    if tz and tz != "Z":
        sign = -1 if tz[0] == "-" else 1
        digits = tz[1:].replace(":", "")
        offset = int(digits[:2]) * 3600 + (int(digits[2:4]) * 60 if len(digits) >= 4 else 0)
        secs -= sign * offset
    millis = secs * 1000 + nanos_total // 1_000_000
    return Timestamp(millis, nanos_total % 1_000_000)


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
                return ((value.hour * 60 + value.minute) * 60 + value.second) * 1000 + value.microsecond // 1000
            if isinstance(value, int) and not isinstance(value, bool):
                return value
            return _parse_temporal_text(dtype, str(value))
        if r in TIMESTAMP_ROOTS:
            if isinstance(value, Timestamp):
                return value
            if isinstance(value, _dt.datetime):
                if value.tzinfo is not None:
                    value = value.astimezone(_dt.UTC).replace(tzinfo=None)
                delta = value - EPOCH
                micros = (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds
                return Timestamp.from_micros(micros)
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


def to_json_values(dtype: DataType, values: list) -> list:
    """:func:`to_json_value` over a column of one type. Timestamps are formatted together by numpy
    (a millisecond text without its trailing zeros), which a frame of tens of thousands of files'
    min / max needs; one with nanoseconds, or outside years 1..9999, as one value."""
    if dtype.root not in TIMESTAMP_ROOTS:
        return [to_json_value(dtype, v) for v in values]
    suffix = "Z" if dtype.is_ltz else ""
    low, high = _SHOWN_MILLIS
    shown = [v is not None and v.nanos == 0 and low <= v.millis <= high for v in values]
    millis = np.fromiter((v.millis for v, ok in zip(values, shown, strict=True) if ok), np.int64)
    text = np.datetime_as_string(millis.astype("datetime64[ms]"), unit="ms")
    texts = iter(np.char.rstrip(np.char.rstrip(text, "0"), ".").tolist())  # "…:17.300" -> "…:17.3"
    return [next(texts) + suffix if ok else (None if v is None else str(v) + suffix)
            for v, ok in zip(values, shown, strict=True)]
