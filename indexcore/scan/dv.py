"""The deletion-vector part of the read path (``RawFileSplitRead``): each file's deleted rows,
read where the count is not in the manifest or verify needs the positions; the rows left after them."""

from __future__ import annotations

from typing import Any

from indexcore.errors import IndexCoreError
from indexcore.scan.records import Batch
from indexcore.warehouse.model import LiveFile, Problem


def deleted_positions(table, lf: LiveFile, problems: list[Problem]) -> Any:
    """The positions the file's deletion vector deletes; None without one (or unreadable: a problem)."""
    if lf.deletion_vector is None:
        return None
    try:
        dv = table.deletion_vector(lf)
    except IndexCoreError as exc:
        problems.append(Problem(lf.dv_file_path or lf.path, "deletion vector", exc.message))
        return None
    return None if dv is None else dv.positions


class DeletionVectorStage:
    """The deletion vectors of the read path: each file's deleted count and the rows left after it
    (the file index may narrow them further). Paimon loads a file's deletion vector before it
    evaluates the file's index, which takes the deleted rows out of its selection."""

    def __init__(self, table, verify: bool):
        self.table = table
        self.verify = verify

    def decide(self, batch: Batch) -> None:
        for i, (lf, record) in enumerate(zip(batch.files, batch.records, strict=True)):
            dv_range = lf.deletion_vector
            deleted = None
            if dv_range is not None and (self.verify or dv_range.cardinality is None):
                deleted = batch.deleted[i] = deleted_positions(self.table, lf, record["problems"])
            if dv_range is not None and dv_range.cardinality is not None:
                count = dv_range.cardinality
            else:
                count = len(deleted) if deleted is not None else 0
            record["dv_cardinality"] = count
            record["rows_after_dv"] = max(lf.file.row_count - count, 0)
