"""One data file read the way Paimon's batch read reads it: as stored (Parquet, ORC, Avro, Mosaic,
``.blob``), through the table schema by field id (:mod:`.file_columns`), its deletion vector's
positions dropped; and the positions where a predicate holds.
"""

from __future__ import annotations

import array
import subprocess
import sys
from collections.abc import Collection
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.orc as pa_orc
import pyarrow.parquet as pq
from pyroaring import BitMap

from indexcore.errors import CorruptFileError, IndexCoreError, StorageError, UnsupportedError
from indexcore.expr.rows import mask
from indexcore.expr.tree import Predicate
from indexcore.formats.blob_file import read_blob_file
from indexcore.formats.mosaic_file import read_mosaic
from indexcore.io import Storage
from indexcore.paimon.layout import SEQUENCE_NUMBER_ID, VALUE_KIND_ID
from indexcore.warehouse.avro_file import read_avro_table
from indexcore.warehouse.file_columns import evolve_columns, evolve_direct, parquet_projection
from indexcore.warehouse.merge import POSITION, SEQUENCE_NUMBER, VALUE_KIND
from indexcore.warehouse.model import LiveFile, TableSchema

#: A Parquet file of one row group up to this size is decoded without Arrow's thread pool.
SMALL_PARQUET_BYTES = 4 << 20

#: A local Parquet file up to this size is read whole in one ``pread`` (Paimon's small files:
#: a few KiB at 10,000 files), larger ones through Arrow's ranged reads of the columns wanted.
WHOLE_READ_BYTES = 1 << 20


def read_raw(storage: Storage, path: str, file_format: str | None = None,
             blob_field: str | None = None, field_ids: Collection[int] | None = None,
             memo: dict | None = None) -> pa.Table:
    """All columns of one Parquet, ORC, Avro, Mosaic or ``.blob`` file, as stored (of a Parquet file,
    only the columns of ``field_ids`` when given and found by their stored ids).

    ``memo``: a caller's dict kept over the files of one read (see :func:`.file_columns.parquet_projection`).

    A ``.blob`` file holds one column (named ``blob_field``); Mosaic files are decoded by the
    optional paimon-mosaic through ranged reads of our storage. Unreadable files raise
    IndexCoreError; an ORC file with MAP columns is read in a child process, because a null
    map key makes pyarrow abort the whole process.
    """
    fmt = (file_format or path.rsplit(".", 1)[-1]).lower()
    if fmt not in ("parquet", "orc", "avro", "blob", "mosaic"):
        raise UnsupportedError(f"data file format {fmt!r} is not read by indexcore", file=path)
    local = storage.protocol in ("file", "local")
    size = None  # the file's bytes when the read learnt them from its own descriptor
    data = None  # a small local Parquet file's whole bytes, read in one pread
    if fmt == "parquet" and local:
        try:
            full, data, size = storage.read_small(path, WHOLE_READ_BYTES)
        except FileNotFoundError as exc:
            raise StorageError("data file not found", file=path) from exc
        except OSError as exc:
            raise StorageError(f"cannot open data file: {exc}", file=path) from exc
    else:
        full = storage.resolve(path)
    try:
        if data is not None:
            # read whole: one pread in place of Arrow's open, stat and reads of footer and chunks
            table = _read_parquet(pa.BufferReader(data), field_ids, memo)
        elif fmt == "blob":
            table = pa.table({blob_field or "blob": pa.array(read_blob_file(storage.open(path)), pa.binary())})
        elif fmt == "avro":
            table = read_avro_table(storage.read_bytes(path), path)
        elif fmt == "mosaic":
            table = read_mosaic(storage.open(path))
        elif fmt == "parquet" and local:
            # opened here, not by path: no filesystem lookup per file, and its size is the open
            # descriptor's (no second stat): a quarter of the per-file cost beside Arrow's decoding
            with pa.OSFile(full) as handle:
                size = handle.size()
                table = _read_parquet(handle, field_ids, memo)
        else:
            # an object store: one request for the whole file (cached; data files never change)
            source = full if local else pa.BufferReader(storage.read_bytes(full))
            table = _read_parquet(source, field_ids, memo) if fmt == "parquet" else _read_orc(source, path)
        table.validate(full=True)  # damage a format cannot detect still breaks Arrow's invariants (UTF-8)
    except FileNotFoundError as exc:
        raise StorageError("data file not found", file=path) from exc
    except (pa.ArrowException, OSError, ValueError) as exc:
        if isinstance(exc, OSError) and not storage.fs.exists(full):
            raise StorageError("data file not found", file=path) from exc
        raise CorruptFileError(f"cannot read {fmt} data file: {exc}", file=path, structure=fmt) from exc
    if table.num_rows and local and fmt not in ("blob", "mosaic"):
        storage.stats.add(storage.fs.size(full) if size is None else size)
    return table


