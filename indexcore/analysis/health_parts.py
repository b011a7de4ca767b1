"""Table health in parts: what each Spark task measures of its files, and the merge on the driver.

:func:`~indexcore.analysis.health.table_health` reads the whole columnar plan and census in one
process. On Spark (:mod:`indexcore.spark.jobs.metadata`) every second-stage task holds the live
files of some (partition, bucket) groups (each live file in exactly one task), their
:class:`~indexcore.warehouse.plan_columns.PlanColumns` and census; :func:`health_part` reduces
them to a :class:`HealthPart` of sums, counts, per-bucket sums and the few rows a page lists,
and :func:`merged_health` adds the parts up on the driver into the same
:class:`~indexcore.analysis.health.TableHealth`, with no data file planned there:

- file, byte and row totals, index bytes (:func:`.index_bytes.census_index_bytes`), deleted rows:
  sums;
- small files: counted per (partition values, bucket) and summed by those values, so a partition
  written with two encodings of its values (in two tasks) is still one bucket;
- the worst bucket: rows and deleted rows per (partition label, bucket) summed, then the same
  :func:`~indexcore.analysis.balance.dv_by_bucket` frame and tie-breaking as in one process;
- unusable files: each task's census rows with an error and its lost DV files, with their places
  in the plan's manifest order, put back in that order;
- coverage: per (column, index type) the counts of :func:`.advise_existing.existing_indexes` over
  the task's files, and the first wrong-column reason by plan order;
- bloom sizing: :func:`.bloom_sizing.bloom_tally` per column, merged before the verdict;
- live rows (:mod:`.live_rows`): sums, and for merge-read primary-key buckets each task reads
  its buckets fewest files first within the cap; the driver applies the cap over all buckets in
  the same order (a bucket the whole-table rule reads is one its task read: the task's own
  budget before it is never smaller; a task reads its buckets with one
  :class:`~indexcore.warehouse.data.BucketCounter`, merged together and counted per bucket). A
  bucket found in two tasks (its partition values written with two encodings) falls back to
  :func:`.live_rows.live_rows` on the driver, which plans.

The index manifest's files (index bytes, :func:`.health.unusable_index_files`) come from the plan
head the driver reads anyway; a global index listed there is still checked on the driver
(:func:`~indexcore.warehouse.global_index.global_index_files` plans the snapshot's objects).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from indexcore.analysis.advise_existing import existing_indexes, inventory_order
from indexcore.analysis.balance import dv_by_bucket
from indexcore.analysis.bloom_sizing import census_tallies, merge_tallies, sizing_of
from indexcore.analysis.health import (
    Coverage,
    TableHealth,
    lacking_files,
    lost_deletion_vectors,
    scored,
    unusable_files,
    unusable_index_files,
    worst_bucket,
)
from indexcore.analysis.index_bytes import add_index_bytes, census_index_bytes, index_bytes_from
from indexcore.analysis.live_rows import live_rows
from indexcore.formats.registry import FILE_INDEX_TYPES
from indexcore.views.census import unusable_rows
from indexcore.views.common import to_frame
from indexcore.views.indexes import deletion_vectors
from indexcore.warehouse.data import BucketCounter

_UNREAD = -1  # an overlapping bucket its task did not merge-read (past its own budget)


@dataclass(frozen=True)
class HealthPart:
    """One task's share of a table's health (plain data: it travels as JSON)."""

    files: int = 0
    data_bytes: int = 0
    rows: int = 0
    index_bytes: dict = field(default_factory=dict)  # (kind, storage) -> [files, bytes]
    small: dict = field(default_factory=dict)  # (partition values, bucket) -> small files
    deleted: int = 0
    buckets: list = field(default_factory=list)  # [partition label, bucket, row_count, deleted]
    census_unusable: list = field(default_factory=list)  # [place, file_name, index_type, column_name, error]
    lost_dvs: list = field(default_factory=list)  # [place, file_name, dv_file]
    coverage: dict = field(default_factory=dict)  # (column, kind) -> [configured, lacking, carrying, wrong, why, place]
    blooms: dict = field(default_factory=dict)  # column -> bloom_tally, its per-file lists as value counts
    live: dict = field(default_factory=dict)  # see _live_part


def health_part(table, plan, census: pa.Table, schema, places: np.ndarray, small_limit: int,
                live_cap: int) -> HealthPart:
    """The health measures of ``plan``'s files (``census``: their ``$file_indexes`` rows; ``places``:
    each file's place in the snapshot's plan order; ``small_limit``: the small-file threshold;
    ``live_cap``: the ``live_rows_merge_files`` setting)."""
    files = plan.num_files
    if not files:
        return HealthPart(live={"records": 0, "deleted": 0, "live": 0, "unread": 0, "buckets": [], "keys": []})
    live = plan.files
    sid = plan.snapshot.id if plan.snapshot else None
    places = np.asarray(places, np.int64)
    row_of = {p: i for i, p in enumerate(live.column("path").to_pylist())}
    small: dict = {}
    is_small = pc.fill_null(pc.less(live.column("_FILE_SIZE"), small_limit), False).to_numpy(zero_copy_only=False)
    values = [p[0] for p in plan.partitions]
    for pid, bucket in zip(live.column("partition_id").to_numpy()[is_small].tolist(),
                           live.column("_BUCKET").to_numpy()[is_small].tolist(), strict=True):
        key = (values[pid], int(bucket))
        small[key] = small.get(key, 0) + 1
    dvs = deletion_vectors(table, sid, plan=plan).to_pandas()
    sums = dvs.groupby(["partition", "bucket"], as_index=False).agg(row_count=("row_count", "sum"),
                                                                    deleted=("deleted", "sum"))
    lost = lost_deletion_vectors(table, dvs)
    frame = to_frame(unusable_rows(census))  # dictionary texts as text (None, not a category NaN)
    broken = set(frame.loc[frame["error"].notna() & frame["column_name"].isna(), "file_path"])
    return HealthPart(
        files=files, data_bytes=int(pc.sum(live.column("_FILE_SIZE")).as_py() or 0),
        rows=int(pc.sum(live.column("_ROW_COUNT")).as_py() or 0), index_bytes=census_index_bytes(census),
        small=small, deleted=int(dvs["deleted"].sum()),
        buckets=[[p, int(b), int(r), int(d)] for p, b, r, d in sums.itertuples(index=False, name=None)],
        census_unusable=[[int(places[row_of[r.file_path]]), r.file_name, r.index_type, r.column_name, r.error]
                         for r in frame.itertuples(index=False)],
        lost_dvs=[[int(places[i]), n, f] for i, n, f in zip(lost.index.tolist(), lost["file_name"].tolist(),
                                                            lost["dv_file"].tolist(), strict=True)],
        coverage=_coverage_part(table, sid, schema, plan, census, broken, places, row_of),
        blooms={c: _counted(t) for c, t in census_tallies(table, census, plan.by_path(table)).items()},
        live=_live_part(table, plan, schema, dvs, places, live_cap))


_PER_FILE = ("rows", "ndv", "over_rows")  # a tally's per-file lists: files share a few values


def _counted(tally: dict) -> dict:
    """``tally`` with its per-file lists as [value, files] pairs (a few per column, not one per file)."""
    return {**tally, **{k: [[v, n] for v, n in sorted(Counter(tally[k]).items())] for k in _PER_FILE}}


def _listed(tally: dict) -> dict:
    """A :func:`_counted` tally with its per-file lists back (the verdict sorts them; order is free)."""
    return {**tally, **{k: [v for v, n in tally[k] for _ in range(n)] for k in _PER_FILE}}


def _coverage_part(table, sid, schema, plan, census, broken: set, places, row_of) -> dict:
    """Per (column, file index kind): configured, lacking (not unreadable), carrying, on the wrong
    column, and the first wrong-column reason with its file's place."""
    out = {}
    for g in existing_indexes(table, sid, schema, plan, [], census=census):
        if g.index_type not in FILE_INDEX_TYPES:
            continue
        first = g.wrong_column[0] if g.wrong_column else None
        out[(g.column, g.index_type)] = [
            g.configured, lacking_files(g.missing, broken) if g.configured else 0, len(g.blobs), len(g.wrong_column),
            first["reason"] if first else None, int(places[row_of[first["path"]]]) if first else None]
    return out


