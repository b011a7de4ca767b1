"""Predicates in Paimon's vocabulary, and SQL ``WHERE`` text parsed into them with sqlglot.

Leaf functions: ``equal, notEqual, in, notIn, isNull, isNotNull, lessThan, lessOrEqual,
greaterThan, greaterOrEqual, between, notBetween``; compounds ``and`` / ``or`` (n-ary).
Literals are internal values of the column's type (see :mod:`indexcore.types`).
"""

from __future__ import annotations

import decimal
import math
import re
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import sqlglot
from sqlglot import exp, tokens
from sqlglot.dialects.dialect import Dialect

from . import types
from .errors import IndexCoreError, PredicateError
from .types import DataType

LEAF_OPS = ("equal", "notEqual", "in", "notIn", "isNull", "isNotNull", "lessThan", "lessOrEqual",
            "greaterThan", "greaterOrEqual", "between", "notBetween")
COMPOUND_OPS = ("and", "or")


@dataclass(frozen=True)
class Leaf:
    op: str
    field: str
    literals: tuple[Any, ...] = ()

    def fields(self) -> set[str]:
        return {self.field}

    def __str__(self) -> str:
        return predicate_to_sql(self)


@dataclass(frozen=True)
class Compound:
    op: str
    children: tuple[Predicate, ...]

    def fields(self) -> set[str]:
        out: set[str] = set()
        for c in self.children:
            out |= c.fields()
        return out

    def __str__(self) -> str:
        return predicate_to_sql(self)


Predicate = Leaf | Compound


# ---------------------------------------------------------------------------------------
# Negation (Paimon's Predicate.negate()), display, and the golden JSON tree form.

NEGATED_OPS = {
    "equal": "notEqual", "notEqual": "equal", "lessThan": "greaterOrEqual",
    "greaterOrEqual": "lessThan", "lessOrEqual": "greaterThan", "greaterThan": "lessOrEqual",
    "in": "notIn", "notIn": "in", "isNull": "isNotNull", "isNotNull": "isNull",
    "between": "notBetween", "notBetween": "between",
}


def negate(pred: Predicate) -> Predicate:
    """Paimon's ``Predicate.negate()``: flip each leaf function, swap AND and OR."""
    if isinstance(pred, Leaf):
        return Leaf(NEGATED_OPS[pred.op], pred.field, pred.literals)
    return Compound("or" if pred.op == "and" else "and", tuple(negate(c) for c in pred.children))


def is_null_false(leaf: Leaf) -> bool:
    """True when a NULL literal makes this leaf never true (Paimon's null-false functions).

    ``in`` ignores NULL literals as long as one non-NULL literal is left; every other
    function with a NULL literal (``= NULL``, ``NOT IN (1, NULL)``, ``BETWEEN NULL AND 5``)
    can never be true, so Paimon skips the file whatever the indexes hold.
    """
    if leaf.op in ("isNull", "isNotNull"):
        return False
    if leaf.op == "in":
        return all(v is None for v in leaf.literals)
    return any(v is None for v in leaf.literals)


_SQL_OPS = {"equal": "=", "notEqual": "<>", "lessThan": "<", "lessOrEqual": "<=",
            "greaterThan": ">", "greaterOrEqual": ">="}


def _quote_name(name: str) -> str:
    return name if re.fullmatch(r"[A-Za-z_][A-Za-z_0-9]*", name) else "`" + name.replace("`", "``") + "`"


