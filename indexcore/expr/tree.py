"""The predicate tree (Paimon's ``LeafPredicate`` / ``CompoundPredicate``) and its visitors.

Literals are internal values of the column's type (see :mod:`indexcore.types`). Compounds
are n-ary AND / OR; an empty AND is TRUE and an empty OR is FALSE.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from indexcore.errors import PredicateError
from indexcore.expr.functions import LeafFunction, leaf_function
from indexcore.expr.literal import literal_to_sql, quote_name
from indexcore.types import DataType


class CompoundFunction:
    """Paimon's ``And`` / ``Or``; the two instances are :data:`AND` and :data:`OR`."""

    name: ClassVar[str]
    word: ClassVar[str]
    empty: ClassVar[bool]  # the value of the compound without children
    _negation: CompoundFunction

    def negate(self) -> CompoundFunction:
        return self._negation

    def test(self, results: Iterable[bool]) -> bool:
        """Fold the children's answers (short-circuiting)."""
        raise NotImplementedError

    def combine(self, a: Any, b: Any) -> Any:
        """Two children's answers as one (booleans or numpy masks)."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return self.name

    def __reduce__(self) -> tuple:
        return compound_function, (self.name,)


class And(CompoundFunction):
    name, word, empty = "and", "AND", True

    def test(self, results: Iterable[bool]) -> bool:
        return all(results)

    def combine(self, a: Any, b: Any) -> Any:
        return a & b


class Or(CompoundFunction):
    name, word, empty = "or", "OR", False

    def test(self, results: Iterable[bool]) -> bool:
        return any(results)

    def combine(self, a: Any, b: Any) -> Any:
        return a | b


AND, OR = And(), Or()
AND._negation, OR._negation = OR, AND
COMPOUND_FUNCTIONS: dict[str, CompoundFunction] = {"and": AND, "or": OR}


def compound_function(name: str) -> CompoundFunction:
    try:
        return COMPOUND_FUNCTIONS[name]
    except (KeyError, TypeError):
        raise PredicateError(f"unknown compound function {name!r}") from None


@dataclass(frozen=True)
class Leaf:
    """``function(field, literals)``; ``function`` may be given by its Paimon name (``"equal"``)."""

    function: LeafFunction
    field: str
    literals: tuple[Any, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.function, LeafFunction):
            object.__setattr__(self, "function", leaf_function(self.function))
        if not isinstance(self.literals, tuple):
            object.__setattr__(self, "literals", tuple(self.literals))
        self.function.check(self.literals)

    def fields(self) -> set[str]:
        return {self.field}

    def negate(self) -> Leaf:
        """Paimon's ``LeafPredicate.negate()``; PredicateError where Paimon has no negation
        (``startsWith`` / ``endsWith`` / ``contains``: NOT LIKE is not pushed down)."""
        function = self.function.negate()
        if function is None:
            raise PredicateError(f"NOT {predicate_to_sql(self)} cannot be pushed down: Paimon's "
                                 f"{self.function.name} has no negation")
        return Leaf(function, self.field, self.literals)

    def null_false(self) -> bool:
        """True when a NULL literal makes this leaf never true (see ``LeafFunction.null_false``)."""
        return self.function.null_false(self.literals)

    def __str__(self) -> str:
        return predicate_to_sql(self)


@dataclass(frozen=True)
class Compound:
    """``function(children)``; ``function`` may be given by name (``"and"``, ``"or"``)."""

    function: CompoundFunction
    children: tuple[Predicate, ...]

    def __post_init__(self) -> None:
        if not isinstance(self.function, CompoundFunction):
            object.__setattr__(self, "function", compound_function(self.function))
        if not isinstance(self.children, tuple):
            object.__setattr__(self, "children", tuple(self.children))

    def fields(self) -> set[str]:
        out: set[str] = set()
        for c in self.children:
            out |= c.fields()
        return out

    def negate(self) -> Compound:
        """Paimon's ``Predicate.negate()``: swap AND and OR, negate every child."""
        return Compound(self.function.negate(), tuple(c.negate() for c in self.children))

    def __str__(self) -> str:
        return predicate_to_sql(self)


Predicate = Leaf | Compound


# ---------------------------------------------------------------------------------------
# Visitors over the tree (Paimon's ``PredicateBuilder`` helpers).


def negate(pred: Predicate) -> Predicate:
    """Paimon's ``Predicate.negate()``: flip each leaf function, swap AND and OR; PredicateError
    when a leaf has no negation (Paimon's ``Optional.empty()``)."""
    return pred.negate()


def _split(pred: Predicate, function: CompoundFunction) -> list[Predicate]:
    out: list[Predicate] = []
    stack = [pred]
    while stack:
        p = stack.pop()
        if isinstance(p, Compound) and p.function is function:
            stack.extend(reversed(p.children))
        else:
            out.append(p)
    return out


def conjuncts(pred: Predicate) -> list[Predicate]:
    """Paimon's ``PredicateBuilder.splitAnd``: the top-level AND children, flattened."""
    return _split(pred, AND)


def disjuncts(pred: Predicate) -> list[Predicate]:
    """Paimon's ``PredicateBuilder.splitOr``: the top-level OR children, flattened."""
    return _split(pred, OR)


def and_all(preds: Sequence[Predicate]) -> Predicate | None:
    """The AND of ``preds``: None for none, the predicate itself for one."""
    if not preds:
        return None
    return preds[0] if len(preds) == 1 else Compound(AND, tuple(preds))


def leaves(pred: Predicate) -> list[Leaf]:
    """Distinct leaves, in order of appearance."""
    out: list[Leaf] = []
    stack = [pred]
    while stack:
        p = stack.pop()
        if isinstance(p, Leaf):
            if p not in out:
                out.append(p)
        else:
            stack.extend(reversed(p.children))
    return out


def rename(pred: Predicate, names: Mapping[str, str]) -> Predicate:
    """The predicate with fields renamed (``names``: old -> new; others stay)."""
    if isinstance(pred, Leaf):
        return Leaf(pred.function, names.get(pred.field, pred.field), pred.literals)
    return Compound(pred.function, tuple(rename(c, names) for c in pred.children))


def predicate_to_sql(pred: Predicate, schema: Mapping[str, DataType] | None = None) -> str:
    """A SQL ``WHERE`` text for a predicate; ``parse_where`` reads it back to the same tree."""
    if isinstance(pred, Compound):
        if not pred.children:
            return "TRUE" if pred.function.empty else "FALSE"
        joiner = f" {pred.function.word} "
        parts = []
        for child in pred.children:
            text = predicate_to_sql(child, schema)
            parts.append(f"({text})" if isinstance(child, Compound) and len(child.children) > 1 else text)
        return joiner.join(parts)
    dtype = (schema or {}).get(pred.field)
    name = quote_name(pred.field)
    return pred.function.to_sql(name, [literal_to_sql(v, dtype) for v in pred.literals])
