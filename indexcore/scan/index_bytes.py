"""The file index stage on whole containers held in memory, without a container, reader or result
object per file where the predicate lets it.

Files of one schema and writer share the container head's layout, so per pushed filter, row type
and layout a plan is made once (:class:`BytesPlans`): each leaf's column entries by position in
the head, and for a bitmap-only column the literals' keys, encodings and codec
(:class:`~indexcore.formats.bitmap.lookup.BitmapLookup`). A file is then answered from its bytes:
the head's spans unpacked with one ``struct`` call, each bitmap blob's head parsed and the key
found on the bytes. The folding is :class:`~indexcore.scan.file_index.FileIndexPredicate`'s (the
same result objects and their ``and_`` / ``or_``), and the bytes counted are those its readers
count: the container head, and per blob its head, index blocks and bitmaps read.

A leaf on a column that is not bitmap-only (or a function a bitmap does not answer on the bytes) is
answered by the column's readers opened on the blob's bytes in memory, as
:class:`~indexcore.scan.file_index.FileIndexPredicate` opens them (every reader of the column, then
folded; options none), with the bytes they read counted; a range-bitmap leaf under equal / in / a
comparison first asks :class:`~indexcore.formats.range_bitmap.lookup.RangeBitmapLookup`, which
answers the blobs that hold no such row (most files, under an equality) without a reader.

A plan is made where each column is in one leaf (the readers of a file are shared across leaves)
and every kind on a leaf's column is a file index kind. Anything else (an empty-index entry, a blob
outside the file, a reader that fails) answers None, and the caller reads the file through the
readers, which say what is wrong with it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from pyroaring import BitMap

from indexcore.errors import IndexCoreError
from indexcore.expr import AND, Leaf, LeafFunction, Predicate
from indexcore.formats.base import REMAIN, BitmapResult, FileIndexResult
from indexcore.formats.bitmap.keys import KeyCodec
from indexcore.formats.bitmap.lookup import BitmapLookup
from indexcore.formats.container import EMPTY_INDEX_FLAG, head_bytes, head_spans
from indexcore.formats.range_bitmap.keys import key_codec
from indexcore.formats.range_bitmap.lookup import RangeBitmapLookup
from indexcore.formats.registry import FILE_INDEX_TYPES, open_reader
from indexcore.io import BytesSource, ReadStats
from indexcore.types import DataType

#: leaf functions a bitmap answers from the keys' rows, and whether the rows are flipped (Paimon's
#: ``BitmapFileIndex.Reader``: notEqual / notIn / isNotNull flip over all rows, nulls included)
_BITMAP_CALLS = {"visit_equal": False, "visit_in": False, "visit_is_null": False,
                 "visit_not_equal": True, "visit_not_in": True, "visit_is_not_null": True}


class _Call:
    """Answers a leaf with the reader method its function calls and the arguments it passes."""

    def unanswered(self) -> tuple[str, tuple]:
        return "unanswered", ()

    def __getattr__(self, name: str):
        if not name.startswith("visit_"):
            raise AttributeError(name)
        return lambda *args: (name, args)


class _Leaf(NamedTuple):
    """A leaf answered by bitmap blobs: the spans' positions in the head's flat values, in file order."""

    positions: tuple[int, ...]
    lookup: BitmapLookup
    flip: bool


class _Readers(NamedTuple):
    """A leaf answered by the column's readers opened on the blobs' bytes (kinds in file order);
    ``range_lookup``: a single range-bitmap blob's empty answers on its bytes first."""

    positions: tuple[int, ...]
    kinds: tuple[str, ...]
    dtype: DataType
    function: LeafFunction
    literals: tuple
    range_lookup: RangeBitmapLookup | None


class _Node(NamedTuple):
    """AND / OR over children (a compound)."""

    is_and: bool
    children: tuple


class Plan(NamedTuple):
    """What every file of one filter, row type and head layout shares."""

    root: Any  # a _Leaf, a _Node, or REMAIN (a leaf no index answers)
    index_types: dict[str, list[str]]  # column -> index kinds in file order (shared by the files)


def _leaf_values(method: str, args: tuple) -> list[Any]:
    if method in ("visit_is_null", "visit_is_not_null"):
        return [None]
    if method in ("visit_in", "visit_not_in"):
        return list(args[0])
    return [args[0]]