def literal_to_sql(value: Any, dtype: DataType | None = None) -> str:
    """SQL text for an internal value; ``dtype`` gives DATE/TIME their typed form."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if dtype is not None and dtype.root == "DATE":
        return f"DATE '{types.to_json_value(dtype, value)}'"
    if dtype is not None and dtype.root == "TIME":
        text = types.to_json_value(dtype, value) + (f".{value % 1000:03d}" if value % 1000 else "")
        return f"TIME '{text}'"
    if isinstance(value, decimal.Decimal):
        return format(value, "f")
    if isinstance(value, types.Timestamp):
        text = str(value).replace("T", " ")
        if dtype is not None and dtype.is_ltz:
            return f"TIMESTAMP_LTZ '{text}'"
        return f"TIMESTAMP '{text}'"
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            word = "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
            kind = "FLOAT" if dtype is not None and dtype.root == "FLOAT" else "DOUBLE"
            return f"CAST('{word}' AS {kind})"
        return repr(value)
    if isinstance(value, bytes):
        return f"X'{value.hex()}'"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return str(value)


def predicate_to_sql(pred: Predicate, schema: Mapping[str, DataType] | None = None) -> str:
    """A SQL ``WHERE`` text for a predicate; ``parse_where`` reads it back to the same tree."""
    if isinstance(pred, Compound):
        if not pred.children:
            return "TRUE" if pred.op == "and" else "FALSE"
        joiner = " AND " if pred.op == "and" else " OR "
        parts = []
        for child in pred.children:
            text = predicate_to_sql(child, schema)
            parts.append(f"({text})" if isinstance(child, Compound) and len(child.children) > 1 else text)
        return joiner.join(parts)
    dtype = (schema or {}).get(pred.field)
    name = _quote_name(pred.field)
    lits = [literal_to_sql(v, dtype) for v in pred.literals]
    op = pred.op
    if op in _SQL_OPS:
        return f"{name} {_SQL_OPS[op]} {lits[0] if lits else 'NULL'}"
    if op == "isNull":
        return f"{name} IS NULL"
    if op == "isNotNull":
        return f"{name} IS NOT NULL"
    if op in ("in", "notIn"):
        return f"{name} {'NOT IN' if op == 'notIn' else 'IN'} ({', '.join(lits)})"
    if op in ("between", "notBetween"):
        word = "NOT BETWEEN" if op == "notBetween" else "BETWEEN"
        return f"{name} {word} {lits[0]} AND {lits[1]}"
    return f"{op}({name}{''.join(', ' + x for x in lits)})"


def _resolve_field(name: str, schema: Mapping[str, DataType]) -> str:
    """The schema's spelling of a column: exact match first, else a unique case-insensitive one."""
    if name in schema:
        return name
    matches = [f for f in schema if f.lower() == name.lower()]
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        raise PredicateError(f"column name {name!r} is ambiguous: it matches {', '.join(sorted(matches))}; "
                             "quote it with its exact spelling")
    known = ", ".join(schema) or "(none)"
    raise PredicateError(f"unknown column {name!r}; columns are: {known}")


def _json_literal(dtype: DataType, value: Any, raw: Any) -> Any:
    if dtype.root in ("DATE", "TIME") and isinstance(raw, str):
        raw = None  # some vectors write DATE raw values in their display form
    try:
        return types.from_json(dtype, value, raw)
    except PredicateError:
        raise
    except (ValueError, TypeError, IndexError, struct.error) as exc:
        raise PredicateError(f"literal {value!r} (raw {raw!r}) is not a valid {dtype.sql()}: {exc}") from exc


def predicate_from_json(obj: Mapping[str, Any], schema: Mapping[str, DataType]) -> Predicate:
    """The golden vectors' tree (``op``/``field``/``literals``/``literals_raw``/``children``)."""
    if not isinstance(obj, Mapping) or "op" not in obj:
        raise PredicateError(f"not a predicate object: {obj!r}")
    op = obj["op"]
    if op in COMPOUND_OPS:
        return Compound(op, tuple(predicate_from_json(c, schema) for c in obj.get("children", ())))
    if op not in LEAF_OPS:
        raise PredicateError(f"unknown predicate function {op!r}")
    field_name = _resolve_field(obj["field"], schema)
    dtype = schema[field_name]
    literals = list(obj.get("literals") or ())
    raws = obj.get("literals_raw")
    raws = list(raws) if raws is not None else [None] * len(literals)
    if len(raws) != len(literals):
        raise PredicateError(f"literals and literals_raw differ in length in {obj!r}")
    values = tuple(_json_literal(dtype, v, r) for v, r in zip(literals, raws, strict=True))
    _check_arity(op, values)
    return Leaf(op, field_name, values)


