"""File-index evaluation with Paimon's ``FileIndexPredicate`` semantics.

A leaf is answered by every index of its column, ANDed in file order, stopping at the first
result that cannot remain; a column without an index answers REMAIN. AND folds its children
left to right and stops once the result cannot remain; OR folds all of them. An empty
compound is REMAIN. Results are REMAIN, SKIP or a bitmap of rows (an empty bitmap means the
same as SKIP and is returned as it is, not turned into SKIP).

One deliberate difference from Java: a leaf whose NULL literal makes it never true
(``c = NULL``, ``c NOT IN (1, NULL)``; see :meth:`indexcore.expr.LeafFunction.null_false`) answers
SKIP without asking the indexes, as Paimon's null-false leaf functions and statistics do.
NULL literals inside an ``in`` list are dropped before the indexes see them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from indexcore.expr import AND, IN, Leaf, Predicate
from indexcore.formats.base import REMAIN, SKIP, BitmapResult, FileIndexReader, FileIndexResult
from indexcore.formats.registry import open_reader
from indexcore.io import ByteSource
from indexcore.types import DataType

OptionsFor = Callable[[str, str], Mapping[str, str] | None]


class FileIndexPredicate:
    """Evaluate predicates and top-N over one file's indexes (Paimon's ``FileIndexPredicate``).

    ``container`` is a :class:`indexcore.formats.container.FileIndexContainer`; ``row_type``
    maps column names to their types (the data file's row type); ``options_for(column,
    index_type)`` gives reader options where a format needs them. Readers open lazily, once.
    """

    def __init__(self, container: Any, row_type: Mapping[str, DataType],
                 options_for: OptionsFor | None = None):
        self.container = container
        self.row_type = dict(row_type)
        self.options_for = options_for
        self._readers: dict[str, list[FileIndexReader]] = {}

    @classmethod
    def for_readers(cls, readers: Mapping[str, Sequence[FileIndexReader]],
                    row_type: Mapping[str, DataType] | None = None) -> FileIndexPredicate:
        """An evaluator over readers already opened, e.g. one blob as column ``c``."""
        out = cls(None, row_type or {})
        out._readers = {name: list(rs) for name, rs in readers.items()}
        return out

    def readers(self, column: str) -> list[FileIndexReader]:
        """The column's readers in file order; none when the column has no index or no type."""
        if column in self._readers:
            return self._readers[column]
        found: list[FileIndexReader] = []
        dtype = self.row_type.get(column)
        if self.container is not None and dtype is not None:
            for entry in self.container.head.entries_for(column):
                options = self.options_for(column, entry.index_type) if self.options_for else None
                found.append(self.container.reader(entry, dtype, dict(options or {})))
        self._readers[column] = found
        return found

    def evaluate(self, predicate: Predicate | None, incoming: FileIndexResult | None = None) -> FileIndexResult:
        """``FileIndexPredicate.evaluate``: the predicate's result, ANDed with ``incoming`` if given."""
        if predicate is None:
            return REMAIN
        result = self._test(predicate)
        return result.and_(incoming) if incoming is not None else result

    def _test(self, predicate: Predicate) -> FileIndexResult:
        if isinstance(predicate, Leaf):
            return self._test_leaf(predicate)
        result: FileIndexResult | None = None
        if predicate.function is AND:
            for child in predicate.children:
                value = self._test(child)
                result = value if result is None else result.and_(value)
                if not result.remain():
                    return result
            return REMAIN if result is None else result
        for child in predicate.children:
            value = self._test(child)
            result = value if result is None else result.or_(value)
        return REMAIN if result is None else result

    def _test_leaf(self, leaf: Leaf) -> FileIndexResult:
        if leaf.null_false():
            return SKIP
        literals = leaf.literals
        if leaf.function is IN and None in literals:
            literals = tuple(v for v in literals if v is not None)
        result = REMAIN
        for reader in self.readers(leaf.field):
            result = result.and_(leaf.function.visit(reader, literals))
            if not result.remain():
                return result
        return result

    def evaluate_top_n(self, field: str, k: int, ascending: bool = True, nulls_first: bool = False,
                       strict: bool = True, incoming: FileIndexResult = REMAIN) -> FileIndexResult:
        """``FileIndexPredicate.evaluateTopN`` for one sort field (``strict=False``: more sort keys).

        The incoming result comes back unchanged when it cannot remain, when it already holds
        at most ``k`` rows, or when no index of the field answers top-N (only range-bitmap does).
        """
        if not incoming.remain():
            return incoming
        if isinstance(incoming, BitmapResult) and len(incoming.bitmap) <= k:
            return incoming
        for reader in self.readers(field):
            visit = getattr(reader, "visit_top_n", None)
            if visit is None:
                continue
            answer = visit(k, ascending, nulls_first, strict, incoming)
            if answer is not REMAIN:
                return answer
        return incoming


def evaluate_blob(index_type: str, dtype: DataType, source: ByteSource, predicate: Predicate | None,
                  options: Mapping[str, str] | None = None, column: str = "c") -> FileIndexResult:
    """Evaluate on one index blob as if it were the only index of ``column`` in a container."""
    return blob_predicate(index_type, dtype, source, options, column).evaluate(predicate)


def blob_predicate(index_type: str, dtype: DataType, source: ByteSource,
                   options: Mapping[str, str] | None = None, column: str = "c") -> FileIndexPredicate:
    """A :class:`FileIndexPredicate` over one blob, for several predicates or top-N."""
    reader = open_reader(index_type, dtype, source, dict(options or {}))
    return FileIndexPredicate.for_readers({column: [reader]}, {column: dtype})


def result_to_json(result: FileIndexResult) -> Any:
    """``"REMAIN"``, ``"SKIP"`` or ``{"rows": [sorted positions]}`` (an empty bitmap stays a bitmap;
    a huge one is listed up to a cap, see :func:`~indexcore.formats.base.listed_positions`)."""
    return result.to_json()
