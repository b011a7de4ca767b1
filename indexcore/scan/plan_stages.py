"""Explain on the columnar plan: the stages before the file index decided on the plan's columns.

:func:`decide_on_plan` decides partition, bucket, level and value statistics for every planned
file from :class:`~indexcore.warehouse.plan_columns.PlanColumns` (partitions once per distinct
partition, buckets once per bucket, statistics read from each file's stats bytes, only the
predicate's columns decoded), and makes a :class:`~indexcore.warehouse.model.LiveFile` only for
the files those stages keep (or whose deletion vector must be read for its count): those go
through :class:`~indexcore.scan.explainer.Explainer`'s stages as before. A file pruned early gets
the record the stages would have given it. At 10,000 files, where the stats stage prunes 94%,
this spares the 9,104 live files explain made before deciding (issue 30 item 5).

It applies where the records are the same by construction; else it returns None and the caller
explains the objects: append tables (a primary-key table's value filter decides whole buckets
across files), local storage (a store's prefetch reads every file's index head, which explain's
I/O counts), no row ids (the global index stage), no verify and no ``all_files``, and every data
file's schema readable.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from indexcore.errors import IndexCoreError
from indexcore.expr.rows import rows_matching
from indexcore.scan.records import Decision, StatsCells
from indexcore.scan.stats import stats_map, test_predicate_on_stats
from indexcore.views.common import partition_text_cached
from indexcore.warehouse.manifest import file_stats
from indexcore.warehouse.model import TableSchema
from indexcore.warehouse.plan_columns import PlanColumns

Progress = Callable[[int, int, str], None]
_REMAIN, _SKIP = Decision.REMAIN, Decision.SKIP


def plan_applies(table, schema: TableSchema, plan: PlanColumns) -> dict[Any, TableSchema] | None:
    """The schema of each ``_SCHEMA_ID`` of the plan when :func:`decide_on_plan` gives the records
    the object stages give (see the module), else None."""
    if schema.primary_keys or table.storage.cache is not None:
        return None
    files = plan.files
    if files.column("_FIRST_ROW_ID").null_count != files.num_rows:
        return None
    schemas: dict[Any, TableSchema] = {}
    for sid in pc.unique(files.column("_SCHEMA_ID")).to_pylist():
        try:
            schemas[sid] = table.schema() if sid is None else table.schema(sid)
        except IndexCoreError:  # the object path names the file whose schema is missing
            return None
    return schemas


def selected_rows(plan: PlanColumns, wanted: dict | None, bucket: int | None,
                  paths: Sequence[str] | None) -> np.ndarray:
    """The plan rows explain's ``partition`` / ``bucket`` / ``paths`` keep, in plan order."""
    keep = np.ones(plan.num_files, bool)
    if wanted:
        ok = np.array([all(spec.get(k) == v for k, v in wanted.items()) for _values, spec, _folder in plan.partitions],
                      bool)
        keep &= ok[plan.files.column("partition_id").to_numpy()] if len(ok) else False
    if bucket is not None:
        keep &= plan.files.column("_BUCKET").to_numpy() == int(bucket)
    if paths is not None:
        keep &= pc.is_in(plan.files.column("path"), value_set=pa.array(list(set(paths)), pa.string())).to_numpy(
            zero_copy_only=False)
    return np.flatnonzero(keep)


def file_order_rows(plan: PlanColumns, rows: np.ndarray) -> np.ndarray:
    """``rows`` in explain's file order (:func:`~indexcore.scan.explainer.file_order`: partition
    text, bucket, highest level first, path), sorted on the columns."""
    if not len(rows):
        return rows
    texts = [str(values) for values, _spec, _folder in plan.partitions]
    rank_of = {t: i for i, t in enumerate(sorted(set(texts)))}
    ranks = np.array([rank_of[t] for t in texts], np.int64)
    chosen = plan.files.take(pa.array(rows, pa.int64()))
    keys = pa.table({"p": ranks[chosen.column("partition_id").to_numpy()],
                     "b": chosen.column("_BUCKET"), "l": pc.negate(chosen.column("_LEVEL").cast(pa.int64())),
                     "path": chosen.column("path")})
    order = pc.sort_indices(keys, sort_keys=[("p", "ascending"), ("b", "ascending"), ("l", "ascending"),
                                             ("path", "ascending")]).to_numpy()
    return rows[order]