def _check_arity(op: str, literals: tuple) -> None:
    want = {"isNull": 0, "isNotNull": 0, "between": 2, "notBetween": 2}.get(op, 1)
    if op in ("in", "notIn"):
        if not literals:
            raise PredicateError(f"{op} needs at least one literal")
    elif len(literals) != want:
        raise PredicateError(f"{op} takes {want} literal(s), got {len(literals)}")


# ---------------------------------------------------------------------------------------
# SQL WHERE text -> Predicate, with sqlglot (the text is parsed, never evaluated).


class _Dialect(Dialect):
    """Standard SQL strings (``'it''s'``), ``"x"`` and `` `x` `` identifiers, ``X'0a'`` bytes."""

    class Tokenizer(tokens.Tokenizer):
        IDENTIFIERS = ['"', "`"]
        HEX_STRINGS = [("x'", "'"), ("X'", "'")]


@dataclass(frozen=True)
class _Lit:
    """A literal before coercion: ``kind`` is null|str|num|bool|bytes|typed."""

    kind: str
    value: Any
    text: str


_CMP = {exp.EQ: "equal", exp.NEQ: "notEqual", exp.LT: "lessThan", exp.LTE: "lessOrEqual",
        exp.GT: "greaterThan", exp.GTE: "greaterOrEqual"}
_FLIPPED = {"equal": "equal", "notEqual": "notEqual", "lessThan": "greaterThan",
            "lessOrEqual": "greaterOrEqual", "greaterThan": "lessThan", "greaterOrEqual": "lessOrEqual"}
_T = exp.DataType.Type
_SQLGLOT_TYPES = {
    _T.TINYINT: "TINYINT", _T.SMALLINT: "SMALLINT", _T.INT: "INT", _T.BIGINT: "BIGINT",
    _T.FLOAT: "FLOAT", _T.DOUBLE: "DOUBLE", _T.BOOLEAN: "BOOLEAN", _T.DATE: "DATE",
    _T.DECIMAL: "DECIMAL", _T.CHAR: "CHAR", _T.VARCHAR: "VARCHAR", _T.TEXT: "STRING",
    _T.BINARY: "BINARY", _T.VARBINARY: "VARBINARY", _T.TIME: "TIME",
    _T.TIMESTAMP: "TIMESTAMP", _T.TIMESTAMPNTZ: "TIMESTAMP", _T.DATETIME: "TIMESTAMP",
    _T.TIMESTAMPLTZ: "TIMESTAMP_LTZ", _T.TIMESTAMPTZ: "TIMESTAMP_LTZ",
}


def _sql_of(node: exp.Expression) -> str:
    try:
        return node.sql()
    except Exception:  # noqa: BLE001 - display only
        return repr(node)


def _cast_type(node: exp.DataType) -> DataType:
    name = _SQLGLOT_TYPES.get(node.this)
    if name is None:
        kind = node.args.get("kind")
        text = str(kind) if node.this == _T.USERDEFINED and kind else _sql_of(node)
    else:
        params = [_sql_of(p) for p in node.expressions]
        text = name + (f"({', '.join(params)})" if params else "")
    try:
        dtype = types.parse_type(text)
    except IndexCoreError as exc:
        raise PredicateError(f"unsupported type in CAST: {_sql_of(node)}") from exc
    if dtype.is_nested or dtype.root in ("VARIANT", "BLOB"):
        raise PredicateError(f"unsupported type in CAST: {_sql_of(node)}")
    return dtype


def _number(text: str) -> int | decimal.Decimal:
    try:
        return int(text)
    except ValueError:
        return decimal.Decimal(text)


