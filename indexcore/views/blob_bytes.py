"""Index blobs of census rows as bytes: each container read whole once, without a live file, a
container or a reader object per blob.

The per-file views of one column (bitmap cardinalities, values, lookups) decode a blob per file of
a sample of thousands; a reader per blob parses its head through a cursor and reads it in several
requests. Here each ``.index`` file of at most
:data:`~indexcore.warehouse.table_heads.WHOLE_INDEX_BYTES` is read in one request (embedded ones
are cut from the plan's manifest bytes) and its blobs are sliced out, for parsers that work on
bytes. A row whose blob is not had so (an error, an empty index, a larger container, one that cannot
be read, a schema without the column) is None: the caller reads it through its
:class:`~indexcore.views.common.IndexBlob`'s reader (:func:`blob_of_row`), which says what is wrong.
"""

from __future__ import annotations

import itertools

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from indexcore.errors import IndexCoreError
from indexcore.formats.container import IndexEntry
from indexcore.formats.head_batch import WholeFiles, native_storage, read_wholes
from indexcore.formats.registry import RANGE_BITMAP, open_reader
from indexcore.io import BytesSource, Fetch
from indexcore.types import DataType
from indexcore.views.census import census_rows_of, read_ahead, snapshot_census, texts_in
from indexcore.views.census_blobs import CensusBlobs
from indexcore.views.common import UNPARTITIONED, IndexBlob, partition_types
from indexcore.warehouse.plan_columns import take_rows
from indexcore.warehouse.table_heads import WHOLE_INDEX_BYTES, reader_key
from indexcore.warehouse.table_manifests import gc_paused

_BATCH = 256  # ``.index`` files read in one call


def census_blob_bytes(table, census: pa.Table, snapshot_id: int | None, plan=None, keep: bool = False
                      ) -> tuple[list[bytes | None], list[DataType | None], list[str | None]]:
    """Per row of ``census`` (rows of ``$file_indexes``): its blob's bytes, its column's type in the
    file's schema and its container's name, or Nones where the blob is to be read through its reader.
    ``plan``: the :class:`~indexcore.warehouse.plan_columns.PlanColumns` holding the rows' files
    (embedded indexes are cut from its manifest bytes; by default the snapshot's, planned here).
    Blobs kept by an earlier call are not read again; ``keep``: the blobs read here are kept too, on
    the table's reader cache (weighed by their bytes), for the next view of the same blobs (the
    Bitmap page's lookup after its cardinalities)."""
    return _blob_bytes(table, census, snapshot_id, plan, keep)[:3]


def _blob_bytes(table, census: pa.Table, snapshot_id: int | None, plan, keep: bool) -> tuple:
    """:func:`census_blob_bytes` and the census columns it read, as lists (``_COLUMNS``), for a
    caller that goes on over the same rows (:func:`_summaries_of_rows`)."""
    n = census.num_rows
    out: list[bytes | None] = [None] * n
    types: list[DataType | None] = [None] * n
    names: list[str | None] = [None] * n
    if not n:
        return out, types, names, {}
    c = {name: _pylist(census[name]) for name in _COLUMNS}
    # rows with a blob to read: no error, a column, not empty (as masks: no Python test per row)
    has = pc.and_kleene(pc.and_kleene(pc.is_null(census["error"]), pc.is_valid(census["column_name"])),
                        pc.invert(pc.fill_null(census["is_empty"], False)))
    wanted = np.flatnonzero(pc.fill_null(has, False).to_numpy(zero_copy_only=False)).tolist()
    schemas: dict[tuple, DataType | None] = {}
    for i in wanted:
        key = (c["schema_id"][i], c["column_name"][i])
        if key not in schemas:
            try:  # a missing schema or column: the reader path reports it as it does
                schemas[key] = table.schema(key[0]).field(key[1]).type
            except (IndexCoreError, KeyError):
                schemas[key] = None
        types[i] = schemas[key]
    wanted = [i for i in wanted if types[i] is not None]
    kept = table.caches.readers.get(_KEPT_BLOBS) or {}
    keys = [(c["file_path"][i], c["index_file_path"][i], c["storage_type"][i] == "EMBEDDED", c["index_offset"][i],
             c["index_size_in_bytes"][i]) for i in wanted]
    read = []
    for i, key in zip(wanted, keys, strict=True):
        hit = kept.get(key)
        if hit is None:
            read.append((i, key))
        else:
            out[i], names[i] = hit
    containers = _containers(table, snapshot_id, [key[2] for _, key in read], [key[0] for _, key in read],
                             [key[1] for _, key in read], plan,
                             [key[3] + key[4] if key[3] is not None and key[4] is not None else None for _, key in read])
    fresh = {}
    for (i, key), (data, name) in zip(read, containers, strict=True):
        offset, size = key[3], key[4]
        if data is not None and offset >= 0 and offset + size <= len(data):
            out[i], names[i] = data[offset:offset + size], name
            fresh[key] = (out[i], name)
    if keep and fresh:
        _keep_blobs(table, fresh)
    return out, [t if b is not None else None for t, b in zip(types, out, strict=True)], names, c