def _column(files: pa.Table, name: str) -> list:
    return files.column(name).to_pylist()


def decide_on_plan(table, ex, plan: PlanColumns, rows: np.ndarray, schemas: dict[Any, TableSchema],
                   finish: Callable[[list[dict]], None], progress: Progress | None) -> None:
    """Decide ``rows`` (plan rows in file order) through ``ex``'s stages (an
    :class:`~indexcore.scan.explainer.Explainer` built over no file), the early ones on the
    columns; ``finish`` takes each batch's decided records in file order."""
    partition, bucket_stage, level, stats = ex.stages[0], ex.bucket, ex.stages[2], ex.stages[3]
    schema = stats.schema
    files = plan.files.take(pa.array(rows, pa.int64()))
    n = files.num_rows
    paths = _column(files, "path")
    pids = files.column("partition_id").to_numpy()
    buckets, totals, levels = _column(files, "_BUCKET"), _column(files, "_TOTAL_BUCKETS"), _column(files, "_LEVEL")
    # partitions once per distinct partition, buckets once per (bucket, total)
    part_ok = np.ones(len(plan.partitions), bool)
    if partition.filter is not None and len(plan.partitions):
        part_ok = np.asarray(rows_matching(partition.filter, [spec for _v, spec, _f in plan.partitions], schema), bool)
    keep = part_ok[pids] if n else np.zeros(0, bool)
    bucket_ok = {pair: bucket_stage.keeps(*pair) for pair in set(zip(buckets, totals, strict=True))}
    keep &= np.fromiter((bucket_ok[pair] for pair in zip(buckets, totals, strict=True)), bool, n)
    if level.skip_level0:
        keep &= files.column("_LEVEL").to_numpy() != 0
    # value statistics: each file's stats bytes, the predicate's columns decoded
    row_counts, sids = _column(files, "_ROW_COUNT"), _column(files, "_SCHEMA_ID")
    cols, write_cols = _column(files, "_VALUE_STATS_COLS"), _column(files, "_WRITE_COLS")
    value_stats = files.column("_VALUE_STATS").combine_chunks() if n else None
    lows = value_stats.field("_MIN_VALUES").to_pylist() if n else []
    highs = value_stats.field("_MAX_VALUES").to_pylist() if n else []
    nulls = value_stats.field("_NULL_COUNTS").to_pylist() if n else []
    types = table._stats_types
    pushdowns = ex.pushdowns
    stat_fields, stat_types = stats.stat_fields, stats.stat_types
    stats_ok = np.ones(n, bool)
    shown: list[dict] = [{}] * n
    for i in range(n):
        sid = sids[i]
        fs = schemas[sid]
        push = pushdowns(fs)
        c = tuple(cols[i]) if cols[i] is not None else None
        w = tuple(write_cols[i]) if write_cols[i] is not None else None
        got = file_stats({"_MIN_VALUES": lows[i], "_MAX_VALUES": highs[i], "_NULL_COUNTS": nulls[i]},
                         types.value(sid, c, w))
        shown[i] = cells = stats_map(got, c if c is not None else w, schema, fs, push.field_map, row_counts[i],
                                     only=stat_fields)
        if push.value_filter is not None:
            stats_ok[i] = test_predicate_on_stats(push.value_filter, row_counts[i], cells)
    # what the object stages decide: files every early stage keeps, and those whose deletion
    # vector's count must be read
    dv_offsets, dv_cards = _column(files, "dv_offset"), _column(files, "dv_cardinality")
    objects = (keep & stats_ok) | np.fromiter((o is not None and c is None for o, c in zip(dv_offsets, dv_cards,
                                                                                             strict=True)), bool, n)
    chosen = [paths[i] for i in np.flatnonzero(objects).tolist()]
    partition.ok.update(zip(chosen, part_ok[pids[objects]].tolist(), strict=True))
    live = iter(table.live_files_by_path(plan.snapshot.id if plan.snapshot else None).many(chosen) if chosen else ())
    # pruned files' records, as the stages make them
    ptypes, labels = ex.partition_types, table.caches.labels
    sizes, dv_lengths = _column(files, "_FILE_SIZE"), _column(files, "dv_length")
    fresh = ex.record_template.copy
    size = table.prefetch_batch()
    done = 0
    pending: list[tuple[int, Any]] = []  # (position, record or live file) of the current batch
    n_live = 0
    objects_list = objects.tolist()
    keep_list, stats_list = keep.tolist(), stats_ok.tolist()
    for i in range(n):
        if objects_list[i]:
            pending.append((i, next(live)))
            n_live += 1
        else:
            pending.append((i, _pruned(fresh(), plan, i, pids, paths, buckets, totals, levels, row_counts, sizes,
                                       dv_offsets, dv_lengths, dv_cards, part_ok, bucket_ok, keep_list, stats_list,
                                       shown, stat_types, ptypes, labels, bucket_stage, level.skip_level0)))
        if n_live >= size or i == n - 1:
            done = _flush(ex, pending, finish, progress, done, n, paths)
            pending, n_live = [], 0


