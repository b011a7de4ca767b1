"""Manifest-statistics pruning and row tests with Paimon's semantics (``LeafFunction.test``).

Comparisons follow Java's ``compareTo`` on Paimon's internal values: doubles order ``-0.0``
before ``0.0`` and NaN above everything; strings by UTF-8 bytes (the same as code points).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ..predicate import Compound, Leaf, Predicate

_NEEDS_LITERAL = {"equal", "notEqual", "lessThan", "lessOrEqual", "greaterThan", "greaterOrEqual"}


def java_compare(a: Any, b: Any) -> int:
    """``a.compareTo(b)`` as Java does it for Paimon's internal values."""
    if isinstance(a, float) or isinstance(b, float):
        a, b = float(a), float(b)
        if math.isnan(a) or math.isnan(b):
            return (math.isnan(a) > math.isnan(b)) - (math.isnan(a) < math.isnan(b))
        if a == b == 0.0:
            sa, sb = math.copysign(1, a) < 0, math.copysign(1, b) < 0
            return (sb > sa) - (sb < sa)
    return (a > b) - (a < b)


def stats_test(leaf: Leaf, row_count: int, min_value: Any, max_value: Any, null_count: int | None) -> bool:
    """May a file with these statistics hold a row matching ``leaf``? (``LeafPredicate.test``)"""
    all_null = null_count is not None and row_count == null_count
    if not all_null and (min_value is None or max_value is None):
        return True
    op, lits = leaf.op, leaf.literals
    if op == "isNull":
        return null_count is None or null_count > 0
    if op == "isNotNull":
        return null_count is None or null_count < row_count
    if all_null:
        return False
    if op in _NEEDS_LITERAL or op in ("between", "notBetween"):
        if any(v is None for v in lits):
            return False
        lo, hi = java_compare(lits[0], min_value), java_compare(lits[0], max_value)
        if op == "equal":
            return lo >= 0 and hi <= 0
        if op == "notEqual":
            return lo != 0 or hi != 0
        if op == "lessThan":
            return lo > 0
        if op == "lessOrEqual":
            return lo >= 0
        if op == "greaterThan":
            return hi < 0
        if op == "greaterOrEqual":
            return hi <= 0
        if op == "between":
            return hi <= 0 and java_compare(lits[1], min_value) >= 0
        return lo > 0 or java_compare(lits[1], max_value) < 0
    if op == "in":
        return any(v is not None and java_compare(v, min_value) >= 0 and java_compare(v, max_value) <= 0
                   for v in lits)
    if op == "notIn":
        return not any(v is None or (java_compare(v, min_value) == 0 and java_compare(v, max_value) == 0)
                       for v in lits)
    return True


def row_test(leaf: Leaf, value: Any) -> bool:
    """Does one value match ``leaf``? SQL semantics: a null value matches only ``isNull``."""
    op, lits = leaf.op, leaf.literals
    if op == "isNull":
        return value is None
    if op == "isNotNull":
        return value is not None
    if value is None:
        return False
    if op == "in":
        return any(v is not None and java_compare(v, value) == 0 for v in lits)
    if op == "notIn":
        return not any(v is None or java_compare(v, value) == 0 for v in lits)
    if any(v is None for v in lits):
        return False
    c = java_compare(value, lits[0])
    if op == "equal":
        return c == 0
    if op == "notEqual":
        return c != 0
    if op == "lessThan":
        return c < 0
    if op == "lessOrEqual":
        return c <= 0
    if op == "greaterThan":
        return c > 0
    if op == "greaterOrEqual":
        return c >= 0
    c2 = java_compare(value, lits[1])
    if op == "between":
        return c >= 0 and c2 <= 0
    if op == "notBetween":
        return c < 0 or c2 > 0
    return True


def test_predicate_on_stats(pred: Predicate, row_count: int,
                            stats: Mapping[str, tuple[Any, Any, int | None]]) -> bool:
    """Fold ``stats_test`` over a tree; a field without statistics may match."""
    if isinstance(pred, Compound):
        results = (test_predicate_on_stats(c, row_count, stats) for c in pred.children)
        return all(results) if pred.op == "and" else any(results)
    if pred.field not in stats:
        return True
    lo, hi, nulls = stats[pred.field]
    return stats_test(pred, row_count, lo, hi, nulls)


def test_predicate_on_row(pred: Predicate, row: Mapping[str, Any]) -> bool:
    """Evaluate a tree on one row of internal values (a missing field counts as null)."""
    if isinstance(pred, Compound):
        results = (test_predicate_on_row(c, row) for c in pred.children)
        return all(results) if pred.op == "and" else any(results)
    return row_test(pred, row.get(pred.field))
