"""Live rows of a snapshot from metadata: the rows a batch read returns, not the records the files hold.

A data file's ``row_count`` counts records. What a read returns is fewer:

- deletion vectors drop rows (``$deletion_vectors``' ``deleted``, the DV cardinality);
- a primary-key table whose batch read skips level 0 (deletion vectors, or ``first-row``;
  :meth:`TableSchema.skips_level0`) reads only files above level 0, which hold each key once:
  live = their records minus their deleted rows, exactly;
- any other primary-key table merges records by key across the files of a bucket. Where keys
  cannot overlap (one file, or every file of the bucket on one level above 0: one sorted run) and
  each file records its retract count (``delete_row_count``, DELETE and UPDATE_BEFORE records),
  live = records minus retracts, exactly (Paimon's ``rawConvertible`` splits). Elsewhere the
  buckets are merge-read (:func:`~indexcore.warehouse.data.merged_bucket_rows`, the merge of
  :func:`~indexcore.warehouse.data.read_table`), fewest files first, up to
  the ``live_rows_merge_files`` setting's data files in all; a bucket past that cap (or one that
  cannot be read) counts records minus retracts, an upper bound (every live key has at least one
  insert record), reported as such. The count is kept per snapshot (:meth:`Table.derived`).
"""

from __future__ import annotations

from dataclasses import dataclass

from indexcore.config import settings
from indexcore.views import view
from indexcore.warehouse.data import merged_bucket_rows


@dataclass(frozen=True)
class LiveRows:
    """Records of the live files and the rows a read returns (``live``, an upper bound unless
    ``exact``; ``merged_buckets`` overlapping buckets past the merge-read cap, or unreadable,
    still need a merge read for their exact count)."""

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
    plan = table.plan_columns(snapshot_id)  # on columns; objects only for the buckets merge-read
    if not plan.num_files:
        return LiveRows(0, 0, 0)
    sid = plan.snapshot.id if plan.snapshot else None
    cap = settings().live_rows_merge_files
    return table.derived(("live_rows", sid, cap), lambda: _live_rows(table, plan, sid, cap))


def _live_rows(table, plan, sid: int | None, cap: int) -> LiveRows:
    schema = table.read_schema(sid, plan.snapshot)
    dvs = view(table, "deletion_vectors", sid)
    deleted_of = dict(zip(dvs["file_name"].to_pylist(), dvs["deleted"].to_pylist(), strict=True))
    records = sum(plan.files.column("_ROW_COUNT").to_pylist())
    deleted = sum(deleted_of.get(name) or 0 for name in plan.files.column("_FILE_NAME").to_pylist())
    if not schema.primary_keys:
        return LiveRows(records, deleted, records - deleted)
    # on the plan's columns; objects only for the files of the buckets merge-read below
    levels, counts = plan.files.column("_LEVEL").to_pylist(), plan.files.column("_ROW_COUNT").to_pylist()
    names = plan.files.column("_FILE_NAME").to_pylist()
    if schema.skips_level0:
        read = [i for i, level in enumerate(levels) if level > 0]
        live = sum(counts[i] - (deleted_of.get(names[i]) or 0) for i in read)
        return LiveRows(records, deleted, live, unread_level0=records - sum(counts[i] for i in read))
    retracts = plan.files.column("_DELETE_ROW_COUNT").to_pylist()
    buckets: dict[tuple, list[int]] = {}
    for i, key in enumerate(zip(plan.partition_values(), plan.files.column("_BUCKET").to_pylist(), strict=True)):
        buckets.setdefault(key, []).append(i)
    live = 0
    overlapping = []
    for group in buckets.values():
        disjoint = len(group) == 1 or (len({levels[i] for i in group}) == 1 and levels[group[0]] != 0)
        dropped = any(deleted_of.get(names[i]) for i in group)  # DVs read on merge: merge to know
        if not disjoint or any(retracts[i] is None for i in group) or dropped:
            overlapping.append(group)
        else:
            live += sum(counts[i] - (retracts[i] or 0) for i in group)
    unmerged, budget, problems = 0, cap, []
    paths = plan.files.column("path").to_pylist() if overlapping else []
    by_path = table.live_files_by_path(sid) if overlapping else None
    memo: dict = {}  # one over every bucket read: their files share the table's few file schemas
    for group in sorted(overlapping, key=len):  # fewest files first: the most buckets made exact
        rows = None
        if len(group) <= budget:
            rows = merged_bucket_rows(table, schema, by_path.many([paths[i] for i in group]), problems, memo)
        if rows is not None:
            budget -= len(group)
        else:
            unmerged += 1
            rows = sum(counts[i] - (retracts[i] or 0) for i in group)
        live += rows
    return LiveRows(records, deleted, live, exact=unmerged == 0, merged_buckets=unmerged)
