"""``$health``: a table's health items (:mod:`indexcore.evaluate.health`), one row each, with the
table's score on every row; a table without findings gives one ``healthy`` row."""

from __future__ import annotations

import pyarrow as pa

from .common import from_rows

HEALTH = pa.schema([
    ("severity", pa.string()), ("kind", pa.string()), ("message", pa.string()), ("page", pa.string()),
    ("deduction", pa.int32()), ("column", pa.string()), ("index_type", pa.string()), ("files", pa.int64()),
    ("recommendation", pa.string()), ("score", pa.int32()), ("snapshot_id", pa.int64())])


def health(table, snapshot_id: int | None = None) -> pa.Table:
    """``$health``: severity, kind, message, the app page explaining it, points off the score."""
    from ..evaluate.health import INFO, PAGE_TABLE, table_health

    h = table_health(table, snapshot_id)
    rows = [{"severity": i.severity, "kind": i.kind, "message": i.message, "page": i.page,
             "deduction": i.deduction, "column": i.column, "index_type": i.index_type, "files": i.files,
             "recommendation": i.recommendation} for i in h.items]
    if not rows:
        rows = [{"severity": INFO, "kind": "healthy", "message": "no issue found", "page": PAGE_TABLE,
                 "deduction": 0}]
    return from_rows([{**r, "score": h.score, "snapshot_id": h.snapshot} for r in rows], HEALTH)
