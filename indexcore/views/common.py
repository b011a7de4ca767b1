"""Shared pieces of the views: partition text, index blobs, deletion-vector counts, Arrow tables from rows."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from indexcore.cache import LRU, release_unused
from indexcore.errors import IndexCoreError
from indexcore.formats.base import FileIndexReader
from indexcore.formats.container import IndexEntry
from indexcore.paimon.layout import format_partition
from indexcore.types import DataType, to_json_value
from indexcore.warehouse.model import LiveFile
from indexcore.warehouse.plan_columns import PlanColumns

Progress = Callable[[int, int, str], None]
TS = pa.timestamp("ms")
UNPARTITIONED = "(unpartitioned)"


def tick(progress: Progress | None, done: int, total: int, what: str) -> None:
    if progress is not None:
        progress(done, total, what)


def _text(dtype: DataType | None, value: Any) -> str:
    if value is None:
        return "null"
    if dtype is None:
        return str(value)
    try:
        return str(to_json_value(dtype, value))
    except Exception:  # a value the type codec does not render: show it raw
        return str(value)


def partition_text(values: tuple, types: list[DataType] | None = None) -> str:
    """Paimon's rendering of a partition in system tables, ``{v1, v2}``: the one partition format
    (:func:`indexcore.paimon.layout.format_partition`)."""
    return format_partition(values, types or [None] * len(values))


def stats_text(names: list[str], types: list[DataType | None], values: tuple) -> str:
    """Paimon's rendering of value stats in ``$files``: ``{a=1, b=x}``."""
    return "{" + ", ".join(f"{n}={_text(t, v)}" for n, t, v in zip(names, types, values, strict=False)) + "}"


def partition_text_cached(values: tuple, types: list[DataType], labels: LRU) -> str:
    """:func:`partition_text`, kept in ``labels`` (the table's ``caches.labels``, bounded): per-file
    views render the same few hundred partitions tens of thousands of times."""
    try:
        key = (values, tuple(types))
        hit = labels.get(key)
    except TypeError:  # a value that cannot be a key
        return partition_text(values, types)
    if hit is None:
        hit = partition_text(values, types)
        labels.put(key, hit)
    return hit


def to_frame(result: pa.Table, texts: Callable[[pa.Array], np.ndarray | None] | None = None) -> pd.DataFrame:
    """A view as a pandas frame, as ``result.to_pandas()`` gives it, but its dictionary-encoded text
    columns (the census's :data:`~indexcore.views.census.SHARED_TEXT`) as plain text (object, None
    for null) and not pandas categories, whose group-bys would list every value of the plan's
    dictionary. Each distinct text is one Python string, as to_pandas makes them. What the
    conversion freed goes back to the OS when the view is large (:data:`RELEASE_ROWS`): at 100,000
    files the ``$files`` listing's frame held 1,113 B per file in RSS before, 750 after, the
    census's 1,327 and 929.

    ``texts(array)``: the Python strings of a text array when it is one a caller keeps them for
    (the plan's paths and names: :meth:`PlanColumns.text_objects
    <indexcore.warehouse.plan_columns.PlanColumns.text_objects>`), else None; a text column that is
    such an array, or a dictionary column whose dictionary is, takes its strings from there, so
    two frames of one plan share one string per path instead of holding one each."""
    objects = {}
    for f in result.schema:
        kept = None
        if texts is not None and (pa.types.is_string(f.type) or pa.types.is_dictionary(f.type)):
            kept = _kept_texts(result.column(f.name), texts)
        if kept is not None:
            objects[f.name] = kept
        elif pa.types.is_dictionary(f.type):
            objects[f.name] = _plain_objects(result.column(f.name))
    if not objects:
        frame = result.to_pandas()
    else:
        frame = result.drop_columns(list(objects)).to_pandas()
        for name, values in objects.items():  # in schema order: each goes back to its place
            frame.insert(result.schema.get_field_index(name), name, values)
    if result.num_rows >= RELEASE_ROWS:
        release_unused()
    return frame


RELEASE_ROWS = 4096  # a view's rows from which to_frame gives back what it freed (a syscall or two)


def _kept_texts(column: pa.ChunkedArray, texts: Callable[[pa.Array], np.ndarray | None]) -> np.ndarray | None:
    """``column`` (one chunk: a text array, or a dictionary of one) as an object array of the
    strings ``texts`` keeps for its array (a new array of pointers to them), else None."""
    if column.num_chunks != 1:
        return None
    chunk = column.chunk(0)
    if pa.types.is_dictionary(chunk.type):
        if 2 * len(chunk) < len(chunk.dictionary):  # a few rows of a large dictionary: their own strings
            return None
        objects = texts(chunk.dictionary)
        if objects is None:
            return None
        at = pc.fill_null(chunk.indices, -1).to_numpy(zero_copy_only=False).astype(np.int64)
        if not len(objects):  # every row null
            return np.full(len(at), None, object)
        out = objects.take(at)  # -1 takes the last: made None below
        out[at < 0] = None
        return out
    objects = texts(chunk)
    return None if objects is None else objects.copy()


