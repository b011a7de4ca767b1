"""Write one data file (Parquet) with its stats and file indexes, as Paimon's writers do.

This part runs where the rows are (in a Spark task or in-process): it takes the rows of one
partition and bucket as an Arrow table and returns a small :class:`WrittenFile` for the commit.

* Parquet columns carry Paimon's field ids; primary-key files start with ``_KEY_<k>``
  (id ``1073741823 + field id``), ``_SEQUENCE_NUMBER`` and ``_VALUE_KIND`` and are sorted by key.
* Value stats use Paimon's default ``truncate(16)`` mode for strings.
* File indexes (``file-index.*`` options) go in one FileIndexFormat container; it is embedded
  in the manifest when it is at most ``file-index.in-manifest-threshold`` bytes, else written
  as ``<data-file>.index`` beside the data file and listed in the extra files.
"""

from __future__ import annotations

import datetime as _dt
import os
import posixpath
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from indexcore.errors import UnsupportedError
from indexcore.formats.container import write_container
from indexcore.formats.registry import new_writer, new_writers
from indexcore.paimon.layout import KEY_FIELD_ID_START, SEQUENCE_NUMBER_ID, VALUE_KIND_ID
from indexcore.paimon.options import FileIndexSpec
from indexcore.types import DataType, Timestamp
from indexcore.warehouse.model import DataFileMeta, SimpleStats, TableSchema

VALUE_KIND = "_VALUE_KIND"
SEQUENCE_NUMBER = "_SEQUENCE_NUMBER"
INSERT, DELETE = 0, 3  # RowKind bytes: +I, -D
APPEND_SOURCE, COMPACT_SOURCE = 0, 1
STATS_TRUNCATE = 16
BUILD = object()  # write_data_file's index_container when the caller has none: build it from the rows


@dataclass(frozen=True)
class WrittenFile:
    """A data file written by a task, with what the committer needs to know about it.

    ``keys`` (primary-key tables) are the trimmed keys in file order and ``deletes`` the
    positions of ``-D`` rows; the committer derives deletion vectors and hash indexes from them.
    ``compact_of`` names the level-0 file a compaction output replaces.
    """

    partition: tuple
    bucket: int
    file: DataFileMeta
    keys: tuple | None = None
    deletes: tuple[int, ...] = ()
    compact_of: str | None = None


def arrow_type(dtype: DataType) -> pa.DataType:
    """The Arrow type Paimon's Parquet writer uses for a Paimon type."""
    r = dtype.root
    simple = {"BOOLEAN": pa.bool_(), "TINYINT": pa.int8(), "SMALLINT": pa.int16(), "INT": pa.int32(),
              "BIGINT": pa.int64(), "FLOAT": pa.float32(), "DOUBLE": pa.float64(), "CHAR": pa.string(),
              "VARCHAR": pa.string(), "BINARY": pa.binary(), "VARBINARY": pa.binary(), "DATE": pa.date32()}
    if r in simple:
        return simple[r]
    if r in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        p = dtype.precision if dtype.precision is not None else 6
        unit = "ms" if p <= 3 else "us" if p <= 6 else "ns"
        return pa.timestamp(unit, tz="UTC" if r == "TIMESTAMP_LTZ" else None)
    if r == "DECIMAL":
        return pa.decimal128(dtype.precision, dtype.scale)
    if r == "TIME":
        return pa.time32("ms")
    if r in ("ARRAY", "VECTOR") and dtype.element is not None and dtype.element.root in simple:
        return pa.list_(simple[dtype.element.root])  # embeddings for vector indexes; no min/max stats
    raise UnsupportedError(f"indexcore does not write {dtype} columns")


def _field(name: str, dtype: DataType, field_id: int, nullable: bool | None = None) -> pa.Field:
    return pa.field(name, arrow_type(dtype), nullable=dtype.nullable if nullable is None else nullable,
                    metadata={b"PARQUET:field_id": str(field_id).encode()})


def internal_values(column: pa.Array | pa.ChunkedArray, dtype: DataType) -> list[Any]:
    """Arrow values as indexcore's internal values (see :mod:`indexcore.types`)."""
    r = dtype.root
    if r == "DATE":
        return column.cast(pa.int32()).to_pylist()
    if r == "TIME":
        return column.cast(pa.int32()).to_pylist()
    if r in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        unit = column.type.unit
        raw = column.cast(pa.int64()).to_pylist()
        if unit == "ms":
            return [None if v is None else Timestamp(v) for v in raw]
        if unit == "us":
            return [None if v is None else Timestamp.from_micros(v) for v in raw]
        if unit == "ns":
            return [None if v is None else Timestamp.from_nanos(v) for v in raw]
        return [None if v is None else Timestamp(v * 1000) for v in raw]
    if r == "FLOAT":
        return column.to_pylist()
    return column.to_pylist()


