"""Our own index views (no Paimon counterpart): bitmap cardinalities, bloom fill, DV density,
hash-index balance. Same calling convention and explicit Arrow schemas as :mod:`.system`;
every per-file view starts with ``file_name, partition, bucket, row_count``.
"""

from __future__ import annotations

import contextlib
import math

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from indexcore.errors import IndexCoreError
from indexcore.formats.bitmap.keys import KeyCodec
from indexcore.formats.bitmap.summary import view_counts
from indexcore.formats.bloom import DEFAULT_FPP, DEFAULT_ITEMS, items_for_fpp
from indexcore.formats.registry import BITMAP, BLOOM_FILTER
from indexcore.types import json_as_is, to_json_value
from indexcore.views.blob_bytes import (
    blob_of_row,
    blob_summary,
    census_blob_bytes,
    file_columns,
    summaries_of_rows,
)
from indexcore.views.census import census_rows_of, snapshot_census
from indexcore.views.common import (
    FILE_COLS,
    UNPARTITIONED,
    Progress,
    dv_cardinality,
    from_rows,
    partition_label,
    partition_types,
    plan_partition_labels,
)
from indexcore.warehouse.table_manifests import gc_paused

BITMAP_INDEXES = pa.schema([
    *FILE_COLS, ("column", pa.string()), ("size", pa.int64()), ("version", pa.int32()),
    ("dictionary_size", pa.int64()), ("null_count", pa.int64()), ("single_row_values", pa.int64()),
    ("head_bytes", pa.int64()), ("index_block_bytes", pa.int64()), ("bitmap_bytes", pa.int64()),
    ("block_count", pa.int64()), ("lookup_bytes_most_frequent", pa.int64()), ("error", pa.string())])
_BITMAP_KEYS = ("version", "dictionary_size", "null_count", "single_row_values", "head_bytes",
                "index_block_bytes", "bitmap_bytes", "block_count", "lookup_bytes_most_frequent")


def bitmap_indexes(table, snapshot_id: int | None = None, progress: Progress | None = None,
                   sample: int | None = None) -> pa.Table:
    """``$bitmap_indexes``: per bitmap index, version, dictionary size, nulls, layout bytes and the
    bytes a point lookup of the most frequent value reads (V1 the whole head, V2 one block).
    ``sample``: decode only that many files (:mod:`indexcore.warehouse.file_sample`)."""
    return _bitmap_pass(table, snapshot_id, progress, sample)[0]


BITMAP_VALUES = pa.schema([*FILE_COLS, ("column", pa.string()), ("value", pa.string()),
                           ("cardinality", pa.int64())])


def bitmap_values(table, snapshot_id: int | None = None, column: str | None = None,
                  progress: Progress | None = None, sample: int | None = None) -> pa.Table:
    """``$bitmap_values``: value cardinalities of the bitmap indexes, one row per (file, column,
    value); ``NULL`` counts the null rows. ``sample``: decode only that many files."""
    values = _bitmap_pass(table, snapshot_id, progress, sample)[1]
    return values if column is None else values.filter(pc.equal(values["column"], column))


def _bitmap_pass(table, snapshot_id: int | None, progress: Progress | None,
                 sample: int | None) -> tuple[pa.Table, pa.Table]:
    """``($bitmap_indexes, $bitmap_values)`` of every bitmap column, from one decoding of each blob
    (kept on the table: a page shows both). Counted on each blob's bytes
    (:func:`~indexcore.formats.bitmap.summary.view_counts`); a blob that parser leaves is read by
    its reader, which names what is wrong with it."""
    snap = table.snapshot(snapshot_id)
    if snap is None:
        return BITMAP_INDEXES.empty_table(), BITMAP_VALUES.empty_table()
    return table.derived(("bitmap_pass", snap.id, sample), lambda: _bitmap_decoded(table, snap.id, progress, sample),
                         weight=lambda got: got[0].num_rows + got[1].num_rows)


def _bitmap_decoded(table, snapshot_id: int, progress: Progress | None, sample: int | None) -> tuple[pa.Table, pa.Table]:
    with gc_paused():  # thousands of acyclic counts and values: no collector passes over them
        return _bitmap_decode(table, snapshot_id, progress, sample)


