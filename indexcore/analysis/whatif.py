"""What-if: a hypothetical file index over a table's current data files, built in memory.

:func:`build_hypothetical_index` feeds each data file's column values, in row order and as
internal values, to the same writer Paimon's bytes come from (:func:`indexcore.formats.new_writer`).
:func:`evaluate_hypothetical` then asks, per file, what the read path would decide with that
index alone and with it added to the file's existing indexes, beside today's decision
(:func:`indexcore.scan.explainer.explain`). Nothing is written to the warehouse.

On a shared server a build is bounded: :func:`check_hypothetical` refuses options that only
cost bytes (a bloom ``items`` far above the rows of the largest file, an ``fpp`` below a floor,
one file's filter over the budget), and a build given ``max_bytes`` and a server-wide
:class:`ByteBudget` stops when either is reached, so its files are a random sample of the live
files (``limited_by`` says which budget); :meth:`HypotheticalIndex.release` gives the bytes back.
"""

from __future__ import annotations

import posixpath
import random
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import pyarrow.compute as pc
from pyroaring import BitMap

from indexcore.errors import IndexCoreError, PredicateError
from indexcore.expr import Predicate, parse_where
from indexcore.formats.base import BitmapResult, FileIndexReader, FileIndexResult
from indexcore.formats.bloom import DEFAULT_FPP, DEFAULT_ITEMS, items_for_fpp
from indexcore.formats.container import EmptyFileIndexReader, read_container
from indexcore.formats.registry import check_writer_options, new_writer, open_reader
from indexcore.io import BytesSource
from indexcore.scan.explainer import explain
from indexcore.scan.file_index import FileIndexPredicate, read_path_result, result_to_json
from indexcore.scan.records import Explanation, FileDecision
from indexcore.scan.stats import field_map
from indexcore.types import DataType
from indexcore.types.values import to_internal
from indexcore.warehouse.data_file import matching_positions, read_data_file
from indexcore.warehouse.model import LiveFile, Problem, TableSchema

Progress = Callable[[int, int, str], None]
#: a hypothetical bloom filter's ``items`` may be at most this many times the rows of the largest
#: live file: a file's filter never holds more distinct keys than the file has rows
ITEMS_OVER_ROWS = 2
SESSION, SERVER = "session", "server"  # the budget that stopped a build (``limited_by``)


class ByteBudget:
    """Bytes that builds running at the same time may hold together (one per server, shared by its
    sessions): a build takes (:meth:`take`) what each file's index adds and gives it back when done."""

    def __init__(self, limit: int):
        self.limit = limit
        self._used = self._peak = 0
        self._lock = threading.Lock()

    def take(self, n: int) -> bool:
        """Hold ``n`` more bytes if they fit under the limit; False (nothing held) if not."""
        with self._lock:
            if self._used + n > self.limit:
                return False
            self._used += n
            self._peak = max(self._peak, self._used)
            return True

    def give(self, n: int) -> None:
        with self._lock:
            self._used = max(0, self._used - n)

    @property
    def used(self) -> int:
        return self._used

    @property
    def peak(self) -> int:
        """The most bytes held at once since this budget was made."""
        return self._peak


@dataclass(frozen=True)
class HypotheticalFileIndex:
    """The in-memory index blob of one data file (``blob`` None: the writer saw no row)."""

    path: str
    row_count: int
    blob: bytes | None = field(repr=False)

    @property
    def size(self) -> int:
        return len(self.blob) if self.blob is not None else 0


@dataclass
class HypotheticalIndex:
    """One index type on one column, built for each live data file of a snapshot."""

    table: Any
    snapshot_id: int | None
    column: str
    index_type: str
    options: dict[str, str]
    dtype: DataType
    files: list[HypotheticalFileIndex]
    problems: list[Problem] = field(default_factory=list)
    total_files: int = 0  # live files the build was asked for (more than ``files`` when a budget stopped it)
    limited_by: str | None = None  # SESSION or SERVER: the budget that stopped the build, None: every file
    budget: ByteBudget | None = field(default=None, repr=False)

    @property
    def total_size(self) -> int:
        return sum(f.size for f in self.files)

    def release(self) -> None:
        """Give the bytes held in the server's budget back (once) and drop the built blobs."""
        if self.budget is not None:
            self.budget.give(self.total_size)
            self.budget = None
        self.files = [HypotheticalFileIndex(f.path, f.row_count, None) for f in self.files]
        self.__dict__.pop("_by_path", None)

    def __enter__(self) -> HypotheticalIndex:
        return self

    def __exit__(self, *exc) -> None:
        self.release()

    def file(self, path: str) -> HypotheticalFileIndex | None:
        by_path = self.__dict__.get("_by_path")
        if by_path is None or len(by_path) != len(self.files):  # one lookup per file, not a scan
            by_path = self.__dict__["_by_path"] = {f.path: f for f in self.files}
        return by_path.get(path)

    def reader(self, path: str) -> FileIndexReader | None:
        """A reader over the file's blob (an empty-index reader when no row was written)."""
        f = self.file(path)
        if f is None:
            return None
        if f.blob is None:
            return EmptyFileIndexReader()
        return open_reader(self.index_type, self.dtype, BytesSource(f.blob, name=f"{path} (hypothetical)"),
                           dict(self.options))


