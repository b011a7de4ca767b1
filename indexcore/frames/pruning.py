"""What each file index kind alone answers to a condition, per live file, beside the statistics
decision (the Range page's pruning table)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from indexcore.errors import IndexCoreError
from indexcore.expr import Predicate, parse_where
from indexcore.formats.base import REMAIN, SKIP, BitmapResult, FileIndexResult
from indexcore.formats.container import IndexEntry
from indexcore.formats.registry import FILE_INDEX_TYPES
from indexcore.frames.progress import Progress, tick
from indexcore.scan.file_index import FileIndexPredicate, container_index_types, pruning_index_types
from indexcore.scan.stats import Pushdowns, column_stats, field_map, test_predicate_on_stats
from indexcore.scan.stats_columns import StatsBytes, value_stats
from indexcore.views.census import snapshot_census, texts_in
from indexcore.views.census_rows import values_of
from indexcore.views.common import UNPARTITIONED, file_cols, partition_types, plan_partition_labels
from indexcore.warehouse.file_sample import decode_sample_rows
from indexcore.warehouse.model import LiveFile
from indexcore.warehouse.plan_columns import take_rows
from indexcore.warehouse.table_heads import KeptContainer, reader_key
from indexcore.warehouse.table_manifests import gc_paused


def file_stats(table, live_file: LiveFile, only: Iterable[str] | None = None
               ) -> dict[str, tuple[Any, Any, int | None]]:
    """Latest-schema column -> (min, max, null count) of one file, as explain's stats stage reads
    them (:func:`~indexcore.scan.explain.column_stats`: mapped by field id across evolution);
    ``only``: just those columns (a predicate's fields: the others are not decoded)."""
    return column_stats(live_file, table.schema(), table.file_schema(live_file),
                        only=None if only is None else tuple(only))


def result_label(result: FileIndexResult) -> str:
    """``SKIP``, ``REMAIN`` or ``N rows`` for one index result."""
    if isinstance(result, BitmapResult):
        return f"{len(result.bitmap)} rows" if len(result.bitmap) else "SKIP (0 rows)"
    if result is SKIP:
        return "SKIP"
    if result is REMAIN:
        return "REMAIN"
    return "REMAIN" if result.remain() else "SKIP"


def prune_by_index(table, predicate: Predicate, index_types: Iterable[str], snapshot_id: int | None = None,
                   progress: Progress | None = None, sample: int | None = None) -> pd.DataFrame:
    """Per live file (``sample``: of that many files with a file index, the sample the index views
    decode; all files when it covers them): the statistics decision and each index type's answer
    to ``predicate``.

    ``stats`` is ``may match`` / ``SKIP`` from min/max/null counts; ``<type>`` is that type's
    file-index answer alone, ``no index`` where the file has no index of that type that could
    skip it (:func:`~indexcore.scan.explain.pruning_index_types`: e.g. a BSI on another
    column, or an OR branch on an unindexed one); ``rows_left`` the rows the index keeps.

    Worked out on the columnar plan's rows, no live file per file: each file's statistics read from
    its manifest record (only the predicate's fields decoded), its container's entries from the
    census and its readers from the table's kept ones (the page's summaries opened them); a file
    whose container the census could not list is read through its live file, which says what is
    wrong. The same answers as :func:`prune_live_files` (``tests/test_range_pruning.py``).
    """
    index_types = list(index_types)
    plan = table.plan_columns(snapshot_id)
    indexed = pc.or_(pc.is_valid(plan.files["_EMBEDDED_FILE_INDEX"]), pc.is_valid(plan.files["index_path"]))
    rows = decode_sample_rows(plan.text_objects("path"), indexed.to_numpy(zero_copy_only=False), sample)
    with gc_paused():  # thousands of acyclic rows and results: no collector passes over them
        return _prune_rows(table, predicate, index_types, snapshot_id, progress, plan, rows)


def prune_live_files(table, predicate: Predicate, index_types: Iterable[str], files: list[LiveFile],
                     snapshot_id: int | None = None, progress: Progress | None = None) -> pd.DataFrame:
    """:func:`prune_by_index` of the live ``files``, one object at a time (statistics through
    :func:`file_stats`' path, containers through :meth:`~indexcore.warehouse.Table.index_container`):
    the per-file reference the column-wise table is tested against."""
    with gc_paused():
        return _prune(table, predicate, list(index_types), snapshot_id, progress, files)


# the plan columns the pruning table reads of the sampled files
_PICKED = ["path", "_FILE_NAME", "_BUCKET", "_ROW_COUNT", "_SCHEMA_ID", "_VALUE_STATS_COLS", "_WRITE_COLS", "index_path",
           "partition_id"]


def _prune_rows(table, predicate: Predicate, index_types: list[str], snapshot_id: int | None,
                progress: Progress | None, plan, rows: list[int]) -> pd.DataFrame:
    """:func:`prune_by_index` of the plan's ``rows``."""
    at = np.asarray(rows, np.int64)
    # the columns read here only (the embedded indexes and value stats stay in the plan: a take of every
    # column copied them for the sample), whether each file embeds its index taken as a flag
    picked = take_rows(plan.files.select(_PICKED), at).append_column(
        "embedded", take_rows(pa.table({"e": pc.is_valid(plan.files["_EMBEDDED_FILE_INDEX"])}), at)["e"])
    n = picked.num_rows
    types = partition_types(table)
    c = {name: picked.column(name).to_pylist() for name in (
        "path", "_FILE_NAME", "_BUCKET", "_ROW_COUNT", "_SCHEMA_ID", "_VALUE_STATS_COLS", "_WRITE_COLS", "index_path")}
    embedded = picked.column("embedded").to_pylist()
    labels = (plan_partition_labels(plan, picked, types, table.caches.labels).to_pylist() if types
              else [UNPARTITIONED] * n)
    fields = tuple(sorted(predicate.fields()))  # the stats test reads these alone
    heads = _census_heads(table, snapshot_id, [p for p, q, e in zip(c["path"], c["index_path"], embedded, strict=True)
                                               if q is not None or e], fields)
    latest, by_path = table.schema(), table.live_files_by_path(snapshot_id)
    schemas: dict[int, tuple] = {}  # schema id -> (its schema, field map to the latest, row type)
    for path, sid in zip(c["path"], c["_SCHEMA_ID"], strict=True):
        if sid not in schemas:  # as table.file_schema: the latest where the file's is missing (reported once)
            schema = table.schema_or_latest(sid, path)
            schemas[sid] = (schema, field_map(latest, schema), schema.row_type())
    # each file's statistics of the predicate's fields as column_stats reads a live file's, decoded a
    # column at a time off the plan's stats (scan.stats_columns), not a stats object per file
    cells = value_stats(table, picked, {sid: kept[0] for sid, kept in schemas.items()}, Pushdowns(latest, []),
                        latest, list(fields), c["_ROW_COUNT"],
                        StatsBytes(plan.files.column("_VALUE_STATS"), rows)).cells(range(n)) if fields else None
    options: dict[tuple, Any] = {}
    shapes: dict[tuple, tuple[str, ...]] = {}
    out = []
    for i in range(n):
        path, sid, row_count = c["path"][i], c["_SCHEMA_ID"][i], c["_ROW_COUNT"][i]
        tick(progress, i, n, c["_FILE_NAME"][i])
        row = {"file_name": c["_FILE_NAME"][i], "partition": labels[i], "bucket": c["_BUCKET"][i],
               "row_count": row_count}
        kept = schemas[sid]
        schema = kept[0]
        stats = cells[i] if fields else {}
        row["stats"] = "may match" if test_predicate_on_stats(predicate, row_count, stats) else "SKIP"
        container = None
        if c["index_path"][i] is not None or embedded[i]:
            head = heads.get(path)
            try:  # the census's entries and the table's kept readers; a container the census could not
                # list is read through its live file, which says what is wrong
                container = (table.index_container(by_path[path]) if head is None else
                             _RowContainer(table, path, c["index_path"][i], embedded[i], head, by_path))
            except IndexCoreError as exc:
                row["error"] = str(exc)
        if container is None:
            usable = ()
        else:  # files of one container shape (their entries' columns and kinds) share the answer
            shape = tuple((e.column, e.index_type) for e in container.head.entries)
            usable = shapes.get(shape)
            if usable is None:
                usable = shapes[shape] = pruning_index_types(predicate, container_index_types(container))
        _answer(row, predicate, index_types, container, usable, kept[2],
                lambda col, t, s=schema: _options(options, s, col, t), row_count)
        out.append(row)
    tick(progress, n, n, "done")
    return pd.DataFrame(out)


class _RowContainer:
    """A file's index container from census rows: its entries (:class:`_CensusHead`) and each blob's
    reader where the table keeps it (:func:`~indexcore.warehouse.table_heads.reader_key`), else
    opened through the file's live file (:meth:`~indexcore.warehouse.Table.index_reader`)."""

    def __init__(self, table, path: str, index_path: str | None, embedded: bool, head: _CensusHead, by_path):
        self.head = head
        self._table, self._path, self._index_path, self._embedded, self._by_path = \
            table, path, index_path, embedded, by_path

    def reader(self, entry: IndexEntry, dtype, options: dict | None = None):
        key = reader_key(self._path, self._index_path, self._embedded, entry, dtype, options)
        reader = self._table.caches.readers.peek(key)  # looked up, not made recent: one lookup per file
        return reader if reader is not None else self._table.index_reader(self._by_path[self._path], entry, dtype,
                                                                          options)


def _answer(row: dict, predicate: Predicate, index_types: list[str], container, usable: tuple[str, ...], row_type,
            options_for, row_count: int) -> None:
    """Each index type's answer alone to ``predicate`` over one file's ``container`` (None: none or
    unreadable), and the rows it leaves, into ``row`` (``usable``: the container's kinds that can
    answer the predicate, :func:`~indexcore.scan.file_index.pruning_index_types`)."""
    for itype in index_types:
        if itype not in usable:  # none of this kind, or none that can answer the predicate
            row[itype] = "no index"
            continue
        try:
            result = FileIndexPredicate(_OnlyType(container, itype), row_type, options_for).evaluate(predicate)
            row[itype] = result_label(result)
            if isinstance(result, BitmapResult):
                row[f"{itype} rows_left"] = len(result.bitmap)
            else:
                row[f"{itype} rows_left"] = 0 if not result.remain() else row_count
        except IndexCoreError as exc:
            row[itype] = f"error: {exc.message}"


def _prune(table, predicate: Predicate, index_types: list[str], snapshot_id: int | None, progress: Progress | None,
           files: list[LiveFile]) -> pd.DataFrame:
    """:func:`prune_live_files`."""
    types = partition_types(table)
    heads = _census_heads(table, snapshot_id, [lf.path for lf in files if lf.has_file_index])
    fields = tuple(sorted(predicate.fields()))  # the stats test reads these alone
    latest = table.schema()
    # per file schema (files share a few): its field map to the latest schema, row type, index options
    fmaps: dict[int, tuple] = {}
    options: dict[tuple, Any] = {}
    rows = []
    for i, lf in enumerate(table.iter_prefetched(files, dv=False)):
        tick(progress, i, len(files), lf.file.file_name)
        row = {**file_cols(lf, types, table.caches.labels)}
        schema = table.file_schema(lf)
        kept = fmaps.get(id(schema))
        if kept is None or kept[0] is not schema:
            kept = fmaps[id(schema)] = (schema, field_map(latest, schema), schema.row_type())
        stats = column_stats(lf, latest, schema, kept[1], only=fields)  # as file_stats, the map made once
        row["stats"] = "may match" if test_predicate_on_stats(predicate, lf.file.row_count, stats) else "SKIP"
        container = None
        if lf.has_file_index:
            head = heads.get(lf.path)
            try:  # the table's kept readers (a page's summaries opened them already); the head from
                # the census, else (an unreadable container) the table's, which says what is wrong
                container = table.index_container(lf) if head is None else KeptContainer(table, lf, head)
            except IndexCoreError as exc:
                row["error"] = str(exc)
        usable = () if container is None else pruning_index_types(predicate, container_index_types(container))
        _answer(row, predicate, index_types, container, usable, kept[2],
                lambda c, t, s=schema: _options(options, s, c, t), lf.file.row_count)
        rows.append(row)
    tick(progress, len(files), len(files), "done")
    return pd.DataFrame(rows)


def _census_heads(table, snapshot_id: int | None, paths: list[str],
                  columns: Iterable[str] | None = None) -> dict[str, _CensusHead]:
    """Data file path -> its container's entries as the (kept) census lists them, for the files
    ``paths`` whose container could be read: no head parsed again per file. ``columns``: only the
    entries of those columns (a predicate's: the others answer nothing), every readable file kept."""
    wanted = None if columns is None else set(columns)
    census = snapshot_census(table, snapshot_id)
    rows = census.filter(texts_in(census["file_path"], pa.array(paths, pa.string())))
    c = {name: values_of(rows[name]) for name in ("column_name", "index_type", "index_offset", "index_size_in_bytes")}
    entries: dict[str, list[IndexEntry] | None] = {}
    for i, path in enumerate(rows["file_path"].cast(pa.string()).to_pylist()):
        column = c["column_name"][i]
        got = entries.setdefault(path, [])
        if column is None or got is None:  # an unreadable container
            entries[path] = None
            continue
        if wanted is not None and column not in wanted:
            continue
        got.append(IndexEntry(column, c["index_type"][i], c["index_offset"][i], c["index_size_in_bytes"][i]))
    return {path: _CensusHead(tuple(got)) for path, got in entries.items() if got is not None}


class _CensusHead:
    """A container head's entries (what :class:`~indexcore.scan.file_index.FileIndexPredicate` and
    :func:`~indexcore.scan.file_index.container_index_types` read of a head), from census rows."""

    def __init__(self, entries: tuple[IndexEntry, ...]):
        self.entries = entries

    def entries_for(self, column: str) -> list[IndexEntry]:
        return [e for e in self.entries if e.column == column]


def prune_by_sql(table, sql: str, index_types: Iterable[str] = FILE_INDEX_TYPES,
                 snapshot_id: int | None = None, sample: int | None = None) -> pd.DataFrame:
    """:func:`prune_by_index` for a SQL ``WHERE`` condition over the latest schema."""
    return prune_by_index(table, parse_where(sql, table.schema().row_type()), index_types, snapshot_id,
                          sample=sample)


def _options(kept: dict, schema, column: str, index_type: str) -> Any:
    """``schema.file_index_options(column, index_type)``, worked out once per schema (``kept``)."""
    key = (id(schema), column, index_type)
    hit = kept.get(key)
    if hit is None or hit[0] is not schema:
        hit = kept[key] = (schema, schema.file_index_options(column, index_type))
    return hit[1]


class _OnlyType:
    """A container view that shows only the entries of one index type."""
    def __init__(self, container, index_type: str):
        self._container = container
        self.head = _FilteredHead(container.head, index_type)

    def reader(self, entry, dtype, options=None):
        return self._container.reader(entry, dtype, options)


class _FilteredHead:
    def __init__(self, head, index_type: str):
        self._head, self._type = head, index_type

    def entries_for(self, column: str):
        return [e for e in self._head.entries_for(column) if e.index_type == self._type]
