"""SQL literals (sqlglot nodes) read into internal values of a column's type: exactly, or a
:class:`PredicateError` (``i = 2.5``, ``i = 1e9999``, ``i > CAST('NaN' AS DOUBLE)``)."""

from __future__ import annotations

import decimal
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from indexcore import types
from indexcore.errors import IndexCoreError, PredicateError
from indexcore.expr.literal import non_finite_word
from indexcore.expr.sql_text import MAX_EXPONENT, MAX_NUMBER_CHARS, sql_of
from indexcore.types import DataType


class _Text:
    """A literal's SQL text, rendered only when an error message needs it."""

    def __init__(self, node: exp.Expression):
        self.node = node

    def __str__(self) -> str:
        return sql_of(self.node)


@dataclass(frozen=True)
class SqlLiteral:
    """A literal before coercion: ``kind`` is null|str|num|bool|bytes|typed."""

    kind: str
    value: Any
    text: _Text | str


_T = exp.DataType.Type
_SQLGLOT_TYPES = {
    _T.TINYINT: "TINYINT", _T.SMALLINT: "SMALLINT", _T.INT: "INT", _T.BIGINT: "BIGINT",
    _T.FLOAT: "FLOAT", _T.DOUBLE: "DOUBLE", _T.BOOLEAN: "BOOLEAN", _T.DATE: "DATE",
    _T.DECIMAL: "DECIMAL", _T.CHAR: "CHAR", _T.VARCHAR: "VARCHAR", _T.TEXT: "STRING",
    _T.BINARY: "BINARY", _T.VARBINARY: "VARBINARY", _T.TIME: "TIME",
    _T.TIMESTAMP: "TIMESTAMP", _T.TIMESTAMPNTZ: "TIMESTAMP", _T.DATETIME: "TIMESTAMP",
    _T.TIMESTAMPLTZ: "TIMESTAMP_LTZ", _T.TIMESTAMPTZ: "TIMESTAMP_LTZ",
}


def _cast_type(node: exp.DataType) -> DataType:
    name = _SQLGLOT_TYPES.get(node.this)
    if name is None:
        kind = node.args.get("kind")
        text = str(kind) if node.this == _T.USERDEFINED and kind else sql_of(node)
    else:
        params = [sql_of(p) for p in node.expressions]
        text = name + (f"({', '.join(params)})" if params else "")
    try:
        dtype = types.parse_type(text)
    except IndexCoreError as exc:
        raise PredicateError(f"unsupported type in CAST: {sql_of(node)}") from exc
    if dtype.is_nested or dtype.root in ("VARIANT", "BLOB"):
        raise PredicateError(f"unsupported type in CAST: {sql_of(node)}")
    return dtype


def _number(text: str) -> int | decimal.Decimal:
    """A numeric literal's exact value; PredicateError beyond :data:`MAX_EXPONENT` (which keeps
    later conversions to int, float and Decimal cheap)."""
    if len(text) > MAX_NUMBER_CHARS:
        raise PredicateError(f"numeric literal of {len(text)} characters is longer than {MAX_NUMBER_CHARS}")
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = decimal.Decimal(text)
    except decimal.InvalidOperation as exc:
        raise PredicateError(f"bad number {text!r}") from exc
    if not value.is_finite():
        raise PredicateError(f"bad number {text!r}")
    if not value.is_zero() and abs(value.adjusted()) > MAX_EXPONENT:
        raise PredicateError(f"numeric literal {text} is out of range (beyond 1e{MAX_EXPONENT} / 1e-{MAX_EXPONENT})")
    return value


def sql_literal(node: exp.Expression) -> SqlLiteral:
    """The literal an expression denotes, or None if it is not a literal."""
    text = _Text(node)
    if isinstance(node, exp.Paren):
        return sql_literal(node.this)
    if isinstance(node, exp.Null):
        return SqlLiteral("null", None, text)
    if isinstance(node, exp.Boolean):
        return SqlLiteral("bool", bool(node.this), text)
    if isinstance(node, exp.HexString):
        try:
            return SqlLiteral("bytes", bytes.fromhex(node.this), text)
        except ValueError as exc:
            raise PredicateError(f"bad hex literal {text}") from exc
    if isinstance(node, exp.Literal):
        if node.is_string:
            return SqlLiteral("str", node.this, text)
        return SqlLiteral("num", _number(node.this), text)
    if isinstance(node, exp.Neg):
        inner = sql_literal(node.this)
        if inner.kind != "num":
            raise PredicateError(f"cannot negate {inner.text}")
        value = inner.value
        if isinstance(value, int):  # keep the sign of -0 for FLOAT/DOUBLE columns
            value = decimal.Decimal("-0") if value == 0 else -value
        else:
            value = value.copy_negate()
        return SqlLiteral("num", value, text)
    if isinstance(node, exp.Cast):
        target = _cast_type(node.args["to"])
        inner = sql_literal(node.this)
        if inner.kind == "null":
            return inner
        if target.is_string and inner.kind in ("num", "bool"):
            inner = SqlLiteral("str", str(inner.value).upper() if inner.kind == "bool" else str(inner.value), text)
        return SqlLiteral("typed", (target, coerce_literal(target, inner)), text)
    raise PredicateError(f"expected a literal, got {str(text)!r}")


