"""Shared pieces of the views: partition text, file-index iteration, Arrow tables from rows."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import pyarrow as pa

from ..errors import IndexCoreError
from ..formats.base import FileIndexReader
from ..formats.container import EMPTY_INDEX_FLAG, IndexEntry
from ..io.cache import LRU, env_int
from ..types import DataType, to_json_value
from ..warehouse.file_sample import sample_files
from ..warehouse.model import LiveFile

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
    """Paimon's rendering of a partition in system tables: ``{v1, v2}``."""
    types = types or [None] * len(values)
    return "{" + ", ".join(_text(t, v) for t, v in zip(types, values, strict=False)) + "}"


def stats_text(names: list[str], types: list[DataType | None], values: tuple) -> str:
    """Paimon's rendering of value stats in ``$files``: ``{a=1, b=x}``."""
    return "{" + ", ".join(f"{n}={_text(t, v)}" for n, t, v in zip(names, types, values, strict=False)) + "}"


_LABELS = LRU(env_int("INDEXCORE_PARTITION_LABELS", 100_000))


def partition_text_cached(values: tuple, types: list[DataType]) -> str:
    """:func:`partition_text`, memoized (bounded): per-file views render the same few hundred
    partitions tens of thousands of times."""
    try:
        key = (values, tuple(types))
        hit = _LABELS.get(key)
    except TypeError:  # a value that cannot be a key
        return partition_text(values, types)
    if hit is None:
        hit = partition_text(values, types)
        _LABELS.put(key, hit)
    return hit


def partition_types(table) -> list[DataType]:
    return [f.type for f in table.schema().partition_fields]


def partition_label(partition: tuple, types: list[DataType]) -> str:
    """``{v1, v2}`` as Paimon's system tables show a partition; ``(unpartitioned)`` without keys."""
    return partition_text_cached(partition, types) if types else UNPARTITIONED


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


def _judge(schema, column: str, index_type: str) -> tuple:
    """(column type, why the column cannot be used, why the kind cannot be read, options) for one
    schema's column and index kind: the same for every file of that schema, so judged once."""
    from ..formats import FILE_INDEX_TYPES as DECODED
    from ..formats import _load as load_reader_class

    try:
        dtype = schema.field(column).type
    except KeyError:
        return None, f"column {column!r} is not in schema {schema.id}", None, None
    kind_error = None
    if index_type not in DECODED:
        try:
            load_reader_class(index_type, 0)  # the error opening its reader would raise
        except IndexCoreError as exc:
            kind_error = str(exc)
    return dtype, None, kind_error, schema.file_index_options(column, index_type)


@dataclass(frozen=True)
class Verdicts:
    """What a census says of each entry of one head (in head order), for every file of one schema
    whose head lists the same (column, kind, empty) entries: judged once per such shape, not once
    per entry of a 50,000-file snapshot."""

    columns: tuple[str, ...]
    kinds: tuple[str, ...]
    empty: tuple[bool, ...]
    types: tuple[DataType | None, ...]
    errors: tuple[str | None, ...]  # why the entry cannot be used (its column, then its kind)
    options: tuple[dict | None, ...]
    unusable: tuple[bool, ...]  # an error, or a kind that is not a file index
    any_unusable: bool


def _verdicts(schema, entries: tuple[IndexEntry, ...], judged: dict) -> Verdicts:
    from ..formats import FILE_INDEX_TYPES as DECODED

    types, errors, options = [], [], []
    for e in entries:
        key = (schema.id, e.column, e.index_type)
        known = judged.get(key)
        if known is None:
            known = judged[key] = _judge(schema, e.column, e.index_type)
        dtype, column_error, kind_error, opts = known
        types.append(dtype)
        errors.append(column_error or (None if e.empty else kind_error))
        options.append(opts)
    unusable = tuple(why is not None or e.index_type not in DECODED for e, why in zip(entries, errors, strict=True))
    return Verdicts(tuple(e.column for e in entries), tuple(e.index_type for e in entries),
                    tuple(e.empty for e in entries), tuple(types), tuple(errors), tuple(options),
                    unusable, any(unusable))