def _live_part(table, plan, schema, dvs: pd.DataFrame, places, cap: int) -> dict:
    """:func:`.live_rows.live_rows`' sums over ``plan``'s files; for a primary-key table that merges
    by key, each overlapping bucket as [first file's place, files, merged rows (None: unreadable,
    -1: not read here), records minus retracts] and every bucket's (partition values, bucket)."""
    deleted_of = dict(zip(dvs["file_name"].tolist(), dvs["deleted"].tolist(), strict=True))
    names = plan.files.column("_FILE_NAME").to_pylist()
    records = sum(plan.files.column("_ROW_COUNT").to_pylist())
    deleted = sum(deleted_of.get(name) or 0 for name in names)
    out = {"records": records, "deleted": deleted, "live": records - deleted, "unread": 0, "buckets": [],
           "keys": []}
    if not schema.primary_keys:
        return out
    files = plan.live_files(table)
    if schema.skips_level0:
        read = [lf for lf in files if lf.file.level > 0]
        out["live"] = sum(lf.file.row_count - (deleted_of.get(lf.file.file_name) or 0) for lf in read)
        out["unread"] = records - sum(lf.file.row_count for lf in read)
        return out
    buckets: dict[tuple, list] = {}
    for i, lf in enumerate(files):
        buckets.setdefault((lf.partition, lf.bucket), []).append((i, lf))
    out["keys"] = list(buckets)
    live, overlapping = 0, []
    for group in buckets.values():
        retracts = [lf.file.delete_row_count for _i, lf in group]
        levels = {lf.file.level for _i, lf in group}
        disjoint = len(group) == 1 or (len(levels) == 1 and 0 not in levels)
        dropped = any(deleted_of.get(lf.file.file_name) for _i, lf in group)
        if not disjoint or None in retracts or dropped:
            overlapping.append(group)
        else:
            live += sum(lf.file.row_count - (r or 0) for (_i, lf), r in zip(group, retracts, strict=True))
    out["live"] = live
    budget = cap
    counter = BucketCounter(table, schema, [])  # the buckets read merged together, counted per bucket
    read: list[list] = []  # the rows of out["buckets"] whose bucket the counter read, in its order
    for group in sorted(overlapping, key=len):  # as live_rows reads them: fewest files first
        lfs = [lf for _i, lf in group]
        row = [int(places[group[0][0]]), len(lfs), _UNREAD,
               sum(lf.file.row_count - (lf.file.delete_row_count or 0) for lf in lfs)]
        if len(lfs) <= budget:
            row[2] = None  # unreadable, unless the counter reads it
            if counter.add(lfs):
                budget -= len(lfs)
                read.append(row)
        out["buckets"].append(row)
    for row, rows in zip(read, counter.bucket_rows(), strict=True):
        row[2] = rows
    return out


