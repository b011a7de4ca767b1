"""Global indexes across a table: one row per index file (``$global_indexes``) and the row ids each
indexed field covers, leaves in gaps or beyond (``$global_index_coverage``).

The two views are Paimon-style tables derived from the scan, so they are registered here into
the views registry (:func:`indexcore.views.register_view`), never imported by the views.
"""

from __future__ import annotations

import pyarrow as pa

from indexcore.scan.global_index import merge_ranges, ranges_bitmap
from indexcore.types import to_json_value
from indexcore.views import register_view
from indexcore.views.common import from_rows, partition_label, partition_types
from indexcore.warehouse.global_index import global_index_files, kept_plan
from indexcore.warehouse.plan_columns import PlanColumns


def table_row_ranges(table, snapshot_id: int | None = None) -> list[tuple[int, int]]:
    """The row ids the snapshot's data files hold (inclusive ranges, merged)."""
    plan = kept_plan(table, snapshot_id)
    if isinstance(plan, PlanColumns):  # the columns, without an object per file
        firsts, counts = (plan.files.column(c).to_pylist() for c in ("_FIRST_ROW_ID", "_ROW_COUNT"))
        return merge_ranges([(f, f + n - 1) for f, n in zip(firsts, counts, strict=True) if f is not None and n])
    return merge_ranges([(lf.file.first_row_id, lf.file.first_row_id + lf.file.row_count - 1)
                         for lf in plan.files if lf.file.first_row_id is not None and lf.file.row_count])


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