def _literal(node: exp.Expression) -> _Lit:
    """The literal an expression denotes, or None if it is not a literal."""
    text = _sql_of(node)
    if isinstance(node, exp.Paren):
        return _literal(node.this)
    if isinstance(node, exp.Null):
        return _Lit("null", None, text)
    if isinstance(node, exp.Boolean):
        return _Lit("bool", bool(node.this), text)
    if isinstance(node, exp.HexString):
        try:
            return _Lit("bytes", bytes.fromhex(node.this), text)
        except ValueError as exc:
            raise PredicateError(f"bad hex literal {text}") from exc
    if isinstance(node, exp.Literal):
        if node.is_string:
            return _Lit("str", node.this, text)
        try:
            return _Lit("num", _number(node.this), text)
        except decimal.InvalidOperation as exc:
            raise PredicateError(f"bad number {node.this!r}") from exc
    if isinstance(node, exp.Neg):
        inner = _literal(node.this)
        if inner.kind != "num":
            raise PredicateError(f"cannot negate {inner.text}")
        value = inner.value
        if isinstance(value, int):  # keep the sign of -0 for FLOAT/DOUBLE columns
            value = decimal.Decimal("-0") if value == 0 else -value
        else:
            value = value.copy_negate()
        return _Lit("num", value, text)
    if isinstance(node, exp.Cast):
        target = _cast_type(node.args["to"])
        inner = _literal(node.this)
        if inner.kind == "null":
            return inner
        if target.is_string and inner.kind in ("num", "bool"):
            inner = _Lit("str", str(inner.value).upper() if inner.kind == "bool" else str(inner.value), text)
        return _Lit("typed", (target, _coerce(target, inner)), text)
    raise PredicateError(f"expected a literal, got {text!r}")


def _coerce(dtype: DataType, lit: _Lit) -> Any:
    """The literal as an internal value of ``dtype``; PredicateError if it does not fit exactly."""
    kind, value = lit.kind, lit.value
    what = f"literal {lit.text} does not fit column type {dtype.sql()}"
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
            raise PredicateError(what)
        return _coerce(dtype, _Lit(kind, pv, lit.text))
    r = dtype.root
    if kind == "num":
        if r in types.INTEGER_ROOTS:
            if isinstance(value, decimal.Decimal) and value != value.to_integral_value():
                raise PredicateError(f"{what}: not an integer")
            return types.from_text_or_python(dtype, int(value))
        if r in types.FLOAT_ROOTS:
            return types.from_text_or_python(dtype, float(value))
        if r == "DECIMAL":
            return _exact_decimal(dtype, decimal.Decimal(value), what)
        if r == "BOOLEAN":
            return types.from_text_or_python(dtype, value)
        raise PredicateError(what + (" (quote it as a string)" if dtype.is_string else ""))
    if kind == "bool":
        if r != "BOOLEAN":
            raise PredicateError(what)
        return value
    if kind == "bytes":
        if r not in types.BINARY_ROOTS:
            raise PredicateError(what)
        return value
    # a string literal: the column type says how to read it
    if r == "DECIMAL":
        try:
            dv = decimal.Decimal(value.strip())
        except decimal.InvalidOperation as exc:
            raise PredicateError(f"{what}: not a number") from exc
        return _exact_decimal(dtype, dv, what)
    try:
        return types.from_text_or_python(dtype, value)
    except PredicateError as exc:
        raise PredicateError(f"{what}: {exc.message}") from exc


def _exact_decimal(dtype: DataType, value: decimal.Decimal, what: str) -> decimal.Decimal:
    out = types.from_text_or_python(dtype, value)
    if out != value:
        raise PredicateError(f"{what}: it has more than {dtype.scale} decimal places")
    return out