def _truncate_min(text: str) -> str:
    return text[:STATS_TRUNCATE]


def _truncate_max(text: str) -> str | None:
    """Paimon's ``truncate(16)`` upper bound: cut, then bump the last character that can grow."""
    if len(text) <= STATS_TRUNCATE:
        return text
    cut = list(text[:STATS_TRUNCATE])
    for i in range(len(cut) - 1, -1, -1):
        code = ord(cut[i])
        if code < 0x10FFFF and not (0xD7FF <= code < 0xE000):
            cut[i] = chr(code + 1)
            return "".join(cut[:i + 1])
    return None


_CONVERTED = frozenset({"DATE", "TIME", "TIMESTAMP", "TIMESTAMP_LTZ"})  # internal_values converts these


def column_stats(column: pa.ChunkedArray | pa.Array, dtype: DataType) -> tuple[Any, Any, int]:
    """(min, max, null count) in internal values, with Paimon's default string truncation."""
    nulls = column.null_count
    if len(column) == nulls or dtype.root in ("BINARY", "VARBINARY", "ARRAY", "VECTOR"):
        return None, None, nulls
    mm = pc.min_max(column)
    if dtype.root in _CONVERTED:
        lo = pa.array([mm["min"].as_py()], type=column.type)
        hi = pa.array([mm["max"].as_py()], type=column.type)
        low, high = internal_values(lo, dtype)[0], internal_values(hi, dtype)[0]
    else:  # the Python value is already the internal one: no one-element arrays per file and column
        low, high = mm["min"].as_py(), mm["max"].as_py()
    if dtype.root in ("CHAR", "VARCHAR"):
        low, high = _truncate_min(low), _truncate_max(high)
    return low, high, nulls


def group_value_stats(rows: pa.Table, groups: Sequence[Any], schema: TableSchema) -> list[SimpleStats]:
    """The value stats of every group of rows (disjoint sequences of row indices) at once: one
    Arrow hash aggregation per task instead of a min/max per file and column. Equal to
    :func:`_stats` on each group (a float column holding NaN, whose min/max Arrow's two kernels
    may treat differently, and column types without min/max are done per group)."""
    names = list(schema.field_names)
    gid = np.full(rows.num_rows, -1, np.int64)
    for i, indices in enumerate(groups):
        gid[np.asarray(indices, np.int64)] = i
    if sum(len(g) for g in groups) != int((gid >= 0).sum()):
        raise ValueError("the groups of a task's rows must not share a row")
    out: list[list[tuple[Any, Any, int]]] = [[] for _ in groups]
    batch = []
    for name in names:
        dtype, column = schema.field(name).type, rows.column(name)
        if dtype.root in ("BINARY", "VARBINARY", "ARRAY", "VECTOR") or (
                dtype.root in ("FLOAT", "DOUBLE") and pc.any(pc.is_nan(column)).as_py()):
            batch.append(None)
        else:
            batch.append(name)
    agg_cols = [n for n in batch if n is not None]
    table = pa.table({**{n: rows.column(n) for n in agg_cols}, "__group": gid})
    aggs = [(n, "min_max") for n in agg_cols] + [(n, "count", pc.CountOptions("only_null")) for n in agg_cols]
    result = table.group_by("__group", use_threads=False).aggregate(aggs)
    at = np.full(len(groups) + 1, -1, np.int64)
    keys = result.column("__group").to_numpy()
    at[keys] = np.arange(len(keys))
    pos = at[:len(groups)]
    if (pos < 0).any():
        raise ValueError("every group needs at least one row")
    for name in names:
        dtype = schema.field(name).type
        if name not in agg_cols:
            for i, indices in enumerate(groups):
                out[i].append(column_stats(rows.column(name).take(pa.array(indices)), dtype))
            continue
        mm = result.column(f"{name}_min_max").combine_chunks().take(pa.array(pos))
        nulls = result.column(f"{name}_count").to_numpy()[pos].tolist()
        lows, highs = mm.field("min"), mm.field("max")
        if dtype.root in _CONVERTED:
            lows, highs = internal_values(lows, dtype), internal_values(highs, dtype)
        else:
            lows, highs = lows.to_pylist(), highs.to_pylist()
        text = dtype.root in ("CHAR", "VARCHAR")
        for i, (lo, hi, n) in enumerate(zip(lows, highs, nulls, strict=True)):
            if lo is not None and text:
                lo, hi = _truncate_min(lo), _truncate_max(hi)
            out[i].append((lo, hi, n))
    return [SimpleStats(tuple(c[0] for c in cols), tuple(c[1] for c in cols), tuple(c[2] for c in cols))
            for cols in out]


