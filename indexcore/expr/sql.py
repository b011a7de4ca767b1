"""SQL ``WHERE`` text parsed into predicates with sqlglot, predicates printed back as SQL, and
the golden vectors' JSON trees read into predicates.

The text is parsed, never evaluated, and bounded before sqlglot sees it: its length, its
nesting (parentheses and prefix operators) and the size of numeric literals. Every literal
is converted to an internal value of its column's type; a literal that has no such value
(``i = 2.5``, ``i = 1e9999``, ``i > CAST('NaN' AS DOUBLE)``) is a :class:`PredicateError`.
"""

from __future__ import annotations

import decimal
import math
import re
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import sqlglot
from sqlglot import exp, tokens
from sqlglot.dialects.dialect import Dialect

from indexcore import types
from indexcore.errors import IndexCoreError, PredicateError
from indexcore.expr.functions import (
    BETWEEN,
    CONTAINS,
    ENDS_WITH,
    EQUAL,
    GREATER_OR_EQUAL,
    GREATER_THAN,
    IN,
    IS_NULL,
    LESS_OR_EQUAL,
    LESS_THAN,
    NOT_EQUAL,
    STARTS_WITH,
    Comparison,
    LeafFunction,
    leaf_function,
)
from indexcore.expr.literal import non_finite_word
from indexcore.expr.tree import AND, COMPOUND_FUNCTIONS, OR, Compound, CompoundFunction, Leaf, Predicate
from indexcore.types import DataType


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
    if isinstance(op, str) and op in COMPOUND_FUNCTIONS:
        children = obj.get("children", ())
        if not isinstance(children, list | tuple):
            raise PredicateError(f"children of {op!r} are not a list: {children!r}")
        return Compound(COMPOUND_FUNCTIONS[op], tuple(predicate_from_json(c, schema) for c in children))
    function = leaf_function(op)
    field = obj.get("field")
    if not isinstance(field, str):
        raise PredicateError(f"predicate {op!r} names no field: {obj!r}")
    field_name = _resolve_field(field, schema)
    dtype = schema[field_name]
    literals, raws = obj.get("literals") or [], obj.get("literals_raw")
    if isinstance(literals, list | tuple) and raws is None:
        raws = [None] * len(literals)
    if not isinstance(literals, list | tuple) or not isinstance(raws, list | tuple) or len(raws) != len(literals):
        raise PredicateError(f"literals and literals_raw are not lists of one length in {obj!r}")
    return Leaf(function, field_name, tuple(_json_literal(dtype, v, r) for v, r in zip(literals, raws, strict=True)))


# ---------------------------------------------------------------------------------------
# SQL WHERE text -> Predicate, with sqlglot (the text is parsed, never evaluated).


class _Dialect(Dialect):
    """Standard SQL strings (``'it''s'``), ``"x"`` and `` `x` `` identifiers, ``X'0a'`` bytes."""

    class Tokenizer(tokens.Tokenizer):
        IDENTIFIERS = ['"', "`"]
        HEX_STRINGS = [("x'", "'"), ("X'", "'")]


class _Text:
    """A literal's SQL text, rendered only when an error message needs it."""

    def __init__(self, node: exp.Expression):
        self.node = node

    def __str__(self) -> str:
        return _sql_of(self.node)


@dataclass(frozen=True)
class _Lit:
    """A literal before coercion: ``kind`` is null|str|num|bool|bytes|typed."""

    kind: str
    value: Any
    text: _Text | str


_CMP: dict[type, Comparison] = {exp.EQ: EQUAL, exp.NEQ: NOT_EQUAL, exp.LT: LESS_THAN, exp.LTE: LESS_OR_EQUAL,
                                exp.GT: GREATER_THAN, exp.GTE: GREATER_OR_EQUAL}
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


def _literal(node: exp.Expression) -> _Lit:
    """The literal an expression denotes, or None if it is not a literal."""
    text = _Text(node)
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
        return _Lit("num", _number(node.this), text)
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
    raise PredicateError(f"expected a literal, got {str(text)!r}")


def _coerce(dtype: DataType, lit: _Lit) -> Any:
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
        return _coerce(dtype, _Lit(kind, pv, lit.text))
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