def _merged_live(table, sid, schema, parts: list[HealthPart], cap: int) -> tuple[int, bool, int]:
    """(live rows, exact, unread level-0 records) of the parts, as :func:`.live_rows.live_rows` counts them."""
    keys = [k for p in parts for k in p.live["keys"]]
    if len(keys) != len(set(keys)):  # a bucket in two tasks: only a whole-table merge counts it
        whole = live_rows(table, sid)
        return whole.live, whole.exact, whole.unread_level0
    live = sum(p.live["live"] for p in parts)
    unread = sum(p.live["unread"] for p in parts)
    budget, unmerged = cap, 0
    for _place, n, rows, bound in sorted((b for p in parts for b in p.live["buckets"]), key=lambda b: (b[1], b[0])):
        if n <= budget and rows is not None and rows != _UNREAD:
            budget -= n
            live += rows
        else:
            unmerged += 1
            live += bound
    return live, unmerged == 0, unread


def merged_health(table, head, schema, parts: list[HealthPart], problems: list, live_cap: int) -> TableHealth:
    """The :class:`TableHealth` of the snapshot whose plan head is ``head`` from its tasks' ``parts``
    (``problems``: the plan's, as the job gathered them)."""
    sid = head.snapshot.id if head.snapshot else None
    files = sum(p.files for p in parts)
    data_bytes = sum(p.data_bytes for p in parts)
    rows = sum(p.rows for p in parts)
    index_bytes = index_bytes_from(add_index_bytes(p.index_bytes for p in parts), head.index_entries, data_bytes)
    limit = schema.core_options.small_file_threshold(bool(schema.primary_keys))
    target = schema.core_options.target_file_size_for(bool(schema.primary_keys))
    small: dict = {}
    for p in parts:
        for key, n in p.small.items():
            small[key] = small.get(key, 0) + n
    small_files, mergeable = sum(small.values()), sum(n for n in small.values() if n > 1)

    deleted = sum(p.deleted for p in parts)
    worst, worst_density = None, 0.0
    if deleted:
        sums = pd.DataFrame([b for p in parts for b in p.buckets], columns=["partition", "bucket", "row_count",
                                                                            "deleted"])
        worst, worst_density = worst_bucket(dv_by_bucket(sums.assign(file_name="", has_dv=True)))
    census_rows = sorted((r for p in parts for r in p.census_unusable), key=lambda r: r[0])
    frame = pd.DataFrame([r[1:] for r in census_rows], columns=["file_name", "index_type", "column_name", "error"])
    lost_rows = sorted((r for p in parts for r in p.lost_dvs), key=lambda r: r[0])
    lost = pd.DataFrame([r[1:] for r in lost_rows], columns=["file_name", "dv_file"]) if lost_rows else None
    unusable = pd.concat([unusable_files(frame, None, lost), unusable_index_files(table, sid, plan=head)],
                         ignore_index=True)
    blooms = []
    for column in sorted({c for p in parts for c in p.blooms}):
        sizing = sizing_of(column, merge_tallies(_listed(p.blooms[column]) for p in parts if column in p.blooms))
        if sizing is not None:
            blooms.append(sizing)
    found = [*problems, *table.problems]
    live, exact, _unread = _merged_live(table, sid, schema, parts, live_cap)
    h = TableHealth(
        table=table.name, snapshot=sid, files=files, rows=rows, live_rows=live, live_rows_exact=exact,
        data_bytes=data_bytes, index_bytes=tuple(index_bytes), small_files=small_files,
        small_file_threshold=limit, deleted_rows=deleted, dv_density=deleted / rows if rows else 0.0,
        worst_bucket=worst, worst_bucket_density=worst_density,
        coverage=tuple(_merged_coverage(schema, parts, files)) if files else (), blooms=tuple(blooms),
        unusable=tuple(unusable.itertuples(index=False, name=None)),
        problems=len({(p.path, p.structure, p.reason) for p in found}))
    return scored(h, mergeable, target, found)


def _merged_coverage(schema, parts: list[HealthPart], files: int) -> list[Coverage]:
    """The parts' coverage counts summed per (column, kind), in the inventory's order."""
    acc: dict[tuple, list] = {}
    for p in parts:
        for key, (configured, lacking, carrying, wrong, why, place) in p.coverage.items():
            a = acc.setdefault(key, [False, 0, 0, 0, None, None])
            a[0] = a[0] or configured
            a[1] += lacking
            a[2] += carrying
            a[3] += wrong
            if why is not None and (a[5] is None or place < a[5]):
                a[4], a[5] = why, place
    order = inventory_order(schema)
    return [Coverage(column, kind, files, lacking, configured, carrying, wrong, why)
            for (column, kind), (configured, lacking, carrying, wrong, why, _place)
            in sorted(acc.items(), key=lambda kv: order(*kv[0])) if configured or carrying]