def _stats(table: pa.Table, names: Sequence[str], schema: TableSchema) -> SimpleStats:
    mins, maxs, nulls = [], [], []
    for name in names:
        lo, hi, n = column_stats(table.column(name), schema.field(name).type)
        mins.append(lo)
        maxs.append(hi)
        nulls.append(n)
    return SimpleStats(tuple(mins), tuple(maxs), tuple(nulls))


def build_file_index(column_values: Sequence[Any], dtype: DataType, index_type: str,
                     options: dict[str, str] | None = None) -> bytes:
    """The bytes Paimon's writer of ``index_type`` produces for these values (one per row)."""
    writer = new_writer(index_type, dtype, options or {})
    writer.write_batch(column_values)
    return writer.serialized_bytes()


def build_file_index_container(table: pa.Table, schema: TableSchema,
                               plan: Sequence[FileIndexSpec] | None = None) -> bytes | None:
    """The FileIndexFormat container of every index the table options ask for (None if none)."""
    return build_file_index_containers([table], schema, plan)[0]


def build_file_index_containers(tables: Sequence[pa.Table], schema: TableSchema,
                                plan: Sequence[FileIndexSpec] | None = None) -> list[bytes | None]:
    """:func:`build_file_index_container` of each of many files' tables (a task's files), each
    index kind built for all files in one pass where it can (:func:`~indexcore.formats.registry.new_writers`:
    the same bytes as one writer per file, tests/test_writer_many.py), else one writer per file.

    A writer that takes the column's Arrow type reads the column directly; the others get the
    column's internal values (converted once per column and file).
    """
    plan = schema.core_options.file_indexes(schema.field_names) if plan is None else plan
    if not plan:
        return [None] * len(tables)
    per_file: list[list[tuple[str, list[tuple[str, bytes | None]]]]] = [[] for _ in tables]
    values_cache: dict[str, list[list[Any]]] = {}
    for ci in plan:
        dtype = schema.field(ci.column).type
        columns = [t.column(ci.column) for t in tables]
        writers = new_writers(ci.index_type, dtype, dict(ci.options), columns) if len(columns) > 1 else None
        if writers is None:
            writers = [new_writer(ci.index_type, dtype, dict(ci.options)) for _ in columns]
            for f, (writer, column) in enumerate(zip(writers, columns, strict=True)):
                if writer.accepts_arrow(column.type):
                    writer.write_arrow(column)
                else:
                    values = values_cache.setdefault(ci.column, [None] * len(columns))
                    if values[f] is None:
                        values[f] = internal_values(column, dtype)
                    writer.write_batch(values[f])
        for columns_of_file, writer in zip(per_file, writers, strict=True):
            blob = writer.serialized_bytes()
            if columns_of_file and columns_of_file[-1][0] == ci.column:
                columns_of_file[-1][1].append((ci.index_type, blob))
            else:
                columns_of_file.append((ci.column, [(ci.index_type, blob)]))
    return [write_container(columns) for columns in per_file]


def _write_parquet(path: str, table: pa.Table, fs_open: Callable[[str], Any] | None) -> int:
    buf = pa.BufferOutputStream()  # Arrow's own buffer: no Python call per write, as BytesIO has
    pq.write_table(table, buf, compression="zstd", use_dictionary=True, write_statistics=True,
                   store_schema=False)
    data = buf.getvalue()
    _write_bytes(path, data, fs_open)
    return data.size


def _write_bytes(path: str, data: bytes | pa.Buffer, fs_open: Callable[[str], Any] | None) -> None:
    if fs_open is not None:
        with fs_open(path) as out:
            out.write(data)
        return
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0)
    try:  # the folder exists for all but a bucket's first file: no makedirs per file
        fd = os.open(path, flags, 0o666)  # a raw descriptor: no buffered file object per file
    except FileNotFoundError:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd = os.open(path, flags, 0o666)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def data_file_schema(schema: TableSchema) -> pa.Schema:
    """The Arrow schema of a data file of ``schema``: Paimon's field ids, and for a primary-key
    table the ``_KEY_`` columns, ``_SEQUENCE_NUMBER`` and ``_VALUE_KIND`` first."""
    fields = []
    if schema.primary_keys:
        for k in schema.trimmed_primary_keys:
            f = schema.field(k)
            fields.append(_field(f"_KEY_{k}", f.type, KEY_FIELD_ID_START + f.id, nullable=False))
        fields.append(pa.field(SEQUENCE_NUMBER, pa.int64(), nullable=False,
                               metadata={b"PARQUET:field_id": str(SEQUENCE_NUMBER_ID).encode()}))
        fields.append(pa.field(VALUE_KIND, pa.int8(), nullable=False,
                               metadata={b"PARQUET:field_id": str(VALUE_KIND_ID).encode()}))
    fields += [_field(f.name, f.type, f.id) for f in schema.fields]
    return pa.schema(fields)


