"""Paimon's leaf functions as types (``LeafFunction``): one class per function, one instance each.

A function owns its rules: its name, how many literals it takes, its negation, when a NULL
literal makes it never true, how it tests one value and a file's min/max statistics, how it
reads as SQL, and which method of a :class:`FunctionVisitor` answers it (the file-index
readers and the vectorized row evaluator are visitors, as in Paimon).

Comparisons follow Java's ``compareTo`` on Paimon's internal values (:func:`java_compare`):
doubles order ``-0.0`` before ``0.0`` and NaN above everything (NaN equals NaN); strings by
UTF-8 bytes (the same as code points). A NULL value is never matched except by ``isNull``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar

from indexcore.errors import PredicateError


def java_compare(a: Any, b: Any) -> int:
    """``a.compareTo(b)`` as Java does it for Paimon's internal values (a float on either
    side compares as doubles, like ``Double.compare``)."""
    if isinstance(a, float) or isinstance(b, float):
        a, b = float(a), float(b)
        a_nan, b_nan = math.isnan(a), math.isnan(b)
        if a_nan or b_nan:
            return a_nan - b_nan
        if a == b == 0.0:
            a_neg, b_neg = math.copysign(1, a) < 0, math.copysign(1, b) < 0
            return b_neg - a_neg
    return (a > b) - (a < b)


class FunctionVisitor:
    """Paimon's ``FunctionVisitor``: one method per leaf function, called by
    :meth:`LeafFunction.visit` with the leaf's literals; a method a visitor leaves out answers
    :meth:`unanswered`."""

    def unanswered(self) -> Any:
        """The answer for a function this visitor has no method for."""
        raise NotImplementedError

    def visit_is_null(self) -> Any:
        return self.unanswered()

    def visit_is_not_null(self) -> Any:
        return self.unanswered()

    def visit_equal(self, literal: Any) -> Any:
        return self.unanswered()

    def visit_not_equal(self, literal: Any) -> Any:
        return self.unanswered()

    def visit_less_than(self, literal: Any) -> Any:
        return self.unanswered()

    def visit_less_or_equal(self, literal: Any) -> Any:
        return self.unanswered()

    def visit_greater_than(self, literal: Any) -> Any:
        return self.unanswered()

    def visit_greater_or_equal(self, literal: Any) -> Any:
        return self.unanswered()

    def visit_in(self, literals: list) -> Any:
        return self.unanswered()

    def visit_not_in(self, literals: list) -> Any:
        return self.unanswered()

    def visit_between(self, low: Any, high: Any) -> Any:
        return self.unanswered()

    def visit_not_between(self, low: Any, high: Any) -> Any:
        return self.unanswered()

    def visit_starts_with(self, literal: Any) -> Any:
        return self.unanswered()

    def visit_ends_with(self, literal: Any) -> Any:
        return self.unanswered()

    def visit_contains(self, literal: Any) -> Any:
        return self.unanswered()


class LeafFunction:
    """A leaf function; subclasses are singletons, compared by identity."""

    name: ClassVar[str]
    arity: ClassVar[int | None] = 1  # None: one literal or more
    _negation: LeafFunction | None

    def negate(self) -> LeafFunction | None:
        """Paimon's ``LeafFunction.negate()``; None where Paimon answers ``Optional.empty()``
        (the string-pattern functions: ``NOT LIKE`` is not pushed down)."""
        return self._negation

    def check(self, literals: Sequence[Any]) -> None:
        """PredicateError unless ``literals`` fit this function's arity."""
        if self.arity is None:
            if not literals:
                raise PredicateError(f"{self.name} needs at least one literal")
        elif len(literals) != self.arity:
            raise PredicateError(f"{self.name} takes {self.arity} literal(s), got {len(literals)}")

    def null_false(self, literals: Sequence[Any]) -> bool:
        """True when NULL literals make the leaf never true (Paimon's null-false functions)."""
        return any(v is None for v in literals)

    def test(self, value: Any, literals: Sequence[Any]) -> bool:
        """Does one internal value match? (``LeafFunction.test`` on a row's field.)"""
        if value is None or self.null_false(literals):
            return False
        return self._test(value, literals)

    def test_stats(self, row_count: int, min_value: Any, max_value: Any, null_count: int | None,
                   literals: Sequence[Any]) -> bool:
        """May a file with these statistics hold a matching row? (``LeafFunction.test`` on stats.)"""
        all_null = null_count is not None and row_count == null_count
        if not all_null and (min_value is None or max_value is None):
            return True
        return self._test_stats(row_count, min_value, max_value, null_count, all_null, literals)

    def _test_stats(self, row_count: int, min_value: Any, max_value: Any, null_count: int | None,
                    all_null: bool, literals: Sequence[Any]) -> bool:
        if all_null or self.null_false(literals):
            return False
        return self._test_range(min_value, max_value, literals)

    def _test(self, value: Any, literals: Sequence[Any]) -> bool:
        raise NotImplementedError

    def _test_range(self, min_value: Any, max_value: Any, literals: Sequence[Any]) -> bool:
        raise NotImplementedError

    def visit(self, visitor: FunctionVisitor, literals: Sequence[Any]) -> Any:
        """Dispatch to the visitor's method for this function."""
        raise NotImplementedError

    def to_sql(self, column: str, literals: Sequence[str]) -> str:
        """SQL text for the leaf, given the column's and the literals' SQL text."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return self.name

    def __reduce__(self) -> tuple:
        return leaf_function, (self.name,)


class IsNull(LeafFunction):
    name = "isNull"
    arity = 0

    def null_false(self, literals: Sequence[Any]) -> bool:
        return False

    def test(self, value: Any, literals: Sequence[Any]) -> bool:
        return value is None

    def _test_stats(self, row_count, min_value, max_value, null_count, all_null, literals) -> bool:
        return null_count is None or null_count > 0

    def visit(self, visitor: FunctionVisitor, literals: Sequence[Any]) -> Any:
        return visitor.visit_is_null()

    def to_sql(self, column: str, literals: Sequence[str]) -> str:
        return f"{column} IS NULL"


class IsNotNull(LeafFunction):
    name = "isNotNull"
    arity = 0

    def null_false(self, literals: Sequence[Any]) -> bool:
        return False

    def test(self, value: Any, literals: Sequence[Any]) -> bool:
        return value is not None

    def _test_stats(self, row_count, min_value, max_value, null_count, all_null, literals) -> bool:
        return null_count is None or null_count < row_count

    def visit(self, visitor: FunctionVisitor, literals: Sequence[Any]) -> Any:
        return visitor.visit_is_not_null()

    def to_sql(self, column: str, literals: Sequence[str]) -> str:
        return f"{column} IS NOT NULL"


class Comparison(LeafFunction):
    """A binary comparison of the value with one literal; ``holds`` reads ``compare(value, literal)``."""

    symbol: ClassVar[str]
    _reverse: Comparison

    def reverse(self) -> Comparison:
        """The comparison with its operands swapped (``5 < c`` is ``c > 5``)."""
        return self._reverse

    def holds(self, c: int) -> bool:
        raise NotImplementedError

    def _test(self, value: Any, literals: Sequence[Any]) -> bool:
        return self.holds(java_compare(value, literals[0]))

    def to_sql(self, column: str, literals: Sequence[str]) -> str:
        return f"{column} {self.symbol} {literals[0]}"


class Equal(Comparison):
    name, symbol = "equal", "="

    def holds(self, c: int) -> bool:
        return c == 0

    def _test_range(self, lo: Any, hi: Any, literals: Sequence[Any]) -> bool:
        return java_compare(literals[0], lo) >= 0 and java_compare(literals[0], hi) <= 0

    def visit(self, visitor: FunctionVisitor, literals: Sequence[Any]) -> Any:
        return visitor.visit_equal(literals[0])


class NotEqual(Comparison):
    name, symbol = "notEqual", "<>"

    def holds(self, c: int) -> bool:
        return c != 0

    def _test_range(self, lo: Any, hi: Any, literals: Sequence[Any]) -> bool:
        return java_compare(literals[0], lo) != 0 or java_compare(literals[0], hi) != 0

    def visit(self, visitor: FunctionVisitor, literals: Sequence[Any]) -> Any:
        return visitor.visit_not_equal(literals[0])


class LessThan(Comparison):
    name, symbol = "lessThan", "<"

    def holds(self, c: int) -> bool:
        return c < 0

    def _test_range(self, lo: Any, hi: Any, literals: Sequence[Any]) -> bool:
        return java_compare(literals[0], lo) > 0

    def visit(self, visitor: FunctionVisitor, literals: Sequence[Any]) -> Any:
        return visitor.visit_less_than(literals[0])


class LessOrEqual(Comparison):
    name, symbol = "lessOrEqual", "<="

    def holds(self, c: int) -> bool:
        return c <= 0

    def _test_range(self, lo: Any, hi: Any, literals: Sequence[Any]) -> bool:
        return java_compare(literals[0], lo) >= 0

    def visit(self, visitor: FunctionVisitor, literals: Sequence[Any]) -> Any:
        return visitor.visit_less_or_equal(literals[0])


class GreaterThan(Comparison):
    name, symbol = "greaterThan", ">"

    def holds(self, c: int) -> bool:
        return c > 0

    def _test_range(self, lo: Any, hi: Any, literals: Sequence[Any]) -> bool:
        return java_compare(literals[0], hi) < 0

    def visit(self, visitor: FunctionVisitor, literals: Sequence[Any]) -> Any:
        return visitor.visit_greater_than(literals[0])


class GreaterOrEqual(Comparison):
    name, symbol = "greaterOrEqual", ">="

    def holds(self, c: int) -> bool:
        return c >= 0

    def _test_range(self, lo: Any, hi: Any, literals: Sequence[Any]) -> bool:
        return java_compare(literals[0], hi) <= 0

    def visit(self, visitor: FunctionVisitor, literals: Sequence[Any]) -> Any:
        return visitor.visit_greater_or_equal(literals[0])


class In(LeafFunction):
    """``in``: NULL literals are ignored while a non-NULL one is left."""

    name = "in"
    arity = None

    def null_false(self, literals: Sequence[Any]) -> bool:
        return all(v is None for v in literals)

    def _test(self, value: Any, literals: Sequence[Any]) -> bool:
        return any(v is not None and java_compare(value, v) == 0 for v in literals)

    def _test_range(self, lo: Any, hi: Any, literals: Sequence[Any]) -> bool:
        return any(v is not None and java_compare(v, lo) >= 0 and java_compare(v, hi) <= 0 for v in literals)

    def visit(self, visitor: FunctionVisitor, literals: Sequence[Any]) -> Any:
        return visitor.visit_in(list(literals))

    def to_sql(self, column: str, literals: Sequence[str]) -> str:
        return f"{column} IN ({', '.join(literals)})"


class NotIn(LeafFunction):
    name = "notIn"
    arity = None

    def _test(self, value: Any, literals: Sequence[Any]) -> bool:
        return all(java_compare(value, v) != 0 for v in literals)

    def _test_range(self, lo: Any, hi: Any, literals: Sequence[Any]) -> bool:
        return not any(java_compare(v, lo) == 0 and java_compare(v, hi) == 0 for v in literals)

    def visit(self, visitor: FunctionVisitor, literals: Sequence[Any]) -> Any:
        return visitor.visit_not_in(list(literals))

    def to_sql(self, column: str, literals: Sequence[str]) -> str:
        return f"{column} NOT IN ({', '.join(literals)})"


class Between(LeafFunction):
    name = "between"
    arity = 2

    def _test(self, value: Any, literals: Sequence[Any]) -> bool:
        return java_compare(value, literals[0]) >= 0 and java_compare(value, literals[1]) <= 0

    def _test_range(self, lo: Any, hi: Any, literals: Sequence[Any]) -> bool:
        return java_compare(literals[0], hi) <= 0 and java_compare(literals[1], lo) >= 0

    def visit(self, visitor: FunctionVisitor, literals: Sequence[Any]) -> Any:
        return visitor.visit_between(literals[0], literals[1])

    def to_sql(self, column: str, literals: Sequence[str]) -> str:
        return f"{column} BETWEEN {literals[0]} AND {literals[1]}"


class NotBetween(LeafFunction):
    name = "notBetween"
    arity = 2

    def _test(self, value: Any, literals: Sequence[Any]) -> bool:
        return java_compare(value, literals[0]) < 0 or java_compare(value, literals[1]) > 0

    def _test_range(self, lo: Any, hi: Any, literals: Sequence[Any]) -> bool:
        return java_compare(literals[0], lo) > 0 or java_compare(literals[1], hi) < 0

    def visit(self, visitor: FunctionVisitor, literals: Sequence[Any]) -> Any:
        return visitor.visit_not_between(literals[0], literals[1])

    def to_sql(self, column: str, literals: Sequence[str]) -> str:
        return f"{column} NOT BETWEEN {literals[0]} AND {literals[1]}"


class StringPattern(LeafFunction):
    """Paimon's ``StartsWith`` / ``EndsWith`` / ``Contains``: what Spark pushes down for ``LIKE 'abc%'``,
    ``'%abc'`` and ``'%abc%'``. Null-false binary functions over strings (compared as UTF-8 bytes,
    the same as code points); they have no negation, so Paimon never pushes ``NOT LIKE``."""

    word: ClassVar[str]  # Spark SQL's function of the same meaning
    _negation = None

    def _test(self, value: Any, literals: Sequence[Any]) -> bool:
        pattern = literals[0]
        if not (isinstance(value, str) and isinstance(pattern, str)
                or isinstance(value, bytes | bytearray) and isinstance(pattern, bytes | bytearray)):
            raise PredicateError(f"{self.name} tests strings, not {type(value).__name__} "
                                 f"against {type(pattern).__name__}")
        return self._match(value, pattern)

    def _match(self, value: Any, pattern: Any) -> bool:
        raise NotImplementedError

    def like(self, pattern: str) -> str:
        """The ``LIKE`` pattern Spark turns into this function."""
        raise NotImplementedError

    def to_sql(self, column: str, literals: Sequence[str]) -> str:
        text = literals[0]
        if text.startswith("'") and text != "''" and not any(c in text for c in "%_\\"):
            return f"{column} LIKE {self.like(text)}"
        return f"{self.word}({column}, {text})"  # a literal LIKE cannot spell: empty, a wildcard in it, NULL


class StartsWith(StringPattern):
    name, word = "startsWith", "startswith"

    def _match(self, value: Any, pattern: Any) -> bool:
        return value.startswith(pattern)

    def _test_range(self, lo: Any, hi: Any, literals: Sequence[Any]) -> bool:
        # some value may start with the prefix unless min sorts after every such value or max before the prefix
        p = literals[0]
        return ((lo.startswith(p) or java_compare(lo, p) <= 0)
                and (hi.startswith(p) or java_compare(hi, p) >= 0))

    def visit(self, visitor: FunctionVisitor, literals: Sequence[Any]) -> Any:
        return visitor.visit_starts_with(literals[0])

    def like(self, pattern: str) -> str:
        return pattern[:-1] + "%'"


class _NoStatsPattern(StringPattern):
    """A pattern min/max cannot decide: a file is kept unless it holds only NULLs (or the
    literal is NULL while the null count is known), as Paimon's ``test`` on statistics says."""

    def _test_stats(self, row_count, min_value, max_value, null_count, all_null, literals) -> bool:
        return not (null_count is not None and (all_null or literals[0] is None))