def _schema_for(table, snapshot_id: int | None) -> TableSchema:
    if snapshot_id is None:
        return table.schema()
    return table.snapshot_schema(table.snapshot(snapshot_id))


def check_hypothetical(table, index_type: str, options: Mapping[str, str], snapshot_id: int | None = None,
                       min_fpp: float = 0.0, max_bytes: int | None = None) -> int | None:
    """Refuse options that only cost memory, with the reason (an :class:`IndexCoreError`): a bloom
    filter's ``items`` set above :data:`ITEMS_OVER_ROWS` times the rows of the largest live file, an
    ``fpp`` below ``min_fpp``, or one file's filter alone over ``max_bytes``. Returns the bytes of
    one file's index when the options fix them (bloom filters), else None."""
    if index_type != "bloom-filter":
        return None
    items = int(options.get("items", DEFAULT_ITEMS))
    fpp = float(options.get("fpp", DEFAULT_FPP))
    largest = pc.max(table.plan_columns(snapshot_id).files.column("_ROW_COUNT")).as_py() or 0  # on columns
    cap = max(1, ITEMS_OVER_ROWS * largest)
    if "items" in options and items > cap:  # Paimon's default items stands: the budget samples it
        raise IndexCoreError(f"bloom-filter items={items:,} is far above the {largest:,} rows of the largest data "
                             f"file: a file's filter never holds more distinct keys than its rows, so more items "
                             f"only cost bytes; use at most {cap:,}")
    if fpp < min_fpp:
        raise IndexCoreError(f"bloom-filter fpp={fpp:g} is below this server's floor of {min_fpp:g}")
    per_file = items_for_fpp(items, fpp)["bytes"]
    if max_bytes is not None and per_file > max_bytes:
        raise IndexCoreError(f"one file's bloom filter (items={items:,}, fpp={fpp:g}) takes {per_file:,} bytes, "
                             f"over this server's budget of {max_bytes:,} bytes per hypothetical index")
    return per_file


def build_hypothetical_index(table, column: str, index_type: str, options: Mapping[str, str] | None = None,
                             snapshot_id: int | None = None, files: Sequence[LiveFile | str] | None = None,
                             progress: Progress | None = None, max_bytes: int | None = None,
                             budget: ByteBudget | None = None, seed: int = 0) -> HypotheticalIndex:
    """Build ``index_type`` on ``column`` for every live data file (or only ``files``), in memory.

    A file that cannot be read becomes a problem and gets no hypothetical index. With
    ``max_bytes`` or ``budget`` the files are built in a random order (``seed``) and the build
    stops before the index would pass ``max_bytes`` or the server's ``budget`` would refuse it:
    the files built are then a random sample, and ``limited_by`` names the budget. Release the
    result (:meth:`HypotheticalIndex.release`, or use it as a context manager) to give the bytes back.
    """
    schema = _schema_for(table, snapshot_id)
    if column not in schema.field_names:
        raise PredicateError(f"unknown column {column!r} in table {table.name}")
    dtype = schema.field(column).type
    options = {k: str(v) for k, v in (options or {}).items()}
    check_writer_options(index_type, options, dtype)  # fail early on an unknown type or bad options
    plan = table.plan(snapshot_id)
    live = list(plan.files)
    if files is not None:
        wanted = {f.path if isinstance(f, LiveFile) else f for f in files}
        live = [lf for lf in live if lf.path in wanted]
    bounded = max_bytes is not None or budget is not None
    if bounded:
        live = sorted(live, key=lambda lf: lf.path)
        random.Random(seed).shuffle(live)  # any prefix of the build is a random sample
    hyp = HypotheticalIndex(table=table, snapshot_id=plan.snapshot.id if plan.snapshot else None, column=column,
                            index_type=index_type, options=options, dtype=dtype, files=[], total_files=len(live),
                            budget=budget)
    held = 0  # bytes of built blobs
    for i, lf in enumerate(table.iter_prefetched(live, index=False, dv=False, data=True)):
        try:
            file_schema = table.file_schema(lf, hyp.problems)
            data = read_data_file(table.storage, lf, file_schema, schema, columns=[column])
            writer = new_writer(index_type, dtype, options)
            for value in to_internal(data.column(column), dtype):
                writer.write(value)
            blob = None if writer.empty else writer.serialized_bytes()
            del writer
            size = len(blob) if blob is not None else 0
            if max_bytes is not None and held + size > max_bytes:
                hyp.limited_by = SESSION
            elif budget is not None and not budget.take(size):
                hyp.limited_by = SERVER
            if hyp.limited_by is not None:
                break
            held += size
            hyp.files.append(HypotheticalFileIndex(lf.path, data.num_rows, blob))
        except IndexCoreError as exc:
            hyp.problems.append(Problem(lf.path, exc.structure or "data file", exc.message))
        if progress is not None:
            progress(i + 1, len(live), posixpath.basename(lf.path))
    return hyp


