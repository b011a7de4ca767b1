"""Frames of the Deletion vectors page: deleted rows per bucket, compaction candidates, and the
deleted-row density across snapshots."""

from __future__ import annotations

import pandas as pd

from indexcore.analysis.balance import DEFAULT_COMPACTION_DENSITY, compaction_hint, dv_by_bucket
from indexcore.errors import IndexCoreError
from indexcore.frames.progress import Progress, tick
from indexcore.warehouse.history import live_dv_ranges, walk_snapshots


def dv_trend(table, max_snapshots: int = 50, progress: Progress | None = None) -> pd.DataFrame:
    """Rows, deleted rows and density of the live files for the latest ``max_snapshots`` snapshots.

    Walks the snapshots oldest first, each built from the previous one by its delta manifests
    (:func:`indexcore.warehouse.history.walk_snapshots`), so every manifest is decoded once.
    """
    ids = table.snapshot_ids()[-max_snapshots:]
    bitmap64 = table.core_options.deletion_vectors_bitmap64
    decoded: dict[tuple, int | None] = {}  # (DV file, offset) -> cardinality, for ranges without one

    def cardinality(r, path: str) -> int:
        if r.cardinality is not None:
            return r.cardinality
        key = (path, r.offset)
        if key not in decoded:
            try:
                decoded[key] = table.read_dv_range(r, path, bitmap64).cardinality
            except IndexCoreError:
                decoded[key] = None
        return decoded[key] or 0

    rows = []
    for i, state in enumerate(walk_snapshots(table, ids)):
        tick(progress, i, len(ids), f"snapshot {state.snapshot.id}")
        deleted = dv_files = 0
        for _entry, (r, path) in live_dv_ranges(table, state):
            dv_files += 1
            deleted += cardinality(r, path)
        total = state.row_count
        rows.append({"snapshot_id": state.snapshot.id, "row_count": total, "deleted": deleted,
                     "density": deleted / total if total else 0.0, "dv_files": dv_files})
    tick(progress, len(ids), len(ids), "done")
    return pd.DataFrame(rows, columns=["snapshot_id", "row_count", "deleted", "density", "dv_files"])


__all__ = ["DEFAULT_COMPACTION_DENSITY", "compaction_hint", "dv_by_bucket", "dv_trend"]