class EndsWith(_NoStatsPattern):
    name, word = "endsWith", "endswith"

    def _match(self, value: Any, pattern: Any) -> bool:
        return value.endswith(pattern)

    def visit(self, visitor: FunctionVisitor, literals: Sequence[Any]) -> Any:
        return visitor.visit_ends_with(literals[0])

    def like(self, pattern: str) -> str:
        return "'%" + pattern[1:]


class Contains(_NoStatsPattern):
    name, word = "contains", "contains"

    def _match(self, value: Any, pattern: Any) -> bool:
        return pattern in value

    def visit(self, visitor: FunctionVisitor, literals: Sequence[Any]) -> Any:
        return visitor.visit_contains(literals[0])

    def like(self, pattern: str) -> str:
        return "'%" + pattern[1:-1] + "%'"


IS_NULL, IS_NOT_NULL = IsNull(), IsNotNull()
EQUAL, NOT_EQUAL = Equal(), NotEqual()
LESS_THAN, LESS_OR_EQUAL, GREATER_THAN, GREATER_OR_EQUAL = LessThan(), LessOrEqual(), GreaterThan(), GreaterOrEqual()
IN, NOT_IN = In(), NotIn()
BETWEEN, NOT_BETWEEN = Between(), NotBetween()
STARTS_WITH, ENDS_WITH, CONTAINS = StartsWith(), EndsWith(), Contains()