class _Builder:
    def __init__(self, schema: Mapping[str, DataType]):
        self.schema = schema
        self.under_or = 0  # OR compounds (after NOT is pushed down) around the node being built

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

    def leaf(self, function: LeafFunction, field_name: str, lits: list[_Lit], negated: bool,
             coerce: bool = True) -> Leaf:
        dtype = self.schema[field_name]
        values = tuple(_coerce(dtype, lit) if coerce else lit.value for lit in lits)
        if negated:
            function = function.negate()  # never None here: pattern() refuses a negated pattern first
        return Leaf(function, field_name, values)

    def pattern(self, node: exp.Expression, negated: bool) -> Predicate:
        """``col LIKE 'p'`` or ``startswith/endswith/contains(col, 'p')``: what Spark hands Paimon
        (``LIKE 'a%b'`` is ``startsWith('a') AND endsWith('b')``, see :func:`like_parts`)."""
        if isinstance(node, exp.Escape):
            raise PredicateError(f"LIKE with an ESCAPE clause is not pushed down by Paimon: {_sql_of(node)!r}")
        if isinstance(node, exp.ILike):
            raise PredicateError(f"ILIKE is not pushed down by Paimon: {_sql_of(node)!r}")
        field_name = self.column(node.this)
        if field_name is None or self.column(node.expression) is not None:
            raise PredicateError(f"{_sql_of(node)!r} must match a column against a string literal")
        dtype = self.schema[field_name]
        if not dtype.is_string:
            raise PredicateError(f"{_sql_of(node)!r}: column {field_name!r} is {dtype.sql()}, "
                                 "but Paimon pushes pattern matches down only for CHAR / VARCHAR / STRING")
        lit = _literal(node.expression)
        if lit.kind not in ("str", "null"):
            raise PredicateError(f"{_sql_of(node)!r} needs a string literal, got {lit.text}")
        if not isinstance(node, exp.Like):
            function = {exp.StartsWith: STARTS_WITH, exp.EndsWith: ENDS_WITH, exp.Contains: CONTAINS}[type(node)]
            text = lit.value
        elif lit.kind == "null":
            function, text = EQUAL, None  # LIKE NULL is never true, as = NULL
        elif (parts := like_parts(lit.value)) is not None:
            return self.starts_and_ends(node, field_name, lit, parts, negated)
        else:
            function, text = like_function(lit.value)
        if node.args.get("negate"):
            negated = not negated
        if negated and function.negate() is None:
            shown = node.copy()
            shown.set("negate", None)
            raise PredicateError(f"NOT {_sql_of(shown)} is not pushed down by Paimon: {function.name} "
                                 "has no negation")
        return self.leaf(function, field_name, [_Lit(lit.kind, text, lit.text)], negated,
                         coerce=function is EQUAL)

    def starts_and_ends(self, node: exp.Expression, field_name: str, lit: _Lit, parts: tuple[str, str],
                        negated: bool) -> Predicate:
        """``LIKE 'a%b'`` as Spark's ``LikeSimplification`` rewrites it: ``length >= 2 AND
        startsWith('a') AND endsWith('b')``. Spark hands Paimon the two string tests as conjuncts
        of the WHERE (the length test stays with Spark); inside an OR, or negated, the whole
        condition stays with Spark (a conjunct Spark cannot translate fails its AND, and Paimon
        has no negation of the string tests)."""
        if negated != bool(node.args.get("negate")):
            shown = node.copy()
            shown.set("negate", None)
            raise PredicateError(f"NOT {_sql_of(shown)} is not pushed down by Paimon: {STARTS_WITH.name} "
                                 "has no negation")
        if self.under_or:
            raise PredicateError(f"{_sql_of(node)!r} inside OR is not pushed down by Paimon: Spark rewrites it "
                                 "as startsWith AND endsWith AND a length test it cannot hand over")
        prefix, suffix = parts
        return Compound(AND, (Leaf(STARTS_WITH, field_name, (prefix,)), Leaf(ENDS_WITH, field_name, (suffix,))))

    def compound(self, node: exp.And | exp.Or, negated: bool) -> Compound:
        """An AND/OR chain, flattened without recursing down sqlglot's left-deep tree."""
        cls = type(node)
        function: CompoundFunction = AND if cls is exp.And else OR
        if negated:
            function = function.negate()
        sides: list[exp.Expression] = []
        stack: list[exp.Expression] = [node]
        while stack:
            n = stack.pop()
            if type(n) is cls:
                stack.extend((n.expression, n.this))
            else:
                sides.append(n)
        children: list[Predicate] = []
        self.under_or += function is OR
        try:
            built = [self.build(side, negated) for side in sides]
        finally:
            self.under_or -= function is OR
        for child in built:
            if isinstance(child, Compound) and child.function is function:
                children.extend(child.children)
            else:
                children.append(child)
        return Compound(function, tuple(children))

    def build(self, node: exp.Expression, negated: bool = False) -> Predicate:
        while isinstance(node, exp.Paren | exp.Not):
            if isinstance(node, exp.Not):
                negated = not negated
            node = node.this
        if isinstance(node, exp.And | exp.Or):
            return self.compound(node, negated)
        function = _CMP.get(type(node))
        if function is not None:
            left, right = node.this, node.expression
            field_name = self.column(left)
            if field_name is None:
                field_name, left, right, function = self.column(right), right, left, function.reverse()
                if field_name is None:
                    raise PredicateError(f"{_sql_of(node)!r} must compare a column with a literal")
            if self.column(right) is not None:
                raise PredicateError(f"comparing two columns is not supported: {_sql_of(node)!r}")
            return self.leaf(function, field_name, [_literal(right)], negated)
        if isinstance(node, exp.In):
            field_name = self.column(node.this)
            if field_name is None or node.args.get("query") is not None or node.args.get("unnest"):
                raise PredicateError(f"IN needs a column and a list of literals: {_sql_of(node)!r}")
            if not node.expressions:
                raise PredicateError(f"IN needs at least one literal: {_sql_of(node)!r}")
            return self.leaf(IN, field_name, [_literal(e) for e in node.expressions], negated)
        if isinstance(node, exp.Is):
            field_name = self.column(node.this)
            if field_name is None or not isinstance(node.expression, exp.Null):
                raise PredicateError(f"only <column> IS [NOT] NULL is supported: {_sql_of(node)!r}")
            return self.leaf(IS_NULL, field_name, [], negated)
        if isinstance(node, exp.Between):
            field_name = self.column(node.this)
            if field_name is None:
                raise PredicateError(f"BETWEEN needs a column on its left: {_sql_of(node)!r}")
            if node.args.get("symmetric"):
                raise PredicateError("BETWEEN SYMMETRIC is not supported")
            lits = [_literal(node.args["low"]), _literal(node.args["high"])]
            return self.leaf(BETWEEN, field_name, lits, negated)
        if isinstance(node, exp.Like | exp.ILike | exp.Escape | exp.StartsWith | exp.EndsWith | exp.Contains):
            return self.pattern(node, negated)
        if isinstance(node, exp.Column):
            field_name = self.column(node)
            if self.schema[field_name].root != "BOOLEAN":
                raise PredicateError(f"column {field_name!r} is not BOOLEAN and cannot stand alone as a condition")
            return self.leaf(EQUAL, field_name, [_Lit("bool", True, "TRUE")], negated)
        raise PredicateError(f"unsupported construct in WHERE: {_sql_of(node)!r} ({type(node).__name__}); "
                             "supported: comparisons, [NOT] IN, IS [NOT] NULL, [NOT] BETWEEN, LIKE 'abc%' / '%abc' / "
                             "'%abc%' / 'a%z', AND, OR, NOT")


