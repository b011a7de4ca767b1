"""Predicates in Paimon's vocabulary, and SQL ``WHERE`` text parsed into them with sqlglot.

Leaf functions: ``equal, notEqual, in, notIn, isNull, isNotNull, lessThan, lessOrEqual,
greaterThan, greaterOrEqual, between, notBetween``; compounds ``and`` / ``or`` (n-ary).
Literals are internal values of the column's type (see :mod:`indexcore.types`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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


@dataclass(frozen=True)
class Compound:
    op: str
    children: tuple[Predicate, ...]

    def fields(self) -> set[str]:
        out: set[str] = set()
        for c in self.children:
            out |= c.fields()
        return out


Predicate = Leaf | Compound
