"""SQL ``WHERE`` text parsed into predicates with sqlglot, and the golden vectors' JSON trees read
into predicates.

The text is parsed, never evaluated, and bounded before sqlglot sees it (:mod:`.sql_text`: its
length, its nesting, the size of numeric literals). Every literal is converted to an internal
value of its column's type (:mod:`.sql_literals`); a literal that has no such value is a
:class:`PredicateError`.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Mapping
from typing import Any

import sqlglot
from sqlglot import exp

from indexcore import types
from indexcore.errors import PredicateError
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
from indexcore.expr.sql_literals import SqlLiteral, coerce_literal, sql_literal
from indexcore.expr.sql_text import WhereDialect, check_sql_bounds, sql_of
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

_CMP: dict[type, Comparison] = {exp.EQ: EQUAL, exp.NEQ: NOT_EQUAL, exp.LT: LESS_THAN, exp.LTE: LESS_OR_EQUAL,
                                exp.GT: GREATER_THAN, exp.GTE: GREATER_OR_EQUAL}


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
            raise PredicateError(f"qualified column names are not supported: {sql_of(node)}")
        ident = node.this
        if not isinstance(ident, exp.Identifier):
            raise PredicateError(f"unsupported column reference {sql_of(node)}")
        return _resolve_field(ident.this, self.schema)

    def leaf(self, function: LeafFunction, field_name: str, lits: list[SqlLiteral], negated: bool,
             coerce: bool = True) -> Leaf:
        dtype = self.schema[field_name]
        values = tuple(coerce_literal(dtype, lit) if coerce else lit.value for lit in lits)
        if negated:
            function = function.negate()  # never None here: pattern() refuses a negated pattern first
        return Leaf(function, field_name, values)

    def pattern(self, node: exp.Expression, negated: bool) -> Predicate:
        """``col LIKE 'p'`` or ``startswith/endswith/contains(col, 'p')``: what Spark hands Paimon
        (``LIKE 'a%b'`` is ``startsWith('a') AND endsWith('b')``, see :func:`like_parts`)."""
        if isinstance(node, exp.Escape):
            raise PredicateError(f"LIKE with an ESCAPE clause is not pushed down by Paimon: {sql_of(node)!r}")
        if isinstance(node, exp.ILike):
            raise PredicateError(f"ILIKE is not pushed down by Paimon: {sql_of(node)!r}")
        field_name = self.column(node.this)
        if field_name is None or self.column(node.expression) is not None:
            raise PredicateError(f"{sql_of(node)!r} must match a column against a string literal")
        dtype = self.schema[field_name]
        if not dtype.is_string:
            raise PredicateError(f"{sql_of(node)!r}: column {field_name!r} is {dtype.sql()}, "
                                 "but Paimon pushes pattern matches down only for CHAR / VARCHAR / STRING")
        lit = sql_literal(node.expression)
        if lit.kind not in ("str", "null"):
            raise PredicateError(f"{sql_of(node)!r} needs a string literal, got {lit.text}")
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
            raise PredicateError(f"NOT {sql_of(shown)} is not pushed down by Paimon: {function.name} "
                                 "has no negation")
        return self.leaf(function, field_name, [SqlLiteral(lit.kind, text, lit.text)], negated,
                         coerce=function is EQUAL)

    def starts_and_ends(self, node: exp.Expression, field_name: str, lit: SqlLiteral, parts: tuple[str, str],
                        negated: bool) -> Predicate:
        """``LIKE 'a%b'`` as Spark's ``LikeSimplification`` rewrites it: ``length >= 2 AND
        startsWith('a') AND endsWith('b')``. Spark hands Paimon the two string tests as conjuncts
        of the WHERE (the length test stays with Spark); inside an OR, or negated, the whole
        condition stays with Spark (a conjunct Spark cannot translate fails its AND, and Paimon
        has no negation of the string tests)."""
        if negated != bool(node.args.get("negate")):
            shown = node.copy()
            shown.set("negate", None)
            raise PredicateError(f"NOT {sql_of(shown)} is not pushed down by Paimon: {STARTS_WITH.name} "
                                 "has no negation")
        if self.under_or:
            raise PredicateError(f"{sql_of(node)!r} inside OR is not pushed down by Paimon: Spark rewrites it "
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
                    raise PredicateError(f"{sql_of(node)!r} must compare a column with a literal")
            if self.column(right) is not None:
                raise PredicateError(f"comparing two columns is not supported: {sql_of(node)!r}")
            return self.leaf(function, field_name, [sql_literal(right)], negated)
        if isinstance(node, exp.In):
            field_name = self.column(node.this)
            if field_name is None or node.args.get("query") is not None or node.args.get("unnest"):
                raise PredicateError(f"IN needs a column and a list of literals: {sql_of(node)!r}")
            if not node.expressions:
                raise PredicateError(f"IN needs at least one literal: {sql_of(node)!r}")
            return self.leaf(IN, field_name, [sql_literal(e) for e in node.expressions], negated)
        if isinstance(node, exp.Is):
            field_name = self.column(node.this)
            if field_name is None or not isinstance(node.expression, exp.Null):
                raise PredicateError(f"only <column> IS [NOT] NULL is supported: {sql_of(node)!r}")
            return self.leaf(IS_NULL, field_name, [], negated)
        if isinstance(node, exp.Between):
            field_name = self.column(node.this)
            if field_name is None:
                raise PredicateError(f"BETWEEN needs a column on its left: {sql_of(node)!r}")
            if node.args.get("symmetric"):
                raise PredicateError("BETWEEN SYMMETRIC is not supported")
            lits = [sql_literal(node.args["low"]), sql_literal(node.args["high"])]
            return self.leaf(BETWEEN, field_name, lits, negated)
        if isinstance(node, exp.Like | exp.ILike | exp.Escape | exp.StartsWith | exp.EndsWith | exp.Contains):
            return self.pattern(node, negated)
        if isinstance(node, exp.Column):
            field_name = self.column(node)
            if self.schema[field_name].root != "BOOLEAN":
                raise PredicateError(f"column {field_name!r} is not BOOLEAN and cannot stand alone as a condition")
            return self.leaf(EQUAL, field_name, [SqlLiteral("bool", True, "TRUE")], negated)
        raise PredicateError(f"unsupported construct in WHERE: {sql_of(node)!r} ({type(node).__name__}); "
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
        statements = WhereDialect().parser().parse(toks, text)
    except (sqlglot.errors.ParseError, sqlglot.errors.TokenError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise PredicateError(f"cannot parse WHERE condition {sql[:200]!r}: {first}") from exc
    except RecursionError as exc:  # the bounds above keep sqlglot well inside the stack; a deep caller may not
        raise PredicateError("WHERE condition nests too deeply to parse") from exc
    statements = [s for s in statements if s is not None]
    if len(statements) != 1:
        raise PredicateError(f"expected one condition, got {len(statements)} statements: {sql[:200]!r}")
    return _Builder(schema).build(statements[0])
