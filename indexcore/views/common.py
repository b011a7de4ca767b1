"""Shared pieces of the views: partition text, file-index iteration, Arrow tables from rows."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from ..errors import IndexCoreError
from ..formats.base import FileIndexReader
from ..types import DataType, to_json_value
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


def partition_types(table) -> list[DataType]:
    return [f.type for f in table.schema().partition_fields]


def partition_label(partition: tuple, types: list[DataType]) -> str:
    """``{v1, v2}`` as Paimon's system tables show a partition; ``(unpartitioned)`` without keys."""
    return partition_text(partition, types) if types else UNPARTITIONED


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
    """One (data file, column, index type) file index, opened lazily; ``error`` when unreadable."""

    file: LiveFile
    column: str | None
    index_type: str | None
    size: int
    empty: bool
    embedded: bool
    reader: FileIndexReader | None
    dtype: DataType | None
    error: str | None = None
    offset: int | None = None
    container_size: int | None = None


def iter_file_indexes(table, snapshot_id: int | None = None, index_types: Iterable[str] | None = None,
                      column: str | None = None, progress: Progress | None = None) -> Iterator[IndexBlob]:
    """Every file index of the snapshot's live files, filtered by type and column.

    A container that cannot be read yields one blob with ``column`` None and the ``error``.
    """
    from ..formats.container import read_container

    wanted = set(index_types) if index_types is not None else None
    files = [lf for lf in table.plan(snapshot_id).files if lf.has_file_index]
    for i, lf in enumerate(table.iter_prefetched(files, dv=False)):
        tick(progress, i, len(files), lf.file.file_name)
        embedded = lf.file.embedded_index is not None
        try:
            source = table.file_index_source(lf)
            container = read_container(source)
        except IndexCoreError as exc:
            yield IndexBlob(lf, None, None, 0, False, embedded, None, None, str(exc))
            continue
        schema = table.file_schema(lf)
        for entry in container.head.entries:
            if wanted is not None and entry.index_type not in wanted:
                continue
            if column is not None and entry.column != column:
                continue
            try:
                dtype = schema.field(entry.column).type
            except KeyError:
                dtype = None
            reader, error = None, None
            if dtype is None:
                error = f"column {entry.column!r} is not in schema {schema.id}"
            else:
                try:
                    opts = schema.file_index_options(entry.column, entry.index_type)
                    reader = container.reader(entry, dtype, opts)
                except IndexCoreError as exc:
                    error = str(exc)
            yield IndexBlob(lf, entry.column, entry.index_type, 0 if entry.empty else entry.length,
                            entry.empty, embedded, reader, dtype, error, entry.offset, source.size)
    tick(progress, len(files), len(files), "done")


def summaries(table, snapshot_id, index_types, progress=None, column=None) -> list[tuple[IndexBlob, dict]]:
    """Each index blob with its reader's ``summary()`` (``{"error": ...}`` or ``{"empty": True}``)."""
    out = []
    for blob in iter_file_indexes(table, snapshot_id, index_types, column, progress):
        if blob.error is None and blob.reader is not None and not blob.empty:
            try:
                out.append((blob, blob.reader.summary()))
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