@dataclass(frozen=True)
class WhatIfFile:
    """One file: today's decision beside the hypothetical index alone and added to the existing ones."""

    existing: FileDecision
    hypothetical_raw: FileIndexResult | None
    hypothetical_decision: FileIndexResult | None
    combined_decision: FileIndexResult | None
    index_size: int

    @property
    def path(self) -> str:
        return self.existing.path

    def _rows(self, decision: FileIndexResult | None) -> int:
        """Rows the read path returns from this file under ``decision`` (0 when pruned)."""
        e = self.existing
        if e.pruned_before_index:
            return 0
        if decision is None:
            return e.rows_after_dv
        if not decision.remain():
            return 0
        if isinstance(decision, BitmapResult):
            return len(decision.bitmap)
        return max(e.row_count - e.dv_cardinality, 0)

    @property
    def rows_existing(self) -> int:
        return e.rows_after_dv if (e := self.existing).read else 0

    @property
    def rows_hypothetical(self) -> int:
        return self._rows(self.hypothetical_decision)

    @property
    def rows_combined(self) -> int:
        return self._rows(self.combined_decision)

    @property
    def file_size(self) -> int:
        return self.existing.file_size

    @property
    def index_bytes_hypothetical(self) -> int:
        """Bytes of the hypothetical index the read path would read for this file (0 when an
        earlier stage pruned the file or the index is not used)."""
        pruned = self.existing.pruned_before_index
        return self.index_size if self.hypothetical_decision is not None and not pruned else 0

    def to_json(self) -> dict[str, Any]:
        def js(r: FileIndexResult | None) -> Any:
            return None if r is None else result_to_json(r)

        e = self.existing
        return {"path": e.path, "row_count": e.row_count,
                "skipped_before_index": e.skipped_by.value if e.pruned_before_index else None,
                "existing_decision": js(e.index_decision), "hypothetical_raw": js(self.hypothetical_raw),
                "hypothetical_decision": js(self.hypothetical_decision),
                "combined_decision": js(self.combined_decision), "index_size": self.index_size,
                "rows_existing": self.rows_existing, "rows_hypothetical": self.rows_hypothetical,
                "rows_combined": self.rows_combined, "matching_rows": e.matching_rows,
                "file_size": e.file_size, "index_bytes_existing": e.bytes_read,
                "index_bytes_hypothetical": self.index_bytes_hypothetical}


@dataclass
class WhatIfResult:
    """Per-file comparison, totals, and the violations a verified run found."""

    index: HypotheticalIndex
    explanation: Explanation
    files: list[WhatIfFile]
    violations: list[dict[str, Any]] = field(default_factory=list)

    @property
    def totals(self) -> dict[str, dict[str, int]]:
        """Per way of reading (today's indexes, the hypothetical one alone, both): the files,
        rows and data bytes read and skipped (a file counts as read when rows of it are), and
        the index bytes read to decide; ``index``: the hypothetical index's files and bytes."""
        all_rows = sum(f.existing.row_count for f in self.files)
        all_bytes = sum(f.file_size for f in self.files)

        def count(rows: Callable[[WhatIfFile], int], index_bytes: Callable[[WhatIfFile], int]) -> dict[str, int]:
            read = [f for f in self.files if rows(f) > 0]
            out = {"files": len(read), "rows": sum(rows(f) for f in read), "bytes": sum(f.file_size for f in read)}
            return {**out, "files_skipped": len(self.files) - out["files"], "rows_skipped": all_rows - out["rows"],
                    "bytes_skipped": all_bytes - out["bytes"], "index_bytes": sum(index_bytes(f) for f in self.files)}

        return {"existing": count(lambda f: f.rows_existing, lambda f: f.existing.bytes_read),
                "hypothetical": count(lambda f: f.rows_hypothetical, lambda f: f.index_bytes_hypothetical),
                "combined": count(lambda f: f.rows_combined,
                                  lambda f: f.existing.bytes_read + f.index_bytes_hypothetical),
                "index": {"files": len(self.index.files), "bytes": self.index.total_size}}

    def to_json(self) -> dict[str, Any]:
        return {"column": self.index.column, "index_type": self.index.index_type, "options": self.index.options,
                "where": self.explanation.sql, "files": [f.to_json() for f in self.files],
                "totals": self.totals, "violations": self.violations,
                "problems": [p.to_dict() for p in self.index.problems + self.explanation.problems]}

    def to_frame(self):
        return pd.DataFrame([f.to_json() for f in self.files])