NO_VERDICTS = Verdicts((), (), (), (), (), (), (), False)


def judged_heads(table, snapshot_id: int | None = None, progress: Progress | None = None,
                 sample: int | None = None) -> Iterator[tuple[LiveFile, Any, str | None, Verdicts]]:
    """The census one file at a time: ``(live file, head, error, verdicts)`` for each live file with
    a file index (``sample``: that many of them), ``verdicts`` judging each head entry. A
    container that cannot be read is ``(live file, None, error, NO_VERDICTS)``."""
    files = sample_files([lf for lf in table.plan(snapshot_id).files if lf.has_file_index], sample)
    judged: dict[tuple, tuple] = {}  # (schema id, column, kind) -> what _judge says
    shapes: dict[tuple, Verdicts] = {}  # (schema id, entries' column, kind, empty...) -> verdicts
    schemas: dict[int, Any] = {}
    for i, (lf, head, head_error) in enumerate(table.iter_index_heads(files)):
        tick(progress, i, len(files), lf.file.file_name)
        if head is None:
            yield lf, None, head_error, NO_VERDICTS
            continue
        entries = head.entries
        shape = (lf.file.schema_id, *[(e.column, e.index_type, e.offset == EMPTY_INDEX_FLAG) for e in entries])
        verdicts = shapes.get(shape)
        if verdicts is None:
            schema = schemas.get(lf.file.schema_id)
            if schema is None:
                schema = schemas[lf.file.schema_id] = table.file_schema(lf)
            verdicts = shapes[shape] = _verdicts(schema, entries, judged)
        yield lf, head, None, verdicts
    tick(progress, len(files), len(files), "done")


def iter_index_entries(table, snapshot_id: int | None = None, index_types: Iterable[str] | None = None,
                       column: str | None = None, progress: Progress | None = None,
                       sample: int | None = None) -> Iterator[tuple]:
    """The census behind :func:`iter_file_indexes` as plain tuples ``(live file, head, head entry,
    column type, error, options)``, one per entry of :func:`judged_heads`.

    A container that cannot be read is ``(live file, None, None, None, error, None)``.
    """
    wanted = set(index_types) if index_types is not None else None
    for lf, head, head_error, v in judged_heads(table, snapshot_id, progress, sample):
        if head is None:
            yield lf, None, None, None, head_error, None
            continue
        for i, entry in enumerate(head.entries):
            if wanted is not None and entry.index_type not in wanted:
                continue
            if column is not None and entry.column != column:
                continue
            yield lf, head, entry, v.types[i], v.errors[i], v.options[i]


def iter_file_indexes(table, snapshot_id: int | None = None, index_types: Iterable[str] | None = None,
                      column: str | None = None, progress: Progress | None = None,
                      sample: int | None = None) -> Iterator[IndexBlob]:
    """Every file index of the snapshot's live files, filtered by type and column, from the
    (cached) container heads; readers open lazily. ``sample``: only that many of the files
    with a file index (:func:`~indexcore.warehouse.file_sample.sample_files`).

    A container that cannot be read yields one blob with ``column`` None and the ``error``.
    """
    for row in iter_index_entries(table, snapshot_id, index_types, column, progress, sample):
        yield index_blob(table, row)


def index_blob(table, row: tuple) -> IndexBlob:
    """The :class:`IndexBlob` of one :func:`iter_index_entries` row (its reader from the table's
    reader cache, :meth:`~indexcore.warehouse.table.Table.index_reader`)."""
    lf, head, entry, dtype, error, opts = row
    embedded = lf.file.embedded_index is not None
    if head is None:
        return IndexBlob(lf, None, None, 0, False, embedded, None, error)
    return IndexBlob(lf, entry.column, entry.index_type, 0 if entry.empty else entry.length,
                     entry.empty, embedded, dtype, error, entry.offset, head.file_size, entry, opts, table)


