"""Manifest-statistics pruning with Paimon's semantics (``LeafFunction.test`` on min/max/nulls).

Each leaf function owns its statistics test (:meth:`indexcore.expr.LeafFunction.test_stats`);
this module folds it over a predicate tree.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..expr import Leaf, Predicate


def stats_test(leaf: Leaf, row_count: int, min_value: Any, max_value: Any, null_count: int | None) -> bool:
    """May a file with these statistics hold a row matching ``leaf``? (``LeafPredicate.test``)"""
    return leaf.function.test_stats(row_count, min_value, max_value, null_count, leaf.literals)


def test_predicate_on_stats(pred: Predicate, row_count: int,
                            stats: Mapping[str, tuple[Any, Any, int | None]]) -> bool:
    """Fold ``stats_test`` over a tree; a field without statistics may match."""
    if isinstance(pred, Leaf):
        if pred.field not in stats:
            return True
        return stats_test(pred, row_count, *stats[pred.field])
    return pred.function.test(test_predicate_on_stats(c, row_count, stats) for c in pred.children)