# the census columns a blob is read by (:func:`_blob_bytes` hands them on as lists)
_COLUMNS = ("file_path", "index_file_path", "storage_type", "column_name", "index_type", "index_offset",
            "index_size_in_bytes", "is_empty", "error", "schema_id")


_KEPT_BLOBS = ("census_blob_bytes",)  # the reader cache's key of the kept blobs (a reader key is longer)
_BLOB_OVERHEAD = 160  # bytes a kept blob's entry costs beside its bytes (key tuple, dict slot, bytes header)


def _keep_blobs(table, fresh: dict) -> None:
    """Keep ``fresh`` (blob key -> (bytes, container name)) with the blobs kept before, as one entry
    of the table's reader cache weighed by their bytes (a new map: a reader of the old one is not
    disturbed; two sessions adding at once may drop the other's, which are then read again)."""
    readers = table.caches.readers
    merged = dict(readers.get(_KEPT_BLOBS) or {})
    weight = sum(len(b) + _BLOB_OVERHEAD for b, _ in merged.values())
    for key, hit in fresh.items():  # at most half the budget: the readers kept beside them stay
        if weight + len(hit[0]) + _BLOB_OVERHEAD > readers.max_weight // 2:
            break
        merged[key] = hit
        weight += len(hit[0]) + _BLOB_OVERHEAD
    readers.put(_KEPT_BLOBS, merged, max(weight, 1))


def _pylist(column: pa.ChunkedArray) -> list:
    """``column``'s values; a dictionary column's as its plain values first (Arrow's ``to_pylist`` of
    a dictionary array makes a scalar per row: 7 ms per 2,000 paths, the cast 0.3 ms)."""
    if pa.types.is_dictionary(column.type):
        column = column.cast(column.type.value_type)
    return column.to_pylist()