def _bitmap_decode(table, snapshot_id: int, progress: Progress | None, sample: int | None) -> tuple[pa.Table, pa.Table]:
    census = census_rows_of(snapshot_census(table, snapshot_id, progress, sample), [BITMAP.name])
    n = census.num_rows
    cells: dict[str, list] = {k: [None] * n for k in ("error", *_BITMAP_KEYS)}
    at, values, cards = [], [], []
    blobs, types, _names = census_blob_bytes(table, census, snapshot_id, keep=True)  # the lookup reads them next
    codecs: dict = {}
    by_reader = None
    for i, (data, dtype) in enumerate(zip(blobs, types, strict=True)):
        counts = None
        if data is not None:
            codec = codecs.get(dtype)
            if codec is None:
                try:
                    codec = codecs[dtype] = KeyCodec(dtype)
                except IndexCoreError:
                    codec = codecs[dtype] = False
            counts = view_counts(data, codec) if codec else None
        if counts is not None:
            s, keys, counted, nulls = counts
        else:  # read by the blob's reader, as before the bytes were parsed
            by_reader = by_reader or blob_of_row(table, census, snapshot_id)
            blob = by_reader.blob(i)
            s, keys, counted, nulls, dtype = blob_summary(blob), [], [], 0, blob.dtype
            if blob.reader is not None and not blob.empty:
                with contextlib.suppress(IndexCoreError):
                    dictionary, nulls = list(blob.reader.dictionary()), len(blob.reader.null_bitmap())
                    keys, counted = [value for value, _ in dictionary], [card for _, card in dictionary]
        cells["error"][i] = s.get("error")
        if "version" in s:
            for k in _BITMAP_KEYS:
                cells[k][i] = s.get(k)
        at.extend([i] * (len(keys) + (nulls > 0)))
        if keys and json_as_is(dtype):  # no dictionary: no type either, for a blob its reader refused
            values.extend(map(str, keys))
        else:
            values.extend(str(to_json_value(dtype, value)) for value in keys)
        cards.extend(counted)
        if nulls:
            values.append("NULL")
            cards.append(nulls)
    column = pc.cast(census["column_name"], pa.string())
    sizes = pc.if_else(pc.is_null(census["column_name"]), 0, census["index_size_in_bytes"])
    indexes = pa.Table.from_arrays(
        [*file_columns(table, census, np.arange(n)), column, sizes,
         *(pa.array(cells[f.name], f.type) for f in BITMAP_INDEXES if f.name in cells)], schema=BITMAP_INDEXES)
    rows = np.asarray(at, np.int64)
    value_rows = pa.Table.from_arrays(
        [*file_columns(table, census, rows), column.take(pa.array(rows)), pa.array(values, pa.string()),
         pa.array(cards, pa.int64())], schema=BITMAP_VALUES)
    return indexes, value_rows


BLOOM_FILTERS = pa.schema([
    *FILE_COLS, ("column", pa.string()), ("size", pa.int64()), ("num_bits", pa.int64()), ("bits_set", pa.int64()),
    ("fill_ratio", pa.float64()), ("num_hash_functions", pa.int32()), ("estimated_items", pa.float64()),
    ("saturated", pa.bool_()), ("configured_items", pa.int64()), ("estimated_fpp", pa.float64()),
    ("configured_fpp", pa.float64()), ("recommended_items", pa.int64()), ("recommended_bytes", pa.int64()),
    ("target_fpp", pa.float64()), ("error", pa.string())])


def bloom_filters(table, snapshot_id: int | None = None, target_fpp: float | None = None,
                  progress: Progress | None = None, sample: int | None = None) -> pa.Table:
    """``$bloom_filters``: per bloom filter, fill, estimated distinct items and FPP against the
    configured ``items`` / ``fpp``, and the ``items`` that would meet ``target_fpp`` (default:
    the configured fpp) for this filter alone. The per-column verdict and the one ``items`` to
    configure are :func:`indexcore.analysis.bloom_sizing.column_sizing`'s. ``sample``: decode only
    that many files."""
    census = census_rows_of(snapshot_census(table, snapshot_id, progress, sample), [BLOOM_FILTER.name])
    row_counts = census["record_count"].to_pylist()
    rows = []
    for i, s in enumerate(summaries_of_rows(table, census, snapshot_id)):
        row = {"error": s.get("error")}
        if "num_bits" in s:  # the reader was opened with the file's options; Paimon's defaults otherwise
            items = s.get("configured_items", DEFAULT_ITEMS)
            fpp = s.get("configured_fpp", DEFAULT_FPP)
            est = s["estimated_items"]
            want = target_fpp if target_fpp is not None else fpp
            need = items_for_fpp(est if math.isfinite(est) else row_counts[i], want)
            row.update({
                "num_bits": s["num_bits"], "bits_set": s["bits_set"], "fill_ratio": s["fill_ratio"],
                "num_hash_functions": s["num_hash_functions"],
                "estimated_items": est if math.isfinite(est) else None, "saturated": not math.isfinite(est),
                "configured_items": items, "estimated_fpp": s["estimated_fpp"], "configured_fpp": fpp,
                "recommended_items": need["items"], "recommended_bytes": need["bytes"], "target_fpp": want})
        rows.append(row)
    own = pa.schema([f for f in BLOOM_FILTERS if f.name not in ("file_name", "partition", "bucket", "row_count",
                                                                   "column", "size")])
    cells = from_rows(rows, own)
    sizes = pc.if_else(pc.is_null(census["column_name"]), 0, census["index_size_in_bytes"])
    columns = {"column": pc.cast(census["column_name"], pa.string()), "size": sizes,
               **dict(zip(("file_name", "partition", "bucket", "row_count"),
                          file_columns(table, census, np.arange(census.num_rows)), strict=True))}
    return pa.Table.from_arrays([columns[f.name] if f.name in columns else cells[f.name] for f in BLOOM_FILTERS],
                                schema=BLOOM_FILTERS)


