"""Global indexes across a table: one row per index file (``$global_indexes``), the row ids each
indexed field covers, leaves in gaps or beyond (``$global_index_coverage``), per-key cardinalities
of one file, and what a condition keeps through them (:mod:`indexcore.scan.global_index` decides).

The two views are Paimon-style tables derived from the scan, so they are registered here into
the views registry (:func:`indexcore.views.register_view`), never imported by the views.
"""

from __future__ import annotations

import pandas as pd
import pyarrow as pa

from indexcore.errors import IndexCoreError
from indexcore.expr import parse_where
from indexcore.scan.global_index import global_index_scan, merge_ranges, ranges_bitmap
from indexcore.types import to_json_value
from indexcore.views import register_view
from indexcore.views.common import from_rows, partition_label, partition_types
from indexcore.warehouse.global_index import global_index_files, open_reader


def table_row_ranges(table, snapshot_id: int | None = None) -> list[tuple[int, int]]:
    """The row ids the snapshot's data files hold (inclusive ranges, merged)."""
    return merge_ranges([(lf.file.first_row_id, lf.file.first_row_id + lf.file.row_count - 1)
                   for lf in table.plan(snapshot_id).files if lf.file.first_row_id is not None and lf.file.row_count])


def global_index_rows(table, snapshot_id: int | None = None) -> list[dict]:
    """One row per global index file: kind, field, partition, row range, size, key range, metadata
    (the ``$global_indexes`` view's rows)."""
    types = partition_types(table)
    rows = []
    for gif in global_index_files(table, snapshot_id):
        d = gif.describe()
        dtype = gif.field.type if gif.field is not None else None

        def show(v, dtype=dtype):
            return None if v is None or dtype is None else str(to_json_value(dtype, v))

        lo, hi = gif.row_range or (None, None)
        rows.append({"file": d["file"], "index_type": d["index_type"], "family": d["family"],
                     "field": d["field"], "field_type": d["field_type"],
                     "partition": partition_label(gif.entry.partition, types, table.caches.labels), "bucket": d["bucket"],
                     "row_range_start": lo, "row_range_end": hi, "rows": d["row_count"],
                     "file_size": d["file_size"], "first_key": show(d.get("first_key")),
                     "last_key": show(d.get("last_key")), "has_nulls": d.get("has_nulls"),
                     "dimension": d.get("dimension"), "metric": d.get("metric"),
                     "source_files": len(d.get("source_files", [])) or None, "path": gif.path})
    return rows


def coverage_rows(table, snapshot_id: int | None = None) -> list[dict]:
    """Per indexed field and index kind, the table's row ids split into indexed segments and gaps
    (the ``$global_index_coverage`` view's rows)."""
    table_ranges = table_row_ranges(table, snapshot_id)
    by_key: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for gif in global_index_files(table, snapshot_id):
        if gif.field is not None and gif.row_range is not None:
            by_key.setdefault((gif.field.name, gif.index_type), []).append(gif.row_range)
    rows = []
    for (field_name, kind), ranges in sorted(by_key.items()):
        covered = merge_ranges(ranges)
        cover = ranges_bitmap(covered)
        for lo, hi in table_ranges:
            start = lo
            while start <= hi:
                inside = start in cover
                # the next row id whose status differs ends this run
                edge = (ranges_bitmap([(start, hi)]) - cover) if inside else (cover & ranges_bitmap([(start, hi)]))
                end = edge.min() if edge else hi + 1
                rows.append({"field": field_name, "index_type": kind, "start": start, "end": end - 1,
                             "rows": end - start, "status": "indexed" if inside else "gap"})
                start = end
        for lo, hi in covered:  # index ranges beyond the table's rows (rows since deleted or compacted)
            extra = ranges_bitmap([(lo, hi)]) - ranges_bitmap(table_ranges)
            if extra:
                rows.append({"field": field_name, "index_type": kind, "start": extra.min(), "end": extra.max(),
                             "rows": len(extra), "status": "beyond table"})
    return rows