_STARTS_AND_ENDS = re.compile(r"([^_%]+)%([^_%]+)", re.DOTALL)


def like_parts(pattern: str) -> tuple[str, str] | None:
    """(prefix, suffix) of a ``'a%b'`` pattern, which Spark's ``LikeSimplification`` turns into
    ``startsWith('a') AND endsWith('b')`` (plus a length test it keeps); None for any other
    pattern, or one holding the escape character (Spark leaves those to its own LIKE)."""
    if "\\" in pattern:
        return None
    found = _STARTS_AND_ENDS.fullmatch(pattern)
    return (found.group(1), found.group(2)) if found else None


def like_function(pattern: str) -> tuple[LeafFunction, str]:
    """The leaf function and literal Spark pushes to Paimon for ``LIKE pattern``: ``'abc%'`` is
    ``startsWith``, ``'%abc'`` ``endsWith``, ``'%abc%'`` ``contains``, no wildcard ``equal``;
    PredicateError for any other pattern (``_``, an inner ``%``, the escape character, a backslash),
    which Spark evaluates itself after the scan."""
    if "\\" in pattern:
        raise PredicateError(f"LIKE pattern {pattern!r} holds the escape character \\: not pushed down by Paimon")
    core = pattern
    lead = core.startswith("%")
    core = core[1:] if lead else core
    trail = core.endswith("%")
    core = core[:-1] if trail else core
    if "%" in core or "_" in core or ((lead or trail) and not core):
        raise PredicateError(f"LIKE pattern {pattern!r} is not pushed down by Paimon: only 'abc%' (startsWith), "
                             "'%abc' (endsWith), '%abc%' (contains), 'a%z' (startsWith AND endsWith) or no wildcard "
                             "(equal) are")
    if lead:
        return (CONTAINS if trail else ENDS_WITH), core
    return (STARTS_WITH if trail else EQUAL), core


# Bounds on WHERE text, checked before sqlglot parses it: sqlglot's recursive descent spends
# about 22 Python frames per parenthesis and 10 per NOT, so nesting is what overflows the stack.
MAX_WHERE_CHARS = 100_000
MAX_NESTING = 24  # open parentheses plus the prefix NOTs still open
MAX_SIGNS = 64  # consecutive unary + / - signs
MAX_NUMBER_CHARS = 100  # digits, point and exponent of one numeric literal
MAX_EXPONENT = 400  # |adjusted exponent| of a numeric literal: beyond DOUBLE and DECIMAL(38)