def write_data_file(table_path: str, schema: TableSchema, partition: tuple, bucket: int, rows: pa.Table,
                    file_name: str, *, seq_start: int = 0, level: int = 0,
                    file_source: int = APPEND_SOURCE, creation_millis: int = 0,
                    fs_open: Callable[[str], Any] | None = None,
                    index_plan: Sequence[FileIndexSpec] | None = None,
                    file_schema: pa.Schema | None = None,
                    value_stats: SimpleStats | None = None, directory: str | None = None,
                    index_container: bytes | None | object = BUILD) -> WrittenFile:
    """Write ``rows`` (table columns, plus ``_VALUE_KIND`` for a PK table) as one data file.

    Primary-key rows are sorted by key here; keys must be unique within ``rows``. ``index_plan``,
    ``file_schema`` (:func:`data_file_schema`) and ``value_stats`` (:func:`group_value_stats`)
    are given by a caller that has them for many files at once (a task), and so may the
    bucket's ``directory`` and the file's ``index_container`` (:func:`build_file_index_containers`
    of the rows as sorted here; default :data:`BUILD`: built here).
    """
    pk = schema.trimmed_primary_keys if schema.primary_keys else ()
    data_cols = list(schema.field_names)
    n = rows.num_rows
    if SEQUENCE_NUMBER in rows.column_names:
        seqs = rows.column(SEQUENCE_NUMBER).cast(pa.int64())
    elif pk:
        seqs = pa.chunked_array([pa.array(np.arange(seq_start, seq_start + n, dtype=np.int64))])
    else:  # an append file stores no sequence numbers: only their range goes to the manifest
        seqs = None
    kinds = None
    if pk:
        if VALUE_KIND in rows.column_names:
            kinds = rows.column(VALUE_KIND).cast(pa.int8())
        else:
            kinds = pa.chunked_array([pa.array([INSERT] * n, pa.int8())])
        rows = rows.select(data_cols).append_column(VALUE_KIND, kinds).append_column(SEQUENCE_NUMBER, seqs)
        rows = rows.take(pc.sort_indices(rows, sort_keys=[(k, "ascending") for k in pk]))
        kinds, seqs = rows.column(VALUE_KIND), rows.column(SEQUENCE_NUMBER)
    rows = rows.select(data_cols)
    file_schema = data_file_schema(schema) if file_schema is None else file_schema
    arrays = [rows.column(k) for k in pk] + [seqs, kinds] if pk else []
    for target, column in zip(file_schema.types[len(arrays):], rows.columns, strict=True):
        arrays.append(column if column.type == target else column.cast(target))
    out = pa.Table.from_arrays(arrays, schema=file_schema)
    if directory is None:
        layout = schema.path_layout(table_path)
        directory = layout.bucket_dir(layout.partition_dir(partition), bucket)
    size = _write_parquet(posixpath.join(directory, file_name), out, fs_open)

    container = build_file_index_container(rows, schema, index_plan) if index_container is BUILD else index_container
    embedded, extra = None, ()
    if container is not None:
        if len(container) <= schema.core_options.file_index_in_manifest_threshold:
            embedded = container
        else:
            _write_bytes(posixpath.join(directory, file_name + ".index"), container, fs_open)
            extra = (file_name + ".index",)

    keys, deletes, key_stats = None, (), SimpleStats.empty()
    min_key = max_key = ()
    if pk:
        key_internal = [internal_values(rows.column(k), schema.field(k).type) for k in pk]
        keys = tuple(zip(*key_internal, strict=True))
        if n:
            min_key, max_key = keys[0], keys[-1]
        key_stats = _stats(rows, pk, schema)
        kind_list = kinds.to_pylist()
        deletes = tuple(i for i, kind in enumerate(kind_list) if kind == DELETE)
    meta = DataFileMeta(
        file_name=file_name, file_size=size, row_count=n, min_key=min_key, max_key=max_key,
        key_stats=key_stats, value_stats=_stats(rows, data_cols, schema) if value_stats is None else value_stats,
        min_sequence_number=seq_start if seqs is None or not n else pc.min(seqs).as_py(),
        max_sequence_number=seq_start + max(n - 1, 0) if seqs is None or not n else pc.max(seqs).as_py(),
        schema_id=schema.id, level=level, extra_files=extra,
        creation_time=_dt.datetime.fromtimestamp(creation_millis / 1000, tz=_dt.UTC),
        delete_row_count=len(deletes), embedded_index=embedded, file_source=file_source)
    return WrittenFile(partition, bucket, meta, keys, deletes)