def cardinality_frame(table, file_name: str, snapshot_id: int | None = None, limit: int | None = None):
    """Rows per key (BTree) or per value (bitmap) of one global index file, most frequent first."""
    gif = next((g for g in global_index_files(table, snapshot_id) if g.entry.index_file.file_name == file_name), None)
    if gif is None:
        raise IndexCoreError(f"no global index file {file_name!r} in this snapshot")
    reader = open_reader(table, gif)
    if reader is None:
        raise IndexCoreError(f"{gif.index_type} indexes hold no per-key rows indexcore can list")
    dtype = gif.field.type
    rows = [{"key": str(to_json_value(dtype, k)), "rows": n} for k, n in reader.cardinalities()]
    nulls = len(reader.null_rows)
    if nulls:
        rows.append({"key": "NULL", "rows": nulls})
    frame = pd.DataFrame(rows, columns=["key", "rows"]).sort_values("rows", ascending=False, kind="stable")
    frame = frame.reset_index(drop=True)
    return frame.head(limit) if limit else frame


def predicate_keep_frame(table, sql: str, snapshot_id: int | None = None):
    """Per data file, the rows a WHERE condition keeps through the global indexes; and the totals."""

    plan = table.plan(snapshot_id)
    schema = table.read_schema(snapshot_id, plan.snapshot)
    predicate = parse_where(sql, schema.row_type())
    scan = global_index_scan(table, predicate, snapshot_id)
    types = partition_types(table)
    rows = []
    for lf in plan.files:
        f = lf.file
        if f.first_row_id is None:
            continue
        kept = f.row_count if scan is None else len(scan.kept_positions(f.first_row_id, f.row_count))
        rows.append({"file": f.file_name, "partition": partition_label(lf.partition, types, table.caches.labels),
                     "first_row_id": f.first_row_id, "rows": f.row_count, "kept_rows": kept,
                     "decision": "REMAIN" if kept else "SKIP"})
    frame = pd.DataFrame(rows, columns=["file", "partition", "first_row_id", "rows", "kept_rows", "decision"])
    totals = {"files": len(frame), "files_kept": int((frame["kept_rows"] > 0).sum()) if len(frame) else 0,
              "rows": int(frame["rows"].sum()) if len(frame) else 0,
              "rows_kept": int(frame["kept_rows"].sum()) if len(frame) else 0,
              "indexes_used": [] if scan is None else sorted({g.entry.index_file.file_name for g in scan.used}),
              "problems": [] if scan is None else [p.to_dict() for p in scan.problems]}
    return frame, totals


GLOBAL_INDEXES = pa.schema([
    ("file", pa.string()), ("index_type", pa.string()), ("family", pa.string()), ("field", pa.string()),
    ("field_type", pa.string()), ("partition", pa.string()), ("bucket", pa.int32()),
    ("row_range_start", pa.int64()), ("row_range_end", pa.int64()), ("rows", pa.int64()),
    ("file_size", pa.int64()), ("first_key", pa.string()), ("last_key", pa.string()),
    ("has_nulls", pa.bool_()), ("dimension", pa.int64()), ("metric", pa.string()),
    ("source_files", pa.int64()), ("path", pa.string())])
GLOBAL_INDEX_COVERAGE = pa.schema([
    ("field", pa.string()), ("index_type", pa.string()), ("start", pa.int64()), ("end", pa.int64()),
    ("rows", pa.int64()), ("status", pa.string())])


def global_indexes(table, snapshot_id: int | None = None) -> pa.Table:
    """``$global_indexes``: one row per global index file (BTree, bitmap, vector, full-text)."""
    return from_rows(global_index_rows(table, snapshot_id), GLOBAL_INDEXES)


def global_index_coverage(table, snapshot_id: int | None = None) -> pa.Table:
    """``$global_index_coverage``: per indexed field and kind, the row ids indexed, in gaps, or beyond."""
    return from_rows(coverage_rows(table, snapshot_id), GLOBAL_INDEX_COVERAGE)


register_view("global_indexes", global_indexes)
register_view("global_index_coverage", global_index_coverage)