def _pruned(record: dict, plan: PlanColumns, i: int, pids, paths, buckets, totals, levels, row_counts, sizes,
            dv_offsets, dv_lengths, dv_cards, part_ok, bucket_ok, keep, stats_ok, shown, stat_types, ptypes, labels,
            bucket_stage, skip_level0: bool) -> dict:
    """The record of a file an early stage pruned: what :meth:`Explainer.batch` and each stage set."""
    values, spec, _folder = plan.partitions[pids[i]]
    rows = row_counts[i]
    notes: list[str] = []
    record["path"] = paths[i]
    record["partition"] = spec
    record["bucket"] = buckets[i]
    record["level"] = levels[i]
    record["partition_text"] = partition_text_cached(values, ptypes, labels)
    record["problems"] = []
    record["notes"] = notes
    record["file_size"] = sizes[i]
    has_dv = dv_offsets[i] is not None
    record["dv_bytes"] = dv_lengths[i] + 8 if has_dv else 0
    record["partition_decision"] = _REMAIN if part_ok[pids[i]] else _SKIP
    ok = bucket_ok[(buckets[i], totals[i])]
    record["bucket_decision"] = _REMAIN if ok else _SKIP
    if not ok:
        notes.append(bucket_stage.note(buckets[i], totals[i]))
    ok = not (skip_level0 and levels[i] == 0)
    record["level_decision"] = _REMAIN if ok else _SKIP
    if not ok:
        notes.append("level-0 file: not read by a batch scan that skips level 0")
    record["stats_decision"] = _REMAIN if stats_ok[i] else _SKIP
    record["stats"] = StatsCells(stat_types, shown[i])
    count = dv_cards[i] if has_dv else 0
    record["dv_cardinality"] = count
    record["rows_after_dv"] = max(rows - count, 0)
    record["row_count"] = rows
    record["index_types"] = {}
    return record


def _flush(ex, pending: list[tuple[int, Any]], finish: Callable[[list[dict]], None], progress: Progress | None,
           done: int, total: int, paths: list[str]) -> int:
    """Decide the batch's live files through the stages, put every record in file order, hand them on."""
    live = [item for _i, item in pending if not isinstance(item, dict)]
    decided = iter(ex.decide(live).records if live else ())
    records = [item if isinstance(item, dict) else next(decided) for _i, item in pending]
    finish(records)
    if progress is not None:
        for i, _item in pending:
            done += 1
            progress(done, total, paths[i].rsplit("/", 1)[-1])
    return done