def _compile(p: Predicate, pairs: tuple, row_type: Mapping[str, DataType], seen: set[str]) -> Any:
    """The plan's node for ``p``, or None when a file must be read through its readers."""
    if isinstance(p, Leaf):
        dtype = row_type.get(p.field)
        positions = tuple(2 * k for k, (column, _) in enumerate(pairs) if column == p.field)
        if dtype is None or not positions:
            return REMAIN  # no reader: FileIndexPredicate answers REMAIN
        if p.field in seen:
            return None
        seen.add(p.field)
        kinds = tuple(pairs[k // 2][1] for k in positions)
        method, args = p.function.visit(_Call(), p.literals)
        if all(kind == "bitmap" for kind in kinds) and method in _BITMAP_CALLS:
            bitmap = _bitmap_leaf(dtype, method, args, positions)
            if bitmap is not None:
                return bitmap
        if not all(kind in FILE_INDEX_TYPES for kind in kinds):
            return None
        return _Readers(positions, kinds, dtype, p.function, p.literals,
                        _range_lookup(dtype, method, args) if kinds == ("range-bitmap",) else None)
    children = []
    for child in p.children:
        node = _compile(child, pairs, row_type, seen)
        if node is None:
            return None
        children.append(node)
    return _Node(p.function is AND, tuple(children))


def _bitmap_leaf(dtype: DataType, method: str, args: tuple, positions: tuple[int, ...]) -> _Leaf | None:
    """A bitmap-only leaf answered by :class:`BitmapLookup` (None: by the readers)."""
    try:
        codec = KeyCodec(dtype)
        if codec.kind == "boolean":
            return None
        lookup = BitmapLookup(codec, _leaf_values(method, args))
    except (IndexCoreError, ValueError, TypeError, OverflowError):
        return None  # the reader raises it where Paimon's would
    return _Leaf(positions, lookup, _BITMAP_CALLS[method])


def _range_lookup(dtype: DataType, method: str, args: tuple) -> RangeBitmapLookup | None:
    """The range-bitmap blobs' empty answers on the bytes (None: every blob to its reader)."""
    try:
        return RangeBitmapLookup(key_codec(dtype), method, args)
    except (IndexCoreError, ValueError, TypeError, OverflowError):
        return None  # the reader raises it where Paimon's would, or answers without the dictionary


class BytesPlans:
    """Plans by pushed filter, row type and head layout, made once each (an explain holds one)."""

    def __init__(self):
        self._plans: dict[tuple, tuple[Predicate, Mapping, Plan | None]] = {}

    def plan(self, index_filter: Predicate, row_type: Mapping[str, DataType], pairs: tuple) -> Plan | None:
        key = (id(index_filter), id(row_type), pairs)
        hit = self._plans.get(key)
        if hit is None or hit[0] is not index_filter or hit[1] is not row_type:
            index_types: dict[str, list[str]] = {}
            for column, kind in pairs:
                index_types.setdefault(column, []).append(kind)
            root = _compile(index_filter, pairs, row_type, set())
            hit = self._plans[key] = (index_filter, row_type, None if root is None else Plan(root, index_types))
        return hit[2]

    def evaluate(self, data: bytes, name: str, index_filter: Predicate,
                 row_type: Mapping[str, DataType]) -> tuple[FileIndexResult, dict[str, list[str]], int] | None:
        """``(result, index kinds by column, bytes the readers would read)`` of the whole container
        ``data``, or None when it is to be read through its readers."""
        size = len(data)
        try:
            head = head_bytes(data, size, name)
            if head is None:
                return None
            pairs, values = head_spans(head, size, name)
        except IndexCoreError:
            return None
        plan = self.plan(index_filter, row_type, pairs)
        if plan is None:
            return None
        used = [len(head)]
        result = _evaluate(plan.root, data, values, name, used)
        return None if result is None else (result, plan.index_types, used[0])


def _evaluate(node: Any, data: bytes, values: tuple, name: str, used: list[int]) -> FileIndexResult | None:
    """:class:`FileIndexPredicate`'s folding over the plan; None where a blob needs its reader."""
    if node is REMAIN:
        return REMAIN
    if isinstance(node, _Readers):
        return _readers_result(node, data, values, name, used)
    if isinstance(node, _Leaf):
        result: FileIndexResult = REMAIN
        for k in node.positions:
            offset, length = values[k], values[k + 1]
            if offset == EMPTY_INDEX_FLAG:
                return None
            got = node.lookup.rows(data[offset:offset + length], name)
            if got is None:
                return None
            row_count, rows, nbytes = got
            used[0] += nbytes
            if node.flip:
                rows.flip_inplace(0, row_count)
            result = result.and_(BitmapResult(rows))
            if not result.remain():
                return result
        return result
    result = None
    for child in node.children:
        value = _evaluate(child, data, values, name, used)
        if value is None:
            return None
        if result is not None:
            value = result.and_(value) if node.is_and else result.or_(value)
        result = value
        if node.is_and and not result.remain():
            return result
    return REMAIN if result is None else result



def _readers_result(node: _Readers, data: bytes, values: tuple, name: str, used: list[int]) -> FileIndexResult | None:
    """:meth:`FileIndexPredicate._test_leaf` on the blobs' bytes: every reader of the column opened,
    then their answers ANDed in file order until one cannot remain; None where a blob is empty or
    outside the file, or a reader fails (the caller's readers say why)."""
    size = len(data)
    spans = []
    for k in node.positions:
        offset, length = values[k], values[k + 1]
        if offset == EMPTY_INDEX_FLAG or offset < 0 or length < 0 or offset + length > size:
            return None
        spans.append((offset, length))
    if node.range_lookup is not None:
        offset, length = spans[0]
        nbytes = node.range_lookup.empty(data[offset:offset + length])
        if nbytes is not None:
            used[0] += nbytes
            return REMAIN.and_(BitmapResult(BitMap()))
    stats = ReadStats()
    try:
        readers = [open_reader(kind, node.dtype, BytesSource(data, name, stats, 0, offset, length), {})
                   for kind, (offset, length) in zip(node.kinds, spans, strict=True)]
        result: FileIndexResult = REMAIN
        for reader in readers:
            result = result.and_(node.function.visit(reader, node.literals))
            if not result.remain():
                break
    except IndexCoreError:
        return None
    used[0] += stats.bytes_served
    return result