def _containers(table, snapshot_id: int | None, embedded: list[bool], paths: list[str],
                index_paths: list[str | None], plan, ends: list[int]) -> list[tuple[bytes | None, str]]:
    """Each blob's container, read up to the last byte its blobs need (``ends``: where each blob
    ends in it; a file's blobs share one read), and its name, or None where it is not read. Only
    the first :data:`~indexcore.warehouse.table_heads.WHOLE_INDEX_BYTES` are read at once: a blob
    ending past them is left to its reader (a file with no other blob is not read). A 316-byte bloom
    filter after a 152-byte head is the one page the census's head read left in the page cache; read
    whole, the 6 KB to 64 KB files of bloom sizing at 1M files (20,133 reads) took 2.1 s, mostly
    waiting for pages not read yet."""
    need: dict[str, int] = {}  # .index path -> bytes to read from its start
    for p, e, end in zip(index_paths, embedded, ends, strict=True):
        if not e and p:
            fits = isinstance(end, int) and end <= WHOLE_INDEX_BYTES
            need[p] = max(need.get(p, 0), end if fits else 0)
    got: dict[str, tuple[bytes | None, str]] = {p: (None, p) for p, n in need.items() if n <= 0}
    on_disk = sorted((p for p, n in need.items() if n > 0), key=need.__getitem__)
    storage = table.storage
    folders: dict[str, str | None] = {}
    native = native_storage(storage)
    resolved: dict[str, str | None] = {}  # the C reader's folders: parent -> resolved and allowed, or None

    def read_batch(lo: int) -> tuple[list[str], WholeFiles | None]:
        batch = on_disk[lo:lo + _BATCH]
        if storage.cache is not None:
            storage.prefetch([Fetch(p, 0, need[p]) for p in batch])
        # in one C call, each file to its own length (one call per length was 1,242 calls for 1,397 files at 10k)
        return batch, read_wholes(storage, batch, resolved, [need[p] for p in batch], prefix=True) if native else None

    starts = range(0, len(on_disk), _BATCH)  # local files: the next batch read on a thread (the C reads release the GIL)
    for _lo, (batch, firsts) in read_ahead(read_batch, starts) if native else ((lo, read_batch(lo)) for lo in starts):
        if firsts is not None:  # a file the C reader cannot open or read takes the Python path, which says why
            got.update(zip(batch, zip(firsts.blobs, firsts.names, strict=True), strict=True))
            batch = [batch[i] for i in firsts.faults]
        for length, same in itertools.groupby(batch, key=need.__getitem__):  # one call per length (sorted)
            same = list(same)
            for path, read in zip(same, storage.read_prefixes(same, length, served=False, folders=folders),
                                  strict=True):
                got[path] = (None, path) if isinstance(read, IndexCoreError) else (read[0], read[2])
    inline: dict[str, tuple[bytes | None, str]] = {}
    if any(embedded):  # cut from the plan's manifest bytes, the files found column-wise
        plan = table.plan_columns(snapshot_id) if plan is None else plan
        wanted = list(dict.fromkeys(p for p, e in zip(paths, embedded, strict=True) if e))
        values = _embedded_of(plan, wanted)
        for path, value in zip(wanted, values, strict=True):
            inline[path] = (bytes(value) if value is not None else None, f"{path} (embedded file index)")
    return [inline[p] if e else got[q] if q else (None, p) for p, q, e in zip(paths, index_paths, embedded, strict=True)]


def _embedded_of(plan, wanted: list[str]) -> list[bytes | None]:
    """The embedded file index of each of the ``wanted`` paths in ``plan`` (None where not planned):
    the plan's paths looked up in the few wanted (not a hash of every planned path) and the rows
    taken batch by batch (:func:`take_rows`): Arrow's take of the chunked column joined its chunks
    first, a copy of every embedded index (about 400 MB at 1,000,000 files, on each sampled page)."""
    distinct = list(dict.fromkeys(wanted))
    at = pc.fill_null(texts_in(plan.files.column("path"), pa.array(distinct, pa.string()), where=True), -1).to_numpy()
    hit = np.flatnonzero(at >= 0)[::-1]  # reversed: a path planned twice gets its first row, as index_in did
    row_of = np.full(len(distinct), -1, np.int64)
    row_of[at[hit]] = hit
    found = np.flatnonzero(row_of >= 0)
    taken = take_rows(plan.files.select(["_EMBEDDED_FILE_INDEX"]), row_of[found]).column(0).to_pylist()
    value_of = {distinct[j]: value for j, value in zip(found.tolist(), taken, strict=True)}
    return [value_of.get(p) for p in wanted]


def summaries(table, snapshot_id, index_types, progress=None, column=None,
              sample: int | None = None) -> list[tuple[IndexBlob, dict]]:
    """Each index blob of the snapshot's census rows of ``index_types`` (and ``column``) with its
    reader's ``summary()`` (:func:`blob_summary`). The readers are opened on the blobs' bytes, each
    container read whole once (:func:`census_blob_bytes`), a slice of rows at a time, and kept on the
    table where :meth:`~indexcore.warehouse.table_heads.TableIndexHeads.index_reader` finds them."""
    census = census_rows_of(snapshot_census(table, snapshot_id, progress, sample), index_types, column)
    by_path = table.live_files_by_path(snapshot_id)
    by_path.many(pc.unique(census["file_path"]).to_pylist())  # every one is summarised: one pass over the plan
    rows = CensusBlobs(table, census, by_path)
    out = []
    for lo in range(0, census.num_rows, _SLICE):
        part = census.slice(lo, _SLICE)
        data, _types, names = census_blob_bytes(table, part, snapshot_id)
        for j, (blob_bytes, name) in enumerate(zip(data, names, strict=True)):
            blob = rows.blob(lo + j)
            if blob_bytes is not None and blob.entry is not None:
                table.keep_index_reader(blob.file, blob.entry, blob.dtype, blob.options, blob_bytes, name)
            out.append((blob, blob_summary(blob)))
    return out