class CensusBlobs:
    """:class:`IndexBlob` s made from the rows of one ``$file_indexes`` census (its column values
    read into Python once, on the first blob asked for): an inventory places 180,000 census rows
    at 50,000 files, and most are only counted."""

    def __init__(self, table, census: pa.Table, files: Iterable[LiveFile]):
        self.table, self.census = table, census
        self._files = {lf.path: lf for lf in files}
        self._columns: dict[str, list] | None = None
        self._judged: dict[tuple, tuple] = {}

    def blob(self, i: int) -> IndexBlob:
        """The blob of census row ``i``."""
        if self._columns is None:
            self._columns = {name: self.census[name].to_pylist() for name in (
                "file_path", "column_name", "index_type", "index_offset", "index_size_in_bytes", "error",
                "index_container_size_in_bytes")}
        c = self._columns
        lf = self._files[c["file_path"][i]]
        column, kind, error = c["column_name"][i], c["index_type"][i], c["error"][i]
        embedded = lf.file.embedded_index is not None
        if column is None:  # the container cannot be read
            return IndexBlob(lf, None, None, 0, False, embedded, None, error)
        key = (lf.file.schema_id, column, kind)
        known = self._judged.get(key)
        if known is None:
            known = self._judged[key] = _judge(self.table.file_schema(lf), column, kind)
        dtype, _column_error, _kind_error, opts = known
        size, offset = c["index_size_in_bytes"][i], c["index_offset"][i]
        empty = offset == EMPTY_INDEX_FLAG
        return IndexBlob(lf, column, kind, size, empty, embedded, dtype, error, offset,
                         c["index_container_size_in_bytes"][i], IndexEntry(column, kind, offset, size), opts,
                         self.table)


class Blobs(Mapping[str, IndexBlob]):
    """Data file path -> :class:`IndexBlob` of one column and kind, each blob made on first use from
    its census row (:class:`CensusBlobs`); a file listing the pair twice is its last entry, as in
    Paimon's head map."""

    def __init__(self, rows: CensusBlobs):
        self._rows = rows
        self._at: dict[str, int] = {}
        self._made: dict[str, IndexBlob] = {}

    def add(self, paths: Iterable[str], rows: Iterable[int]) -> None:
        """Census rows ``rows`` (of data files ``paths``), in census order."""
        self._at.update(zip(paths, rows, strict=True))

    def __getitem__(self, path: str) -> IndexBlob:
        blob = self._made.get(path)
        if blob is None:
            blob = self._made[path] = self._rows.blob(self._at[path])
        return blob

    def __contains__(self, path: object) -> bool:
        return path in self._at

    def __iter__(self) -> Iterator[str]:
        return iter(self._at)

    def __len__(self) -> int:
        return len(self._at)


def summaries(table, snapshot_id, index_types, progress=None, column=None,
              sample: int | None = None) -> list[tuple[IndexBlob, dict]]:
    """Each index blob with its reader's ``summary()`` (``{"error": ...}`` or ``{"empty": True}``)."""
    out = []
    for blob in iter_file_indexes(table, snapshot_id, index_types, column, progress, sample):
        if blob.error is None and not blob.empty:
            if blob.reader is None:
                out.append((blob, {"error": blob.reader_error}))
                continue
            try:  # the per-file views show no range-bitmap top values: not decoded for them
                lite = {"top_values": False} if blob.index_type == "range-bitmap" else {}
                out.append((blob, blob.reader.summary(**lite)))
            except IndexCoreError as exc:
                out.append((blob, {"error": str(exc)}))
        else:
            out.append((blob, {"error": blob.error} if blob.error else {"empty": True}))
    return out


def file_cols(lf: LiveFile, types: list[DataType]) -> dict[str, Any]:
    """The columns every per-file index view starts with."""
    return {"file_name": lf.file.file_name, "partition": partition_label(lf.partition, types),
            "bucket": lf.bucket, "row_count": lf.file.row_count}


FILE_COLS = [("file_name", pa.string()), ("partition", pa.string()), ("bucket", pa.int32()),
             ("row_count", pa.int64())]
