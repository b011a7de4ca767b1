"""Frames of the Warehouse page: one overview row per table."""

from __future__ import annotations

import pandas as pd

from indexcore.errors import IndexCoreError
from indexcore.frames.progress import Progress, tick
from indexcore.frames.table import table_overview


def warehouse_overview(warehouse, progress: Progress | None = None) -> pd.DataFrame:
    """One row per table (see :func:`table_overview`); a table that cannot be opened gets an error."""
    names = warehouse.tables()
    rows = []
    for i, name in enumerate(names):
        tick(progress, i, len(names), name)
        try:
            rows.append(table_overview(warehouse.table(name)))
        except IndexCoreError as exc:
            rows.append({"table": name, "error": str(exc)})
    tick(progress, len(names), len(names), "done")
    frame = pd.DataFrame(rows)
    if "error" not in frame.columns:
        frame["error"] = None
    return frame