def _combined_evaluator(table, lf: LiveFile, schema: TableSchema,
                        hypothetical: Mapping[str, list[FileIndexReader]]) -> FileIndexPredicate:
    """The file's existing readers (in table column names) plus the hypothetical ones, last."""
    readers = existing_readers(table, lf, schema)
    for column, mine in hypothetical.items():
        readers.setdefault(column, []).extend(mine)
    return FileIndexPredicate.for_readers(readers, schema.row_type())


def existing_readers(table, lf: LiveFile, schema: TableSchema) -> dict[str, list[FileIndexReader]]:
    """The readers of the file's existing file indexes, per table column name."""
    readers: dict[str, list[FileIndexReader]] = {}
    if lf.has_file_index:
        file_schema = table.file_schema(lf)
        fmap = field_map(schema, file_schema)
        to_table = {v: k for k, v in fmap.items() if v}
        container = read_container(table.file_index_source(lf))
        file_types = file_schema.row_type()
        for entry in container.head.entries:
            name = to_table.get(entry.column)
            if name is None or entry.column not in file_types:
                continue
            readers.setdefault(name, []).append(container.reader(entry, file_types[entry.column]))
    return readers


def evaluate_hypothetical(hyp: HypotheticalIndex, predicate: Predicate | str, verify: bool = False,
                          progress: Progress | None = None, also: Sequence[HypotheticalIndex] = ()) -> WhatIfResult:
    """Per file: today's decisions (``explain``) beside the hypothetical index's.

    ``also``: more hypothetical indexes (built on the same files, e.g. the other column of an
    OR) that answer together with ``hyp``, alone and beside today's; a file's index size is then
    theirs summed. With ``verify`` the data is read and a hypothetical answer that drops a
    matching row is listed under ``violations``.
    """
    table = hyp.table
    schema = _schema_for(table, hyp.snapshot_id)
    if isinstance(predicate, str):
        predicate = parse_where(predicate, schema.row_type())
    ex = explain(table, predicate, snapshot_id=hyp.snapshot_id, verify=verify, progress=progress,
                 paths=[f.path for f in hyp.files])
    by_path = {lf.path: lf for lf in table.plan(hyp.snapshot_id).files}
    out: list[WhatIfFile] = []
    violations: list[dict[str, Any]] = []
    for decision in ex.files:
        lf = by_path[decision.path]
        reader = hyp.reader(decision.path)
        hypothetical: dict[str, list[FileIndexReader]] = {}
        for h in (hyp, *also):
            r = h.reader(decision.path) if reader is not None else None
            if r is not None:
                hypothetical.setdefault(h.column, []).append(r)
        raw = alone = combined = None
        if reader is not None:
            deleted = None
            if lf.deletion_vector is not None:
                try:
                    dv = table.deletion_vector(lf)
                    deleted = dv.positions if dv is not None else None
                except IndexCoreError as exc:
                    ex.problems.append(Problem(lf.dv_file_path or lf.path, "deletion vector", exc.message))
            raw = FileIndexPredicate.for_readers(hypothetical, schema.row_type()).evaluate(predicate)
            alone = read_path_result(raw, lf.file.row_count, deleted, lf.bitmap64)
            try:
                both = _combined_evaluator(table, lf, schema, hypothetical).evaluate(predicate)
                combined = read_path_result(both, lf.file.row_count, deleted, lf.bitmap64)
            except IndexCoreError as exc:
                ex.problems.append(Problem(lf.index_path or lf.path, exc.structure or "file index", exc.message))
                combined = alone
            if not ex.index_used:
                alone = combined = None
            if verify and decision.matching_rows and alone is not None:
                file_schema = table.file_schema(lf)
                match = matching_positions(table.storage, lf, file_schema, schema, predicate)
                visible = match - deleted if deleted is not None else match
                if isinstance(alone, BitmapResult):
                    missing = visible - alone.bitmap
                else:
                    missing = visible if not alone.remain() else BitMap()
                if missing:
                    violations.append({"path": lf.path, "column": hyp.column,
                                       "reason": f"hypothetical {hyp.index_type} drops {len(missing)} "
                                                 f"matching rows"})
        size = sum(h.file(decision.path).size for h in (hyp, *also) if h.file(decision.path) is not None)
        out.append(WhatIfFile(decision, raw, alone, combined, size))
    return WhatIfResult(hyp, ex, out, violations)