for _a, _b in ((IS_NULL, IS_NOT_NULL), (EQUAL, NOT_EQUAL), (LESS_THAN, GREATER_OR_EQUAL),
               (LESS_OR_EQUAL, GREATER_THAN), (IN, NOT_IN), (BETWEEN, NOT_BETWEEN)):
    _a._negation, _b._negation = _b, _a
for _a, _b in ((EQUAL, EQUAL), (NOT_EQUAL, NOT_EQUAL), (LESS_THAN, GREATER_THAN),
               (LESS_OR_EQUAL, GREATER_OR_EQUAL)):
    _a._reverse, _b._reverse = _b, _a

LEAF_FUNCTIONS: dict[str, LeafFunction] = {f.name: f for f in (
    EQUAL, NOT_EQUAL, IN, NOT_IN, IS_NULL, IS_NOT_NULL, LESS_THAN, LESS_OR_EQUAL, GREATER_THAN,
    GREATER_OR_EQUAL, BETWEEN, NOT_BETWEEN, STARTS_WITH, ENDS_WITH, CONTAINS)}


def leaf_function(name: str) -> LeafFunction:
    """The function Paimon calls ``name`` (``equal``, ``notIn``, ...); PredicateError if unknown."""
    try:
        return LEAF_FUNCTIONS[name]
    except (KeyError, TypeError):
        raise PredicateError(f"unknown predicate function {name!r}") from None