def _read_parquet(source: Any, field_ids: Collection[int] | None, memo: dict | None) -> pa.Table:
    """A Parquet file's columns (:func:`read_raw`)."""
    # Paimon writes page CRCs into Parquet: verify them, so a damaged page is an error
    # ParquetFile, not read_table: one file needs no dataset (2.6x less overhead per file)
    pf = pq.ParquetFile(source, page_checksum_verification=True)
    # one small row group is read on this thread: handing it to Arrow's pool costs more
    # than it saves (130 files of 60 rows: 0.04 s CPU and wall alone, 0.06 s CPU, 0.2 s wall pooled)
    meta = pf.metadata
    small = meta.num_row_groups <= 1 and meta.serialized_size + sum(
        meta.row_group(i).total_byte_size for i in range(meta.num_row_groups)) <= SMALL_PARQUET_BYTES
    return pf.read(columns=parquet_projection(pf, field_ids, memo), use_threads=not small)


_ORC_CHILD = """
import sys, pyarrow as pa, pyarrow.orc as orc
source = sys.argv[1] if sys.argv[1] != "-" else pa.BufferReader(sys.stdin.buffer.read())
columns = sys.argv[2:] or None
table = orc.ORCFile(source).read(columns=columns)
with pa.ipc.new_stream(sys.stdout.buffer, table.schema) as out:
    out.write_table(table)
"""


def _read_orc(source: Any, path: str) -> pa.Table:
    """An ORC file; with MAP columns the native read runs in a child process that may die alone."""
    orc_file = pa_orc.ORCFile(source)
    maps = [f.name for f in orc_file.schema if _has_map(f.type)]
    if not maps:
        return orc_file.read()
    def child(columns: list[str]) -> subprocess.CompletedProcess:
        arg, data = (source, None) if isinstance(source, str) else ("-", source.read_buffer().to_pybytes())
        if not isinstance(source, str):
            source.seek(0)
        return subprocess.run([sys.executable, "-c", _ORC_CHILD, arg, *columns], input=data,
                              capture_output=True, check=False)

    done = child([])
    if done.returncode == 0:
        return pa.ipc.open_stream(done.stdout).read_all()
    bad = [m for m in maps if child([m]).returncode != 0]
    message = done.stderr.decode("utf-8", "replace").strip().splitlines()
    reason = next((line for line in reversed(message) if line.strip()), f"exit code {done.returncode}")
    raise IndexCoreError(f"the ORC reader fails on MAP column {', '.join(map(repr, bad or maps))}: {reason}",
                         file=path, structure="orc")


def _has_map(t: pa.DataType) -> bool:
    if pa.types.is_map(t):
        return True
    return any(_has_map(t.field(i).type) for i in range(t.num_fields)) if t.num_fields else False


def _deleted_positions(deletion_vector: Any) -> BitMap | None:
    if deletion_vector is None:
        return None
    positions = getattr(deletion_vector, "positions", deletion_vector)
    return positions


