"""Frames of the Table page: the table in numbers, its unreadable metadata and unusable file
indexes, its schema history, per-file column statistics, and the byte skew of its buckets or partitions.

Every frame reads through a :class:`indexcore.warehouse.Table` (read-only) and returns plain
frames, so the pages, the notebook and :mod:`indexcore.frames.figures` share one computation.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pyarrow.compute as pc

from indexcore.analysis.balance import size_skew
from indexcore.formats.registry import FILE_INDEX_TYPES
from indexcore.scan.stats import file_stats_frame
from indexcore.views import view
from indexcore.views.common import dv_cardinality, to_frame


def index_census(table, snapshot_id: int | None = None) -> tuple[set[str], pd.DataFrame]:
    """The file index kinds the snapshot's containers hold, and the ``$file_indexes`` rows that
    cannot be used (unreadable container, column missing from the file's schema, undecoded
    kind). Read from that view, which is built from container heads once per snapshot and kept
    on the table, so every page and frame asking shares one census. A corrupt blob inside a
    readable container shows on its kind's page."""
    census = view(table, "file_indexes", snapshot_id)  # read on Arrow: no frame of every row
    if census.num_rows == 0:
        return set(), to_frame(census)
    kinds = set(pc.unique(census["index_type"]).drop_null().to_pylist())
    bad = pc.is_valid(census["error"])
    unusable = to_frame(census.filter(bad))
    unusable.index = np.flatnonzero(bad.to_numpy(zero_copy_only=False))  # the rows' places in the census
    return kinds, unusable


def table_overview(table, snapshot_id: int | None = None) -> dict[str, Any]:
    """One table in numbers: files, rows, bytes, index kinds, DVs and problems.

    File indexes are counted from their container heads (:func:`index_census`).
    """
    snap = table.snapshot(snapshot_id)
    plan = table.plan(snapshot_id)
    kinds, unusable = index_census(table, snapshot_id)
    index_errors = len(unusable)
    for e in plan.index_entries:
        kinds.add(e.index_file.index_type)
    dv_files = [lf for lf in plan.files if lf.deletion_vector is not None]
    schema = table.schema()
    return {
        "table": table.name,
        "snapshot": snap.id if snap else None,
        "primary_keys": ", ".join(schema.primary_keys),
        "partition_keys": ", ".join(schema.partition_keys),
        "bucket": schema.bucket,
        "files": len(plan.files),
        "rows": sum(lf.file.row_count for lf in plan.files),
        "size_bytes": sum(lf.file.file_size for lf in plan.files),
        "index_kinds": ", ".join(sorted(kinds)),
        "files_with_file_index": sum(1 for lf in plan.files if lf.has_file_index),
        "dv_files": len(dv_files),
        "deleted_rows": sum(dv_cardinality(table, lf) or 0 for lf in dv_files),
        "problems": len(unreadable_frame(table, snapshot_id)) + index_errors,
    }


def unreadable_frame(table, snapshot_id: int | None = None) -> pd.DataFrame:
    """The manifests, index manifests and other metadata of the table and snapshot that could
    not be read (each once): the files they list are missing from every frame. No file index
    is opened, so a page that only names these pays for the plan alone."""
    rows, seen = [], set()
    for p in [*table.plan_columns(snapshot_id).problems, *table.problems]:
        key = (p.path, p.structure, p.reason)
        if key not in seen:
            seen.add(key)
            rows.append(p.to_dict())
    return pd.DataFrame(rows, columns=["path", "structure", "reason"])


def problems_frame(table, snapshot_id: int | None = None) -> pd.DataFrame:
    """:func:`unreadable_frame` plus the file indexes that cannot be used (:func:`index_census`:
    heads only, so it stays cheap at 50,000 files)."""
    rows = unreadable_frame(table, snapshot_id).to_dict("records")
    rows += [{"path": r.index_file_path or f"{r.file_path} (embedded file index)", "structure": "file index",
              "reason": r.error} for r in index_census(table, snapshot_id)[1].itertuples(index=False)]
    return pd.DataFrame(rows, columns=["path", "structure", "reason"])


def schema_history(table) -> pd.DataFrame:
    """Every field of every schema version, by field id, with what changed since the previous one."""
    rows = []
    previous: dict[int, Any] = {}
    for schema in table.schemas():
        current = {f.id: f for f in schema.fields}
        for f in schema.fields:
            old = previous.get(f.id)
            if not previous:
                change = ""
            elif old is None:
                change = "added"
            elif old.name != f.name:
                change = f"renamed from {old.name}"
            elif old.type.sql() != f.type.sql():
                change = f"type from {old.type.sql()}"
            else:
                change = ""
            rows.append({"schema_id": schema.id, "field_id": f.id, "name": f.name, "type": f.type.sql(),
                         "primary_key": f.name in schema.primary_keys,
                         "partition_key": f.name in schema.partition_keys, "change": change})
        for fid, f in previous.items():
            if fid not in current:
                rows.append({"schema_id": schema.id, "field_id": fid, "name": f.name, "type": f.type.sql(),
                             "primary_key": False, "partition_key": False, "change": "dropped"})
        previous = current
    return pd.DataFrame(rows, columns=["schema_id", "field_id", "name", "type", "primary_key",
                                       "partition_key", "change"])


__all__ = ["FILE_INDEX_TYPES", "file_stats_frame", "index_census", "problems_frame", "schema_history", "size_skew", "table_overview",
           "unreadable_frame"]
