"""The per-row test oracle: a predicate evaluated on one row of internal values at a time.

Each leaf function's own value test (Paimon's ``LeafFunction.test``), folded over the tree with
Python's ``all`` / ``any``. No production code evaluates rows this way; the vectorized evaluator
(:mod:`indexcore.expr.rows`) is checked against it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from indexcore.expr import Leaf, Predicate


def row_test(leaf: Leaf, value: Any) -> bool:
    """Does one value match ``leaf``? A NULL value matches only ``isNull``."""
    return leaf.function.test(value, leaf.literals)


def predicate_on_row(pred: Predicate, row: Mapping[str, Any]) -> bool:
    """Evaluate a tree on one row of internal values (a missing field counts as NULL)."""
    if isinstance(pred, Leaf):
        return row_test(pred, row.get(pred.field))
    return pred.function.test(predicate_on_row(c, row) for c in pred.children)
