"""The file index stage: evaluation with Paimon's ``FileIndexPredicate`` semantics, and what the
read path makes of it (``FileIndexEvaluator``).

A leaf is answered by every index of its column, ANDed in file order, stopping at the first
result that cannot remain; a column without an index answers REMAIN. AND folds its children
left to right and stops once the result cannot remain; OR folds all of them. An empty
compound is REMAIN. Results are REMAIN, SKIP or a bitmap of rows (an empty bitmap means the
same as SKIP and is returned as it is, not turned into SKIP).

NULL literals reach the indexes as ``FileIndexPredicate`` passes them, also in a leaf that a
NULL makes never true (``c = NULL``, ``c NOT IN (1, NULL)``; the statistics stage skips those
files, as Paimon's does): each reader answers as Paimon's does (bloom: REMAIN, bitmap: the null
rows), so this stage never reports a file skipped that Paimon's index stage keeps.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from pyroaring import BitMap

from indexcore.errors import IndexCoreError
from indexcore.expr import AND, Leaf, Predicate
from indexcore.formats.base import REMAIN, SKIP, BitmapResult, FileIndexReader, FileIndexResult
from indexcore.formats.container import read_container
from indexcore.formats.registry import FILE_INDEX_TYPES, index_kind, open_reader
from indexcore.io import ByteSource, BytesSource
from indexcore.scan.dv import deleted_positions
from indexcore.scan.index_bytes import BytesPlans
from indexcore.scan.records import Batch, Decision
from indexcore.types import DataType
from indexcore.warehouse.model import LiveFile, Problem, TableSchema
from indexcore.warehouse.table_heads import WHOLE_INDEX_BYTES

OptionsFor = Callable[[str, str], Mapping[str, str] | None]
MAX_ROWS_32 = 2_147_483_647
# local ``.index`` files read ahead side by side: threads (each keeps a malloc arena of the bytes it
# read: 16 cost 16 MiB more peak memory at 50,000 files than none, 4 cost 6 MiB; cold, 3,300 files
# took 2.95 s one by one, 0.77 s with 4 threads, 0.63 s with 16), and files each thread reads per task
READ_AHEAD_THREADS = 4
READ_AHEAD_CHUNK = 8


class FileIndexPredicate:
    """Evaluate predicates and top-N over one file's indexes (Paimon's ``FileIndexPredicate``).

    ``container`` is a :class:`indexcore.formats.container.FileIndexContainer`; ``row_type``
    maps column names to their types (the data file's row type); ``options_for(column,
    index_type)`` gives reader options where a format needs them. Readers open lazily, once.
    """

    def __init__(self, container: Any, row_type: Mapping[str, DataType],
                 options_for: OptionsFor | None = None):
        self.container = container
        self.row_type = row_type  # read only: the files of one schema share it
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
        literals = leaf.literals
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


def read_path_result(raw: FileIndexResult, row_count: int, deleted: Any = None,
                     bitmap64: bool = False) -> FileIndexResult:
    """``FileIndexEvaluator``: what the read path makes of the index's answer for one file.

    ``deleted`` holds the deletion vector's positions (None: no deletion vector).
    """
    result = raw
    if isinstance(raw, BitmapResult):
        if row_count > MAX_ROWS_32 or len(raw.bitmap) == row_count:
            return REMAIN
        if deleted is not None and bitmap64:
            # Paimon's conservative fallback (apache/paimon#9141): row positions are 32-bit,
            # so a 64-bit deletion vector is never combined with the index bitmap.
            return REMAIN
        if deleted is None and (not raw.bitmap or raw.bitmap.max() < row_count):
            # the selection is every row and holds the whole answer: the answer is the decision (the
            # same object: results are not changed once made, and a file keeps one bitmap, not two)
            return raw if raw.bitmap else SKIP
        selection = BitMap(range(row_count))
        if deleted is not None:
            selection -= deleted if isinstance(deleted, BitMap) else BitMap(p for p in deleted if p < row_count)
        result = BitmapResult(raw.bitmap & selection)
        if result.bitmap == selection:
            return REMAIN
    if not result.remain():
        return SKIP
    return result


class _MethodName:
    """Answers a leaf with the name of the reader method its function calls (None: calls none):
    a leaf function calls ``visitor.visit_<name>(...)`` or ``visitor.unanswered()``."""

    def unanswered(self) -> None:
        return None

    def __getattr__(self, name: str) -> Callable[..., str]:
        if not name.startswith("visit_"):
            raise AttributeError(name)
        return lambda *_literals: name


def _kind_answers(index_type: str, method: str | None) -> bool:
    """Whether the reader of ``index_type`` implements ``method`` (else it answers REMAIN)."""
    return index_type in FILE_INDEX_TYPES and index_kind(index_type).answers(method)


def pruning_index_types(predicate: Predicate | None, index_types: Mapping[str, Sequence[str]]) -> tuple[str, ...]:
    """The file's index kinds that could skip it under ``predicate`` (file column names), by
    :class:`FileIndexPredicate`'s folding: a leaf is answered by the kinds on its column whose
    reader implements its function; AND by any answered child; OR only when every child is.
    Empty when the indexes cannot skip the file (e.g. an OR branch on an unindexed column)."""
    found = _pruning_kinds(predicate, index_types) if predicate is not None else None
    return tuple(sorted(found or ()))


def _pruning_kinds(p: Predicate, index_types: Mapping[str, Sequence[str]]) -> set[str] | None:
    """:func:`pruning_index_types` of one node: its kinds, or None when the node cannot be answered
    (a module-level function: a recursive closure is a reference cycle per call, 50,000 of them
    left to the cycle collector per explain)."""
    if isinstance(p, Leaf):
        method = p.function.visit(_MethodName(), p.literals)
        found = {t for t in index_types.get(p.field, ()) if _kind_answers(t, method)}
        return found or None
    answers = [_pruning_kinds(c, index_types) for c in p.children]
    if p.function is AND:
        known = [k for k in answers if k is not None]
        return set().union(*known) if known else None
    return None if any(k is None for k in answers) else set().union(*answers)


def container_index_types(container) -> dict[str, list[str]]:
    """Column -> the index kinds a file-index container holds for it, in file order."""
    out: dict[str, list[str]] = {}
    for e in container.head.entries:
        out.setdefault(e.column, []).append(e.index_type)
    return out


class FileIndexStage:
    """``index``: the file index as ``FileIndexEvaluator`` decides (embedded in the manifest or a
    ``.index`` file), for files kept so far (every file with ``all_files``): the selection is every
    row minus the deletion vector; the result stays REMAIN where a bitmap answer holds every row,
    where the file has more than 2^31-1 rows, or where it equals the selection; a bitmap is
    intersected with the selection (a 64-bit deletion vector is not combined), and an empty one
    is SKIP (:func:`read_path_result`). Primary-key tables
    that merge on read (no deletion vectors) do not use the file index: it is read, the decision
    stays REMAIN and no bytes are counted. ``kept`` reads containers through the table's kept
    heads and readers (:meth:`Table.index_container`)."""

    def __init__(self, table, table_schema: TableSchema, predicate: Predicate, all_files: bool, kept: bool,
                 verify: bool):
        self.table = table
        self.predicate = predicate
        self.all_files = all_files
        self.kept = kept
        self.verify = verify  # keep each file's evaluator for verify
        self.fields = predicate.fields()
        self._row_types: dict[int, tuple[TableSchema, dict[str, DataType]]] = {}
        self._pruning: dict[Any, tuple] = {}  # by filter and layout; by identity for a plan's shared dict
        self._folders: dict[str, str | None] = {}  # the table's directories, resolved once
        self.plans = BytesPlans()  # files answered on their bytes, planned once per filter and layout
        self._pool: ThreadPoolExecutor | None = None  # reads ahead (:meth:`read_ahead`) until :meth:`close`
        self._ahead: dict[str, tuple[bytes, int, str] | IndexCoreError] = {}  # read ahead, not used yet
        opts = table_schema.core_options
        self.enabled = opts.file_index_read_enabled
        # Paimon reads a PK table through the file index only when it reads raw files (DV).
        self.at_read = self.enabled and (not table_schema.primary_keys or opts.deletion_vectors_enabled)

    def pruning(self, index_filter: Predicate, index_types: dict[str, list[str]]) -> tuple[str, ...]:
        """:func:`pruning_index_types`, worked out once per pushed filter and index layout (the files
        of one schema and writer share both)."""
        shared = self._pruning.get(id(index_types))  # the dict a plan of BytesPlans gives all its files
        if shared is not None and shared[0] is index_types and shared[1] is index_filter:
            return shared[2]
        key = (id(index_filter), tuple((c, tuple(t)) for c, t in index_types.items()))
        hit = self._pruning.get(key)
        if hit is None or hit[0] is not index_filter:
            hit = self._pruning[key] = (index_filter, pruning_index_types(index_filter, index_types))
        return hit[1]

    def row_type(self, fs: TableSchema) -> dict[str, DataType]:
        """The row type of a file's schema, worked out once per schema (files share a few)."""
        hit = self._row_types.get(id(fs))
        if hit is None or hit[0] is not fs:
            hit = self._row_types[id(fs)] = (fs, fs.row_type())
        return hit[1]

    def whole(self, lf: LiveFile) -> tuple[bytes, str] | ByteSource:
        """The file's index bytes: a ``.index`` file of at most :data:`WHOLE_INDEX_BYTES` read whole in
        one request (its directory resolved once per table, no per-file checks beyond it) as
        ``(bytes, name)``, as are embedded bytes; a larger one as a source that keeps that first
        window and reads the rest ranged."""
        embedded = lf.file.embedded_index
        if embedded is not None:
            return bytes(embedded), f"{lf.path} (embedded file index)"
        got = self._ahead.pop(lf.index_path, None)
        if got is None:
            got = self.table.storage.read_prefixes([lf.index_path], WHOLE_INDEX_BYTES, served=False,
                                                   folders=self._folders)[0]
        elif not isinstance(got, IndexCoreError):
            self.table.storage.stats.add(len(got[0]))  # read ahead: counted here, one request, as if read now
        if isinstance(got, IndexCoreError):
            raise got
        data, size, name = got
        if len(data) == size:
            return data, name
        source = self.table.file_index_source(lf)
        source.keep(0, data)
        return source

    def source(self, lf: LiveFile) -> ByteSource:
        """:meth:`whole` as a source its head parser and readers read from memory, counting the
        bytes they use."""
        got = self.whole(lf)
        return BytesSource(got[0], got[1], self.table.storage.stats) if isinstance(got, tuple) else got

    def evaluator(self, lf: LiveFile, fs: TableSchema,
                  got: tuple[bytes, str] | ByteSource | None = None) -> tuple[FileIndexPredicate | None, dict, str | None]:
        """The file's :class:`FileIndexPredicate` over its container (``got``: :meth:`whole`, if read)."""
        embedded = lf.file.embedded_index is not None
        if not embedded and not lf.index_path:
            return None, {}, None
        if self.kept:
            container = self.table.index_container(lf)
        else:
            if got is None:
                got = self.whole(lf)
            container = read_container(BytesSource(got[0], got[1], self.table.storage.stats)
                                       if isinstance(got, tuple) else got)
            container.prefetch(self.fields)
        location = "embedded" if embedded else "file"
        return FileIndexPredicate(container, self.row_type(fs)), container_index_types(container), location

    def evaluate(self, lf: LiveFile, fs: TableSchema,
                 index_filter: Predicate) -> tuple[FileIndexResult, dict, str | None, FileIndexPredicate | None]:
        """The raw index result of one file, its index kinds by column, where the index is and its
        evaluator (None when answered on the bytes: :class:`~indexcore.scan.index_bytes.BytesPlans`,
        which this tries first on a whole container unless the evaluator is kept for verify)."""
        if not self.kept and not self.verify and (lf.file.embedded_index is not None or lf.index_path):
            got = self.whole(lf)
            if isinstance(got, tuple):
                fast = self.plans.evaluate(got[0], got[1], index_filter, self.row_type(fs))
                if fast is not None:
                    raw, index_types, used = fast
                    if id(index_types) not in self._pruning:  # shared by the plan's files: found by identity
                        self._pruning[id(index_types)] = (index_types, index_filter,
                                                          self.pruning(index_filter, index_types))
                    self.table.storage.stats.add_served(used)
                    return raw, index_types, "embedded" if lf.file.embedded_index is not None else "file", None
            evaluator, index_types, location = self.evaluator(lf, fs, got)
        else:
            evaluator, index_types, location = self.evaluator(lf, fs)
        raw = REMAIN if evaluator is None else evaluator.evaluate(index_filter)
        return raw, index_types, location, evaluator

    def read_ahead(self, batch: Batch) -> None:
        """Read the batch's ``.index`` files that :meth:`evaluate` reads whole, side by side, where
        nothing prefetches them (local files: a cold page cache waits on the disk per file, and
        waits run side by side overlap). Kept until used, and counted then (:meth:`whole`)."""
        storage = self.table.storage
        if storage.cache is not None or self.kept or self.verify:
            return
        remain = Decision.REMAIN
        paths = [lf.index_path for lf, push, record in zip(batch.files, batch.pushed, batch.records, strict=True)
                 if lf.has_file_index and lf.file.embedded_index is None and lf.index_path
                 and push.index_filter is not None and (self.all_files or (
                     record["partition_decision"] is remain and record["bucket_decision"] is remain
                     and record["level_decision"] is remain and record["stats_decision"] is remain))]
        if len(paths) < 2 * READ_AHEAD_CHUNK:
            return
        if self._pool is None:
            self._pool = ThreadPoolExecutor(min(storage.concurrency, READ_AHEAD_THREADS))
        chunks = [paths[i:i + READ_AHEAD_CHUNK] for i in range(0, len(paths), READ_AHEAD_CHUNK)]
        read = functools.partial(storage.read_prefixes, length=WHOLE_INDEX_BYTES, served=False,
                                 folders=self._folders, counted=False)
        for chunk, got in zip(chunks, self._pool.map(read, chunks), strict=True):
            self._ahead.update(zip(chunk, got, strict=True))

    def close(self) -> None:
        """Stop the threads of :meth:`read_ahead` and drop what was read ahead and not used."""
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None
        self._ahead.clear()

    def decide(self, batch: Batch) -> None:
        self.read_ahead(batch)
        stats = self.table.storage.stats
        remain = Decision.REMAIN
        for i, (lf, fs, push, record) in enumerate(zip(batch.files, batch.schemas, batch.pushed, batch.records,
                                                       strict=True)):
            problems, notes, f = record["problems"], record["notes"], lf.file
            raw = decision = evaluator = location = None
            index_types: dict[str, list[str]] = {}
            pruning: tuple[str, ...] = ()
            bytes_read = requests = 0
            consult = record["partition_decision"] is remain and record["bucket_decision"] is remain and \
                record["level_decision"] is remain and record["stats_decision"] is remain
            if lf.has_file_index and (consult or self.all_files):
                before, before_requests = stats.bytes_served, stats.requests
                try:
                    if push.index_filter is None:
                        raw = REMAIN
                        notes.append("no conjunct can be pushed to this file's index")
                    else:
                        raw, index_types, location, evaluator = self.evaluate(lf, fs, push.index_filter)
                        if self.at_read:
                            pruning = self.pruning(push.index_filter, index_types)
                    deleted = batch.deleted[i]
                    if isinstance(raw, BitmapResult) and lf.deletion_vector is not None and deleted is None:
                        deleted = batch.deleted[i] = deleted_positions(self.table, lf, problems)
                    decision = read_path_result(raw, f.row_count, deleted, lf.bitmap64)
                    if not self.at_read:
                        notes.append("file-index.read.enabled is false" if not self.enabled else
                                     "merge read: Paimon does not use the file index for this file")
                        decision = REMAIN
                except IndexCoreError as exc:
                    where = lf.index_path or f"{lf.path} (embedded file index)"
                    problems.append(Problem(where, exc.structure or "file index", exc.message))
                    notes.append("file index unreadable: decision REMAIN (Paimon would fail or read the file)")
                    raw = decision = REMAIN
                    evaluator = None
                    pruning = ()
                if self.at_read:
                    bytes_read, requests = stats.bytes_served - before, stats.requests - before_requests
            elif consult:  # no file index: FileIndexEvaluator answers REMAIN
                decision = REMAIN
            if isinstance(decision, BitmapResult):
                record["rows_after_dv"] = len(decision.bitmap)
            record.update(raw_index_result=raw, index_decision=decision, index_types=index_types,
                          index_location=location, bytes_read=bytes_read, requests=requests,
                          pruning_index_types=pruning)
            if self.verify:
                batch.evaluators[i] = evaluator
        self._ahead.clear()  # each file read ahead was used above; nothing is kept across batches


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