_SIGN_AFTER = {tokens.TokenType.L_PAREN, tokens.TokenType.COMMA, tokens.TokenType.NOT, tokens.TokenType.DASH,
               tokens.TokenType.PLUS, tokens.TokenType.EQ, tokens.TokenType.NEQ, tokens.TokenType.LT,
               tokens.TokenType.LTE, tokens.TokenType.GT, tokens.TokenType.GTE, tokens.TokenType.AND,
               tokens.TokenType.OR, tokens.TokenType.BETWEEN, tokens.TokenType.IN, None}
_PREFIX_AFTER = {tokens.TokenType.L_PAREN, tokens.TokenType.NOT, tokens.TokenType.AND, tokens.TokenType.OR, None}


def check_sql_bounds(text: str, what: str = "WHERE condition", sql: str | None = None,
                     dialect: Dialect | None = None) -> list[tokens.Token]:
    """The text's tokens (in ``dialect``, default ours); PredicateError when it is too long or
    nests deeper than sqlglot can parse (``what`` names the text in the message: a WHERE
    condition, a workload query). Tokenizing is linear and iterative, so a hostile text costs no
    more than its length; a text the dialect cannot tokenize raises sqlglot's TokenError as
    PredicateError."""
    sql = text if sql is None else sql
    if len(text) > MAX_WHERE_CHARS:
        raise PredicateError(f"{what} of {len(text):,} characters is longer than {MAX_WHERE_CHARS:,}")
    try:
        toks = (dialect or _Dialect()).tokenize(text)
    except sqlglot.errors.TokenError as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise PredicateError(f"cannot parse {what} {sql[:200]!r}: {first}") from exc
    tt = tokens.TokenType
    # prefix NOTs open per parenthesis level; a NOT's operand ends at the next AND / OR there
    open_nots = [0]
    deepest = signs = 0
    previous = None
    for tok in toks:
        kind = tok.token_type
        if kind == tt.L_PAREN:
            open_nots.append(0)
        elif kind == tt.R_PAREN:
            if len(open_nots) > 1:
                open_nots.pop()
        elif kind in (tt.AND, tt.OR):
            open_nots[-1] = 0
        elif kind == tt.NOT and previous in _PREFIX_AFTER:
            open_nots[-1] += 1
        if kind in (tt.DASH, tt.PLUS) and previous in _SIGN_AFTER:
            signs += 1
            if signs > MAX_SIGNS:
                raise PredicateError(f"more than {MAX_SIGNS} signs in a row in the {what}")
        else:
            signs = 0
        if kind == tt.NUMBER and len(tok.text) > MAX_NUMBER_CHARS:
            raise PredicateError(f"numeric literal of {len(tok.text)} characters is longer than {MAX_NUMBER_CHARS}")
        deepest = max(deepest, len(open_nots) - 1 + sum(open_nots))
        previous = kind
    if deepest > MAX_NESTING:
        raise PredicateError(f"{what} nests {deepest} levels deep (parentheses and NOT); "
                             f"at most {MAX_NESTING} are supported")
    return toks


def parse_where(sql: str, schema: Mapping[str, DataType]) -> Predicate:
    """Parse a SQL ``WHERE`` condition into a Paimon predicate over ``schema``'s columns.

    NOT is pushed down to the leaves as Paimon's ``negate()`` does. A comparison with NULL
    keeps its NULL literal: such a leaf is never true (see ``LeafFunction.null_false``). A NULL
    inside an IN list stays in the list as Paimon's ``in`` keeps it: it matches no row, but the
    file indexes see it (a bloom filter keeps the file for it, a bitmap looks up its null rows).
    """
    text = (sql or "").strip()
    if text[:6].upper() == "WHERE " or text.upper() == "WHERE":
        text = text[5:].strip()
    if not text:
        raise PredicateError("empty WHERE condition")
    toks = check_sql_bounds(text, "WHERE condition", sql)
    try:
        statements = _Dialect().parser().parse(toks, text)
    except (sqlglot.errors.ParseError, sqlglot.errors.TokenError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise PredicateError(f"cannot parse WHERE condition {sql[:200]!r}: {first}") from exc
    except RecursionError as exc:  # the bounds above keep sqlglot well inside the stack; a deep caller may not
        raise PredicateError("WHERE condition nests too deeply to parse") from exc
    statements = [s for s in statements if s is not None]
    if len(statements) != 1:
        raise PredicateError(f"expected one condition, got {len(statements)} statements: {sql[:200]!r}")
    return _Builder(schema).build(statements[0])