def _plain_objects(column: pa.ChunkedArray) -> np.ndarray:
    """A dictionary-encoded column's values as an object array (None for null); only the texts its
    rows use become Python strings (a census's few unusable rows: not the plan's every path)."""
    parts = []
    for chunk in column.chunks:
        at = pc.fill_null(chunk.indices, -1).to_numpy(zero_copy_only=False).astype(np.int64)
        if len(chunk.dictionary) <= len(chunk):  # its texts no more than its rows (the census's kinds,
            values = np.empty(len(chunk.dictionary) + 1, object)  # column names): each once, no sort of the rows
            values[:-1] = chunk.dictionary.to_numpy(zero_copy_only=False)
            parts.append(values[at])  # -1 (null) takes the last: None
            continue
        used, where = np.unique(at, return_inverse=True)  # -1 (null) first when present
        values = np.empty(len(used), object)
        real = used >= 0
        values[real] = chunk.dictionary.take(pa.array(used[real])).to_numpy(zero_copy_only=False)
        parts.append(values[where.reshape(-1)])
    return np.concatenate(parts) if parts else np.empty(0, object)


def kept_view(table, name: str, snapshot_id: int, build: Callable[[], pa.Table]) -> pa.Table:
    """``build()`` of the view ``name`` of snapshot ``snapshot_id``, kept on the table (weighed by
    its rows) under the one key every caller of that view shares; what the build freed goes back
    to the OS (:func:`~indexcore.cache.release_unused`), as it stays otherwise."""
    def built() -> pa.Table:
        result = build()
        release_unused()
        return result

    return table.derived(("view", name, snapshot_id), built, weight=lambda result: result.num_rows)


def kept_view_if_built(table, name: str, snapshot_id: int) -> pa.Table | None:
    """The view ``name`` of snapshot ``snapshot_id`` when the table keeps it already (built by
    :func:`kept_view`), else None; nothing is built."""
    return table.caches.derived.get(("view", name, snapshot_id))


def plan_partition_labels(plan: PlanColumns, live: pa.Table | None, types: list[DataType], kept: LRU) -> pa.Array:
    """:func:`partition_text` of each row of ``live`` (rows of ``plan.files``), each of the plan's
    distinct partitions rendered once (``kept``: the table's labels); ``live`` None: the plan's
    distinct partitions' labels, ``partition_id`` i's at i."""
    labels = []
    for values, _spec, _folder in plan.partitions:
        try:
            labels.append(partition_text_cached(values, types, kept))
        except TypeError:  # a value that cannot be a key
            labels.append(partition_text(values, types))
    labels = pa.array(labels, pa.string())
    return labels if live is None else labels.take(live.column("partition_id"))


def partition_labels(files: Sequence[LiveFile], types: list[DataType], kept: LRU) -> list[str]:
    """:func:`partition_text` of each file's partition, each distinct partition rendered once
    (tens of thousands of files share a few hundred partitions; ``kept``: the table's labels)."""
    try:
        labels = {p: partition_text_cached(p, types, kept) for p in {lf.partition for lf in files}}
    except TypeError:  # a value that cannot be a key
        return [partition_text(lf.partition, types) for lf in files]
    return [labels[lf.partition] for lf in files]


def partition_types(table) -> list[DataType]:
    return [f.type for f in table.schema().partition_fields]


def partition_label(partition: tuple, types: list[DataType], labels: LRU) -> str:
    """``{v1, v2}`` as Paimon's system tables show a partition; ``(unpartitioned)`` without keys
    (``labels``: the table's kept labels, ``table.caches.labels``)."""
    return partition_text_cached(partition, types, labels) if types else UNPARTITIONED


def from_rows(rows: list[dict], schema: pa.Schema) -> pa.Table:
    """An Arrow table with exactly ``schema`` (missing keys are nulls)."""
    return pa.Table.from_pylist(rows, schema=schema)


def dv_cardinality(table, live_file: LiveFile) -> int | None:
    """Deleted rows of a file: the manifest's cardinality, else decoded from the DV file."""
    dv = live_file.deletion_vector
    if dv is None:
        return None
    if dv.cardinality is not None:
        return dv.cardinality
    try:
        decoded = table.deletion_vector(live_file)
    except IndexCoreError:
        return None
    return None if decoded is None else decoded.cardinality


@dataclass(frozen=True)
class IndexBlob:
    """One (data file, column, index type) file index from its container's head; ``error`` when
    the head says it cannot be used. Its :attr:`reader` is opened on first use only, so a
    census of blobs reads heads alone; an error opening it is :attr:`reader_error`."""

    file: LiveFile
    column: str | None
    index_type: str | None
    size: int
    empty: bool
    embedded: bool
    dtype: DataType | None
    error: str | None = None
    offset: int | None = None
    container_size: int | None = None
    entry: IndexEntry | None = field(default=None, repr=False, compare=False)
    options: dict | None = field(default=None, repr=False, compare=False)
    table: Any = field(default=None, repr=False, compare=False)  # whose reader cache opens it

    @cached_property
    def _opened(self) -> tuple[FileIndexReader | None, str | None]:
        if self.error is not None or self.entry is None or self.table is None:
            return None, None
        try:
            return self.table.index_reader(self.file, self.entry, self.dtype, self.options), None
        except IndexCoreError as exc:
            return None, str(exc)

    @property
    def reader(self) -> FileIndexReader | None:
        """The blob's reader (None when the head or opening it failed)."""
        return self._opened[0]

    @property
    def reader_error(self) -> str | None:
        """Why opening the reader failed (the head's ``error`` first)."""
        return self.error or self._opened[1]


def file_cols(lf: LiveFile, types: list[DataType], labels: LRU) -> dict[str, Any]:
    """The columns every per-file index view starts with (``labels``: the table's kept labels)."""
    return {"file_name": lf.file.file_name, "partition": partition_label(lf.partition, types, labels),
            "bucket": lf.bucket, "row_count": lf.file.row_count}


FILE_COLS = [("file_name", pa.string()), ("partition", pa.string()), ("bucket", pa.int32()),
             ("row_count", pa.int64())]
