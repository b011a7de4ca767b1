"""Live rows of a snapshot from metadata: the rows a batch read returns, not the records the files hold.

A data file's ``row_count`` counts records. What a read returns is fewer:

- deletion vectors drop rows (``$deletion_vectors``' ``deleted``, the DV cardinality);
- a primary-key table whose batch read skips level 0 (deletion vectors, or ``first-row``;
  :meth:`TableSchema.skips_level0`) reads only files above level 0, which hold each key once:
  live = their records minus their deleted rows, exactly;
- any other primary-key table merges records by key across the files of a bucket. Where keys
  cannot overlap (one file, or every file of the bucket on one level above 0: one sorted run) and
  each file records its retract count (``delete_row_count``, DELETE and UPDATE_BEFORE records),
  live = records minus retracts, exactly (Paimon's ``rawConvertible`` splits). Elsewhere only
  a merge read knows; records minus retracts is an upper bound (every live key has at least one
  insert record), reported as such.
"""

from __future__ import annotations

from dataclasses import dataclass

from indexcore.views import view


@dataclass(frozen=True)
class LiveRows:
    """Records of the live files and the rows a read returns (``live``, an upper bound unless
    ``exact``; ``merged_buckets`` buckets need a merge read for the exact count)."""

    records: int
    deleted: int  # rows dropped by deletion vectors
    live: int
    exact: bool = True
    merged_buckets: int = 0
    unread_level0: int = 0  # records in level-0 files a batch read skips (not compacted yet)

    @property
    def text(self) -> str:
        """``1,234`` when exact, ``≤ 1,234`` when an upper bound."""
        return f"{self.live:,}" if self.exact else f"≤ {self.live:,}"


def live_rows(table, snapshot_id: int | None = None) -> LiveRows:
    """The :class:`LiveRows` of ``table`` at ``snapshot_id`` (latest by default); see the module docstring."""
    plan = table.plan(snapshot_id)
    files = plan.files
    if not files:
        return LiveRows(0, 0, 0)
    schema = table.read_schema(snapshot_id, plan.snapshot)
    sid = plan.snapshot.id if plan.snapshot else None
    dvs = view(table, "deletion_vectors", sid)
    deleted_of = dict(zip(dvs["file_name"].to_pylist(), dvs["deleted"].to_pylist(), strict=True))
    records = sum(lf.file.row_count for lf in files)
    deleted = sum(deleted_of.get(lf.file.file_name) or 0 for lf in files)
    if not schema.primary_keys:
        return LiveRows(records, deleted, records - deleted)
    if schema.skips_level0:
        read = [lf for lf in files if lf.file.level > 0]
        live = sum(lf.file.row_count - (deleted_of.get(lf.file.file_name) or 0) for lf in read)
        return LiveRows(records, deleted, live, unread_level0=records - sum(lf.file.row_count for lf in read))
    buckets: dict[tuple, list] = {}
    for lf in files:
        buckets.setdefault((lf.partition, lf.bucket), []).append(lf)
    live, merged = 0, 0
    for group in buckets.values():
        retracts = [lf.file.delete_row_count for lf in group]
        levels = {lf.file.level for lf in group}
        disjoint = len(group) == 1 or (len(levels) == 1 and 0 not in levels)
        dropped = any(deleted_of.get(lf.file.file_name) for lf in group)  # DVs read on merge: merge to know
        if not disjoint or None in retracts or dropped:
            merged += 1
        live += sum(lf.file.row_count - (r or 0) for lf, r in zip(group, retracts, strict=True))
    return LiveRows(records, deleted, live, exact=merged == 0, merged_buckets=merged)