def _drop_positions(table: pa.Table, deleted: Any) -> pa.Table:
    if deleted is None or len(deleted) == 0 or table.num_rows == 0:
        return table
    keep = np.ones(table.num_rows, dtype=bool)
    if not hasattr(deleted, "to_array"):
        deleted = BitMap(deleted)
    # Clamp to the file's rows first (works for 32- and 64-bit roaring bitmaps alike).
    inside = deleted & type(deleted)(range(table.num_rows))
    keep[np.asarray(inside.to_array(), dtype=np.int64)] = False
    return table.filter(pa.array(keep))


def _blob_field(live_file: LiveFile) -> str | None:
    """The column a ``.blob`` file holds (its only written column)."""
    cols = live_file.file.write_cols
    return cols[0] if live_file.file.file_format == "blob" and cols else None


def read_data_file(storage: Storage, live_file: LiveFile, file_schema: TableSchema,
                   table_schema: TableSchema, columns: list[str] | None = None,
                   deletion_vector: Any = None, system_columns: bool = False,
                   memo: dict | None = None) -> pa.Table:
    """One data file's rows through ``table_schema``, with its deletion vector applied.

    ``deletion_vector``: a DeletionVector (``.positions``) or a BitMap of deleted positions.
    ``system_columns`` adds ``_SEQUENCE_NUMBER``/``_VALUE_KIND`` (primary-key files) and
    ``_POSITION`` (row position within the file). ``memo``: a dict the caller keeps over the
    files of one read (:func:`read_raw`).
    """
    ids = None if columns is None else {table_schema.field(c).id for c in columns}
    if ids is not None and system_columns:
        ids |= {SEQUENCE_NUMBER_ID, VALUE_KIND_ID}
    raw = read_raw(storage, live_file.path, live_file.file.file_format, _blob_field(live_file), ids, memo)
    if system_columns and ids is not None and not {SEQUENCE_NUMBER, VALUE_KIND} <= set(raw.column_names):
        # system columns not found by their ids: read every column, as without a projection
        raw = read_raw(storage, live_file.path, live_file.file.file_format, _blob_field(live_file), None, memo)
    table = None if memo is None else evolve_direct(raw, file_schema, table_schema, columns,
                                                     live_file.file.write_cols, memo)
    if table is None:
        table = evolve_columns(raw, file_schema, table_schema, columns, live_file.partition_spec,
                               live_file.file.write_cols, live_file.path)
    if system_columns:
        n = raw.num_rows
        for name, dtype in ((SEQUENCE_NUMBER, pa.int64()), (VALUE_KIND, pa.int8())):
            if name in raw.column_names:
                col = raw.column(name).cast(dtype)
            elif name == SEQUENCE_NUMBER:
                col = pa.array(np.full(n, live_file.file.max_sequence_number, np.int64))
            else:
                col = pa.array(np.zeros(n, np.int8))
            table = table.append_column(name, col)
        table = table.append_column(POSITION, pa.array(np.arange(n, dtype=np.int64)))
    return _drop_positions(table, _deleted_positions(deletion_vector))


def matching_positions(storage: Storage, live_file: LiveFile, file_schema: TableSchema,
                       table_schema: TableSchema, predicate: Predicate) -> BitMap:
    """Row positions of one data file (before its deletion vector) where ``predicate`` holds."""
    needed = sorted(predicate.fields())
    raw = read_raw(storage, live_file.path, live_file.file.file_format, _blob_field(live_file))
    table = evolve_columns(raw, file_schema, table_schema, needed, live_file.partition_spec,
                           live_file.file.write_cols, live_file.path)
    positions = np.flatnonzero(mask(table, predicate, table_schema)).astype(np.uint32)
    packed = array.array("I")
    if packed.itemsize != 4:
        return BitMap(positions.tolist())
    packed.frombytes(positions.tobytes())
    return BitMap(packed)