class _Builder:
    def __init__(self, schema: Mapping[str, DataType]):
        self.schema = schema

    def column(self, node: exp.Expression) -> str | None:
        while isinstance(node, exp.Paren):
            node = node.this
        if not isinstance(node, exp.Column):
            return None
        if node.table:
            raise PredicateError(f"qualified column names are not supported: {_sql_of(node)}")
        ident = node.this
        if not isinstance(ident, exp.Identifier):
            raise PredicateError(f"unsupported column reference {_sql_of(node)}")
        return _resolve_field(ident.this, self.schema)

    def leaf(self, op: str, field_name: str, lits: list[_Lit], negated: bool) -> Leaf:
        dtype = self.schema[field_name]
        values = tuple(_coerce(dtype, lit) for lit in lits)
        if negated:
            op = NEGATED_OPS[op]
        if op == "in" and any(v is not None for v in values):
            values = tuple(v for v in values if v is not None)
        return Leaf(op, field_name, values)

    def build(self, node: exp.Expression, negated: bool = False) -> Predicate:
        if isinstance(node, exp.Paren):
            return self.build(node.this, negated)
        if isinstance(node, exp.Not):
            return self.build(node.this, not negated)
        if isinstance(node, exp.And | exp.Or):
            op = "and" if isinstance(node, exp.And) else "or"
            if negated:
                op = "or" if op == "and" else "and"
            children: list[Predicate] = []
            for side in (node.this, node.expression):
                child = self.build(side, negated)
                if isinstance(child, Compound) and child.op == op:
                    children.extend(child.children)
                else:
                    children.append(child)
            return Compound(op, tuple(children))
        for cls, op in _CMP.items():
            if type(node) is cls:
                left, right = node.this, node.expression
                field_name = self.column(left)
                if field_name is None:
                    field_name, left, right, op = self.column(right), right, left, _FLIPPED[op]
                    if field_name is None:
                        raise PredicateError(f"{_sql_of(node)!r} must compare a column with a literal")
                if self.column(right) is not None:
                    raise PredicateError(f"comparing two columns is not supported: {_sql_of(node)!r}")
                return self.leaf(op, field_name, [_literal(right)], negated)
        if isinstance(node, exp.In):
            field_name = self.column(node.this)
            if field_name is None or node.args.get("query") is not None or node.args.get("unnest"):
                raise PredicateError(f"IN needs a column and a list of literals: {_sql_of(node)!r}")
            if not node.expressions:
                raise PredicateError(f"IN needs at least one literal: {_sql_of(node)!r}")
            return self.leaf("in", field_name, [_literal(e) for e in node.expressions], negated)
        if isinstance(node, exp.Is):
            field_name = self.column(node.this)
            if field_name is None or not isinstance(node.expression, exp.Null):
                raise PredicateError(f"only <column> IS [NOT] NULL is supported: {_sql_of(node)!r}")
            return self.leaf("isNull", field_name, [], negated)
        if isinstance(node, exp.Between):
            field_name = self.column(node.this)
            if field_name is None:
                raise PredicateError(f"BETWEEN needs a column on its left: {_sql_of(node)!r}")
            if node.args.get("symmetric"):
                raise PredicateError("BETWEEN SYMMETRIC is not supported")
            lits = [_literal(node.args["low"]), _literal(node.args["high"])]
            return self.leaf("between", field_name, lits, negated)
        if isinstance(node, exp.Column):
            field_name = self.column(node)
            if self.schema[field_name].root != "BOOLEAN":
                raise PredicateError(f"column {field_name!r} is not BOOLEAN and cannot stand alone as a condition")
            return self.leaf("equal", field_name, [_Lit("bool", True, "TRUE")], negated)
        raise PredicateError(f"unsupported construct in WHERE: {_sql_of(node)!r} ({type(node).__name__}); "
                             "supported: comparisons, [NOT] IN, IS [NOT] NULL, [NOT] BETWEEN, AND, OR, NOT")


def parse_where(sql: str, schema: Mapping[str, DataType]) -> Predicate:
    """Parse a SQL ``WHERE`` condition into a Paimon predicate over ``schema``'s columns.

    NOT is pushed down to the leaves as Paimon's ``negate()`` does. A comparison with NULL
    keeps its NULL literal: such a leaf is never true (see :func:`is_null_false`).
    """
    text = (sql or "").strip()
    if text[:6].upper() == "WHERE " or text.upper() == "WHERE":
        text = text[5:].strip()
    if not text:
        raise PredicateError("empty WHERE condition")
    try:
        statements = sqlglot.parse(text, read=_Dialect)
    except (sqlglot.errors.ParseError, sqlglot.errors.TokenError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise PredicateError(f"cannot parse WHERE condition {sql!r}: {first}") from exc
    statements = [s for s in statements if s is not None]
    if len(statements) != 1:
        raise PredicateError(f"expected one condition, got {len(statements)} statements: {sql!r}")
    return _Builder(schema).build(statements[0])