_SLICE = 512  # census rows whose containers :func:`summaries` reads before it summarises them


def blob_summary(blob: IndexBlob) -> dict:
    """The blob's reader's ``summary()``, or ``{"error": ...}`` or ``{"empty": True}``."""
    if blob.error is not None or blob.empty:
        return {"error": blob.error} if blob.error else {"empty": True}
    if blob.reader is None:
        return {"error": blob.reader_error}
    try:  # the per-file views show no range-bitmap top values: not decoded for them
        return blob.reader.summary(**({"top_values": False} if blob.index_type == RANGE_BITMAP.name else {}))
    except IndexCoreError as exc:
        return {"error": str(exc)}


def summaries_of_rows(table, census: pa.Table, snapshot_id: int | None, keep: bool = False) -> list[dict]:
    """:func:`blob_summary` of each row of ``census``, from a reader opened on the blob's bytes (its
    container read whole once, no live file), else through the row's
    :class:`~indexcore.views.common.IndexBlob`. ``keep``: each reader opened is kept on the table
    where :meth:`~indexcore.warehouse.table_heads.TableIndexHeads.index_reader` finds it (a page
    that then tests the same blobs: the Range page's pruning table), else not kept (a view that only
    summarises)."""
    with gc_paused():  # thousands of acyclic readers and summaries: no collector passes over them
        return _summaries_of_rows(table, census, snapshot_id, keep)


def _summaries_of_rows(table, census: pa.Table, snapshot_id: int | None, keep: bool) -> list[dict]:
    data, types, names, c = _blob_bytes(table, census, snapshot_id, None, False)
    options: dict[tuple, dict] = {}
    by_reader = None
    out = []
    kept = []  # (reader key, reader, blob bytes): kept together once all are opened
    for i, (blob, dtype, name) in enumerate(zip(data, types, names, strict=True)):
        if blob is None:
            by_reader = by_reader or blob_of_row(table, census, snapshot_id)
            out.append(blob_summary(by_reader.blob(i)))
            continue
        column, kind = c["column_name"][i], c["index_type"][i]
        key = (c["schema_id"][i], column, kind)
        if key not in options:  # as the census judges it: the file schema's options of the index
            options[key] = table.schema(key[0]).file_index_options(column, kind)
        try:
            reader = open_reader(kind, dtype, BytesSource(blob, f"{name}#{column}.{kind}", table.storage.stats),
                                 options[key])
            if keep:
                entry = IndexEntry(column, kind, c["index_offset"][i], c["index_size_in_bytes"][i])
                kept.append((reader_key(c["file_path"][i], c["index_file_path"][i],
                                        c["storage_type"][i] == "EMBEDDED", entry, dtype, options[key]),
                             reader, entry.length))
            out.append(reader.summary(**({"top_values": False} if kind == RANGE_BITMAP.name else {})))
        except IndexCoreError as exc:
            out.append({"error": str(exc)})
    if kept:
        table.keep_readers(kept)
    return out


def blob_of_row(table, census: pa.Table, snapshot_id: int | None) -> CensusBlobs:
    """The :class:`~indexcore.views.census_blobs.CensusBlobs` of ``census`` (``.blob(i)``: row ``i``'s
    :class:`~indexcore.views.common.IndexBlob`, its live file made alone), for the rows :func:`census_blob_bytes` leaves."""
    return CensusBlobs(table, census, table.live_files_by_path(snapshot_id))


def file_columns(table, census: pa.Table, rows: np.ndarray | list[int]) -> list[pa.Array]:
    """``file_name, partition, bucket, row_count`` (:data:`~indexcore.views.common.FILE_COLS`) of the
    census rows ``rows``, as the per-file views give them from live files (``file_cols``)."""
    at = pa.array(np.asarray(rows, np.int64), pa.int64())
    picked = census.select(["file_name", "partition", "bucket", "record_count"]).take(at)
    partition = (pc.cast(picked["partition"], pa.string()) if partition_types(table)
                 else pa.array([UNPARTITIONED] * len(at), pa.string()))
    return [pc.cast(picked["file_name"], pa.string()), partition, pc.cast(picked["bucket"], pa.int32()),
            pc.cast(picked["record_count"], pa.int64())]