def coerce_literal(dtype: DataType, lit: SqlLiteral) -> Any:
    """The literal as an internal value of ``dtype``; PredicateError if it does not fit exactly."""
    kind, value = lit.kind, lit.value

    def what() -> str:
        return f"literal {lit.text} does not fit column type {dtype.sql()}"

    if kind == "null":
        return None
    if kind == "typed":
        src, internal = value
        if (dtype.is_timestamp and src.is_timestamp) or (dtype.root == src.root and dtype.root in ("DATE", "TIME")):
            return internal
        pv = types.to_python(src, internal)
        if src.is_timestamp and src.is_ltz:
            pv = pv.replace(tzinfo=None)
        if isinstance(pv, bool):
            kind = "bool"
        elif isinstance(pv, int | float | decimal.Decimal):
            kind = "num"
        elif isinstance(pv, str):
            kind = "str"
        elif isinstance(pv, bytes):
            kind = "bytes"
        else:
            if dtype.root in ("DATE", "TIME") or dtype.is_timestamp:
                return types.from_text_or_python(dtype, pv)
            raise PredicateError(what())
        return coerce_literal(dtype, SqlLiteral(kind, pv, lit.text))
    r = dtype.root
    if kind == "num" and isinstance(value, float) and r not in types.FLOAT_ROOTS:
        if not math.isfinite(value):
            raise PredicateError(f"{what()}: {dtype.sql()} has no {non_finite_word(value)} value")
        value = decimal.Decimal(repr(value))  # the double's shortest decimal text, like Java's toString
    if kind == "num":
        if r in types.INTEGER_ROOTS:
            if isinstance(value, decimal.Decimal) and value != value.to_integral_value():
                raise PredicateError(f"{what()}: not an integer")
            if int(value).bit_length() > 64:
                raise PredicateError(f"{what()}: out of range")
            return types.from_text_or_python(dtype, int(value))
        if r in types.FLOAT_ROOTS:
            number = float(value)
            if math.isinf(number) and not (isinstance(value, float) and math.isinf(value)):
                raise PredicateError(f"{what()}: out of range for {dtype.sql()}")
            return types.from_text_or_python(dtype, number)
        if r == "DECIMAL":
            return _exact_decimal(dtype, decimal.Decimal(value), what)
        if r == "BOOLEAN":
            return types.from_text_or_python(dtype, value)
        raise PredicateError(what() + (" (quote it as a string)" if dtype.is_string else ""))
    if kind == "bool":
        if r != "BOOLEAN":
            raise PredicateError(what())
        return value
    if kind == "bytes":
        if r not in types.BINARY_ROOTS:
            raise PredicateError(what())
        return value
    # a string literal: the column type says how to read it
    if r == "DECIMAL":
        try:
            dv = decimal.Decimal(value.strip())
        except decimal.InvalidOperation as exc:
            raise PredicateError(f"{what()}: not a number") from exc
        return _exact_decimal(dtype, dv, what)
    try:
        out = types.from_text_or_python(dtype, value)
    except PredicateError as exc:
        raise PredicateError(f"{what()}: {exc.message}") from exc
    if r in types.FLOAT_ROOTS and math.isinf(out) and "inf" not in value.lower():
        raise PredicateError(f"{what()}: out of range for {dtype.sql()}")
    return out


def _exact_decimal(dtype: DataType, value: decimal.Decimal, what: Callable[[], str]) -> decimal.Decimal:
    if not value.is_finite():
        raise PredicateError(f"{what()}: not a finite number")
    if not value.is_zero() and value.adjusted() >= (dtype.precision or 10) - (dtype.scale or 0):
        raise PredicateError(f"{what()}: out of range")
    out = types.from_text_or_python(dtype, value)
    if out != value:
        raise PredicateError(f"{what()}: it has more than {dtype.scale} decimal places")
    return out