DELETION_VECTORS = pa.schema([
    *FILE_COLS, ("level", pa.int32()), ("deleted", pa.int64()), ("has_dv", pa.bool_()),
    ("density", pa.float64()), ("dv_file", pa.string())])


def deletion_vectors(table, snapshot_id: int | None = None, plan=None) -> pa.Table:
    """``$deletion_vectors``: per live file, rows, deleted rows (DV cardinality) and density.

    From the columnar plan (:meth:`~indexcore.warehouse.Table.plan_columns`, or ``plan``: some of
    its files, as a Spark task plans them): only files whose index manifest leaves the
    cardinality out become objects, to decode their DV."""
    plan = table.plan_columns(snapshot_id) if plan is None else plan
    live = plan.files
    types = partition_types(table)
    has_dv = pc.is_valid(live.column("dv_offset")).combine_chunks()
    known = live.column("dv_cardinality").combine_chunks()
    missing = np.flatnonzero(pc.and_(has_dv, pc.is_null(known)).to_numpy(zero_copy_only=False))
    deleted = pc.fill_null(known, 0)
    if len(missing):
        files = plan.live_files(table, missing.tolist())
        table.prefetch(files, index=False)
        values = deleted.to_pylist()
        for i, lf in zip(missing.tolist(), files, strict=True):
            values[i] = dv_cardinality(table, lf) or 0
        deleted = pa.array(values, pa.int64())
    rows = live.column("_ROW_COUNT").combine_chunks()
    density = pc.if_else(pc.greater(rows, 0), pc.divide(pc.cast(deleted, pa.float64()), pc.cast(rows, pa.float64())),
                         0.0)
    n = live.num_rows
    return pa.Table.from_pydict({
        "file_name": live.column("_FILE_NAME"),
        "partition": plan_partition_labels(plan, live, types, table.caches.labels) if types
        else pa.array([UNPARTITIONED] * n, pa.string()),
        "bucket": live.column("_BUCKET"), "row_count": live.column("_ROW_COUNT"),
        "level": live.column("_LEVEL"), "deleted": deleted, "has_dv": has_dv, "density": density,
        "dv_file": pc.if_else(has_dv, live.column("dv_file_path").combine_chunks(), pa.scalar(None, pa.string()))},
        schema=DELETION_VECTORS)


HASH_BUCKETS = pa.schema([
    ("partition", pa.string()), ("bucket", pa.int32()), ("keys", pa.int64()), ("distinct", pa.int64()),
    ("recorded_rows", pa.int64()), ("index_files", pa.int64()), ("target", pa.int64()), ("fill", pa.float64()),
    ("error", pa.string())])


def target_row_num(table) -> int:
    """``dynamic-bucket.target-row-num`` (Paimon's default 2,000,000)."""
    return table.core_options.dynamic_bucket_target_row_num


def hash_buckets(table, snapshot_id: int | None = None) -> pa.Table:
    """``$hash_buckets``: keys per (partition, bucket) decoded from the HASH index files against
    ``dynamic-bucket.target-row-num`` (``fill`` = keys / target)."""
    types = partition_types(table)
    target = target_row_num(table)
    rows = []
    for (partition, bucket), entries in table.plan_columns(snapshot_id).hash_indexes.items():
        keys, distinct, recorded, errors = 0, 0, 0, []
        for entry in entries:
            recorded += entry.index_file.row_count
            try:
                s = table.hash_index(entry).summary()
            except IndexCoreError as exc:
                errors.append(str(exc))
                continue
            keys += s["count"]
            distinct += s["distinct"]
        rows.append({"partition": partition_label(partition, types, table.caches.labels), "bucket": bucket, "keys": keys,
                     "distinct": distinct, "recorded_rows": recorded, "index_files": len(entries),
                     "target": target, "fill": keys / target if target else None,
                     "error": "; ".join(errors) or None})
    rows.sort(key=lambda r: (r["partition"], r["bucket"]))
    return from_rows(rows, HASH_BUCKETS)
