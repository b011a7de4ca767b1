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
from indexcore.expr import Leaf
from indexcore.expr.functions import LeafFunction
from indexcore.expr.rows import rows_matching
from indexcore.scan.decision_columns import DecisionColumns, Sparse, put_records
from indexcore.scan.index_results import IndexResults
from indexcore.scan.records import SLICE
from indexcore.scan.stats import Pushdowns, test_predicate_on_stats
from indexcore.scan.stats_columns import FileStats, StatsBytes, value_stats
from indexcore.views.common import partition_text_cached
from indexcore.warehouse.model import TableSchema
from indexcore.warehouse.plan_columns import PlanColumns

Progress = Callable[[int, int, str], None]
# the plan's columns the early stages and the pruned files' records read, taken in the files' order
# (their value stats are read in place: StatsBytes)
# the data file fields Paimon requires, read as int64 arrays
_REQUIRED = ("_BUCKET", "_LEVEL", "_ROW_COUNT", "_FILE_SIZE")
_READ = ["path", "partition_id", "_BUCKET", "_TOTAL_BUCKETS", "_LEVEL", "_ROW_COUNT", "_SCHEMA_ID", "_FILE_SIZE",
         "_VALUE_STATS_COLS", "_WRITE_COLS", "dv_offset", "dv_length", "dv_cardinality"]


def plan_applies(table, schema: TableSchema, plan: PlanColumns) -> dict[Any, TableSchema] | None:
    """The schema of each ``_SCHEMA_ID`` of the plan when :func:`decide_on_plan` gives the records
    the object stages give (see the module), else None."""
    if schema.primary_keys or table.storage.cache is not None:
        return None
    files = plan.files
    if files.column("_FIRST_ROW_ID").null_count != files.num_rows:
        return None
    if any(files.column(name).null_count for name in _REQUIRED):  # a data file's required field unset
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
    # only the sort's columns taken (the plan's stats and embedded indexes are not copied)
    chosen = plan.files.select(["partition_id", "_BUCKET", "_LEVEL", "path"]).take(pa.array(rows, pa.int64()))
    keys = pa.table({"p": ranks[chosen.column("partition_id").to_numpy()],
                     "b": chosen.column("_BUCKET"), "l": pc.negate(chosen.column("_LEVEL").cast(pa.int64())),
                     "path": chosen.column("path")})
    order = pc.sort_indices(keys, sort_keys=[("p", "ascending"), ("b", "ascending"), ("l", "ascending"),
                                             ("path", "ascending")]).to_numpy()
    return rows[order]


def _column(files: pa.Table, name: str) -> list:
    return files.column(name).to_pylist()


def _ints(files: pa.Table, name: str, null: int = 0) -> np.ndarray:
    """An integer column as ``int64`` (``null`` where unset)."""
    return np.array(pc.fill_null(files.column(name), null).to_numpy(), np.int64)  # its own, writable


def _bucket_pairs(files: pa.Table) -> tuple[list[tuple], np.ndarray]:
    """The distinct (bucket, total buckets) pairs of the files (a total unset: None) and each
    file's pair's place among them."""
    totals = files.column("_TOTAL_BUCKETS")
    keys = np.stack([_ints(files, "_BUCKET"), _ints(files, "_TOTAL_BUCKETS"),
                     totals.is_null().to_numpy(zero_copy_only=False).astype(np.int64)], axis=1)
    if not len(keys):
        return [], np.zeros(0, np.int64)
    distinct, inverse = np.unique(keys, axis=0, return_inverse=True)
    pairs = [(b, None if unset else t) for b, t, unset in distinct.tolist()]
    return pairs, inverse.reshape(-1)


def decide_on_plan(table, ex, plan: PlanColumns, rows: np.ndarray, schemas: dict[Any, TableSchema],
                   decisions: DecisionColumns, prepare: Callable[[list[dict]], None],
                   progress: Progress | None) -> None:
    """Decide ``rows`` (plan rows in file order) through ``ex``'s stages (an
    :class:`~indexcore.scan.explainer.Explainer` built over no file), the early ones on the
    columns, and add them to ``decisions`` in file order: the files those stages keep go through
    the stages as records (``prepare`` makes each batch's records what a decision takes, in place),
    the pruned ones' fields are made a column at a time (:func:`_pruned_fields`), no record each."""
    partition, bucket_stage, level, stats = ex.stages[0], ex.bucket, ex.stages[2], ex.stages[3]
    schema = stats.schema
    # only what the early stages read, in file order; the stats read in place (StatsBytes), the
    # paths the plan's own strings (those the $files frame shares)
    files = plan.files.select(_READ).take(pa.array(rows, pa.int64()))
    n = files.num_rows
    paths = plan.text_objects("path")[np.asarray(rows, np.int64)]  # an object array of the plan's strings
    pids = files.column("partition_id").to_numpy()
    pairs, pair_of = _bucket_pairs(files)
    # partitions once per distinct partition, buckets once per (bucket, total)
    part_ok = np.ones(len(plan.partitions), bool)
    if partition.filter is not None and len(plan.partitions):
        part_ok = np.asarray(rows_matching(partition.filter, [spec for _v, spec, _f in plan.partitions], schema), bool)
    keep = part_ok[pids] if n else np.zeros(0, bool)
    bucket_ok = np.array([bucket_stage.keeps(*pair) for pair in pairs], bool)
    keep &= bucket_ok[pair_of] if n else np.zeros(0, bool)
    levels = _ints(files, "_LEVEL")
    if level.skip_level0:
        keep &= levels != 0
    # value statistics: each file's stats bytes, the predicate's columns decoded a column at a time, kept typed
    row_counts = _ints(files, "_ROW_COUNT")
    shown = value_stats(table, files, schemas, ex.pushdowns, schema, stats.stat_fields, row_counts,
                        StatsBytes(plan.files.column("_VALUE_STATS"), rows))
    stats_ok = np.ones(n, bool)
    sids = _column(files, "_SCHEMA_ID")
    # each schema's pushed value filter once (a few schemas over 10,000s of files)
    filters = {sid: ex.pushdowns(schemas[sid]).value_filter for sid in set(sids)}
    for sid, value_filter in filters.items():
        if value_filter is not None:
            at = np.arange(n) if len(filters) == 1 else np.flatnonzero(np.asarray(sids, object) == sid)
            for lo in range(0, len(at), SLICE):  # Python values a slice of files at a time
                _test_stats(value_filter, at[lo:lo + SLICE], shown, row_counts, stats_ok)
    # what the object stages decide: files every early stage keeps, and those whose deletion
    # vector's count must be read
    has_dv = files.column("dv_offset").is_valid().to_numpy(zero_copy_only=False)
    objects = (keep & stats_ok) | (has_dv & files.column("dv_cardinality").is_null().to_numpy(zero_copy_only=False))
    live_at = np.flatnonzero(objects).tolist()
    chosen = paths[objects].tolist()
    partition.ok.update(zip(chosen, part_ok[pids[objects]].tolist(), strict=True))
    # pruned files' fields as the stages set them, a column at a time; the kept files' records put in
    fields, stat_types, stat_values = _pruned_fields(
        ex, plan, pids, paths, pairs, pair_of, levels, row_counts, files, part_ok, bucket_ok, stats_ok, shown,
        stats.stat_types, bucket_stage, level.skip_level0, prepare)
    # the kept files through the stages in batches of the prefetch's size (progress in file order),
    # each batch's live files made by plan row and its records put in and let go before the next (a
    # predicate every file takes to the index stage held 966,800 of both at once)
    by_path = table.live_files_by_path(plan.snapshot.id if plan.snapshot else None)
    kept_rows = rows[objects]
    size = table.prefetch_batch()
    done = 0
    for lo in range(0, len(live_at), size):
        records = ex.decide(by_path.at_rows(kept_rows[lo:lo + size])).records
        prepare(records)
        put_records(fields, stat_types, stat_values, live_at[lo:lo + size], records)
        del records
        done = _report(progress, done, live_at[min(lo + size, len(live_at)) - 1] + 1, n, paths)
    _report(progress, done, n, n, paths)
    decisions.extend_fields(n, fields, stat_types, stat_values)


def _test_stats(value_filter, at: np.ndarray, shown: FileStats, row_counts: np.ndarray,
                stats_ok: np.ndarray) -> None:
    """The stats test of the files ``at`` into ``stats_ok``: a leaf without its dispatch per file
    (:func:`_range_test`), a tree by :func:`~indexcore.scan.stats.test_predicate_on_stats`."""
    counts = dict(zip(at.tolist(), row_counts[at].tolist(), strict=True))
    if not isinstance(value_filter, Leaf):
        for i, cells in zip(at.tolist(), shown.cells(at), strict=True):
            stats_ok[i] = test_predicate_on_stats(value_filter, counts[i], cells)
        return
    test, literals = value_filter.function.test_stats, value_filter.literals
    in_range, kind = _range_test(value_filter)
    lows, highs, nulls, present = shown.column(value_filter.field, at)
    for i, low, high, null_count, has in zip(at.tolist(), lows, highs, nulls, present, strict=True):
        if not has:
            continue
        if type(low) is kind and type(high) is kind:  # noqa: E721 - the literal's exact type, no float
            stats_ok[i] = (null_count is None or null_count != counts[i]) and in_range(low, high)
        else:
            stats_ok[i] = test(counts[i], low, high, null_count, literals)


def _range_test(leaf: Leaf) -> tuple[Callable[[Any, Any], bool], type | None]:
    """For a comparison leaf whose literal is neither None nor a float: whether a file whose min and
    max (both of the literal's type) are ``low`` and ``high`` may hold a match, by Python's own order
    (``java_compare``'s for every type but floats), and that type; a file with some other stats
    (a None, an all-null column, another type) takes the function's ``test_stats``. None for any
    other leaf. ``_test_range`` of each comparison of :mod:`indexcore.expr.functions` without its
    calls per file (about a third of the stats stage at 9,104 files)."""
    literals, name = leaf.literals, leaf.function.name
    value = literals[0] if len(literals) == 1 else None
    tests = {"equal": lambda lo, hi: not (value < lo or hi < value),
             "notEqual": lambda lo, hi: value < lo or lo < value or value < hi or hi < value,
             "lessThan": lambda lo, hi: lo < value, "lessOrEqual": lambda lo, hi: not value < lo,
             "greaterThan": lambda lo, hi: value < hi, "greaterOrEqual": lambda lo, hi: not hi < value}
    if value is None or isinstance(value, float) or name not in tests or \
            type(leaf.function)._test_stats is not LeafFunction._test_stats or \
            type(leaf.function).test_stats is not LeafFunction.test_stats:
        return _never, None
    return tests[name], type(value)


def _never(low: Any, high: Any) -> bool:
    raise AssertionError("no type of stats takes this path")


PROGRESS_STEPS = 200  # progress calls over an explain's files on the plan (a bar draws whole percents)


def _report(progress: Progress | None, done: int, upto: int, total: int, paths: list[str]) -> int:
    """Progress for the files ``done`` .. ``upto`` - 1 (file order): a call every
    1/:data:`PROGRESS_STEPS` of ``total`` files and one for the last of them (not one per file:
    50,000 calls for a bar that draws 100 percents)."""
    if progress is not None and upto > done:
        step = max(1, total // PROGRESS_STEPS)
        for i in [*range(done + (-(done + 1)) % step, upto - 1, step), upto - 1]:
            progress(i + 1, total, paths[i].rsplit("/", 1)[-1])
    return max(done, upto)


_NO_NOTES: tuple = ()


def _pruned_fields(ex, plan: PlanColumns, pids: np.ndarray, paths: np.ndarray, pairs: list[tuple],
                   pair_of: np.ndarray, levels: np.ndarray, row_counts: np.ndarray, files: pa.Table,
                   part_ok: np.ndarray, bucket_ok: np.ndarray, stats_ok: np.ndarray, shown: FileStats, stat_types,
                   bucket_stage, skip_level0: bool,
                   prepare: Callable[[list[dict]], None]) -> tuple[dict[str, Any], list, FileStats]:
    """Every file's fields as the stages set them for a file an early stage pruned
    (:meth:`Explainer.batch` and each stage; :data:`~indexcore.scan.decision_columns.FIELDS`), the
    integers as ``int64`` arrays and the stage decisions as their codes, a field no early stage
    sets as a :class:`~indexcore.scan.decision_columns.Sparse` of its default, with each file's
    ``StatsCells`` types and values apart."""
    n = len(paths)
    has_dv = files.column("dv_offset").is_valid().to_numpy(zero_copy_only=False)
    counts = np.where(has_dv, _ints(files, "dv_cardinality"), 0)
    # each distinct partition's JSON form and text, made as for a record (``prepare``)
    ptypes, labels = ex.partition_types, ex.table.caches.labels
    as_json, texts = np.empty(len(plan.partitions), object), np.empty(len(plan.partitions), object)
    for pid in np.unique(pids).tolist():
        record = {"partition": plan.partitions[pid][1], "problems": [], "notes": []}
        prepare([record])
        as_json[pid] = record["partition"]
        texts[pid] = partition_text_cached(plan.partitions[pid][0], ptypes, labels)
    level_ok = levels != 0 if skip_level0 else np.ones(n, bool)
    level0 = "level-0 file: not read by a batch scan that skips level 0"
    # each file's notes: its bucket's (pruned) and level 0's, one tuple per distinct combination
    pair_notes = [(bucket_stage.note(*pair),) if not ok else _NO_NOTES
                  for pair, ok in zip(pairs, bucket_ok.tolist(), strict=True)]
    combos = pair_of * 2 + ~level_ok
    notes_of = np.empty(2 * len(pairs), object)
    for combo in np.unique(combos).tolist():
        note = pair_notes[combo // 2]
        notes_of[combo] = (*note, level0) if combo % 2 else note
    fields: dict[str, Any] = {
        "bucket": _ints(files, "_BUCKET"), "level": levels, "row_count": row_counts,
        "dv_cardinality": counts, "rows_after_dv": np.maximum(row_counts - counts, 0),
        "bytes_read": np.zeros(n, np.int64), "requests": np.zeros(n, np.int64), "file_size": _ints(files, "_FILE_SIZE"),
        "dv_bytes": np.where(has_dv, _ints(files, "dv_length") + 8, 0),
        "partition_decision": np.where(part_ok[pids], 1, 2).astype(np.int8) if n else np.zeros(0, np.int8),
        "bucket_decision": np.where(bucket_ok[pair_of], 1, 2).astype(np.int8) if n else np.zeros(0, np.int8),
        "level_decision": np.where(level_ok, 1, 2).astype(np.int8),
        "stats_decision": np.where(stats_ok, 1, 2).astype(np.int8),
        "global_index_decision": np.zeros(n, np.int8),
        "path": paths, "partition": as_json[pids], "partition_text": texts[pids], "notes": notes_of[combos],
        "raw_index_result": IndexResults(n), "index_decision": IndexResults(n),
        **{name: Sparse(None, n) for name in ("index_location", "matching_rows", "global_index_rows")},
        "problems": Sparse(_NO_NOTES, n), "pruning_index_types": Sparse(_NO_NOTES, n), "index_types": Sparse({}, n)}
    return fields, [stat_types] * n, shown


def plan_value_stats(table, plan: PlanColumns, rows: Sequence[int], schema: TableSchema,
                     file_schema: TableSchema) -> list[dict]:
    """Every column's (min, max, null count) of the plan's ``rows``, files written with
    ``file_schema`` (the table's ``schema``, or one it evolved from), as
    :func:`~indexcore.scan.stats.column_stats` gives them, decoded a column at a time
    (:func:`~indexcore.scan.stats_columns.value_stats`): the suggestion's statistics of its sampled files."""
    files = plan.files.select(_READ).take(pa.array(rows, pa.int64()))
    sids = set(_column(files, "_SCHEMA_ID"))
    got = value_stats(table, files, dict.fromkeys(sids, file_schema), Pushdowns(schema, []), schema,
                      list(schema.field_names), _column(files, "_ROW_COUNT"),
                      StatsBytes(plan.files.column("_VALUE_STATS"), rows))
    return got.cells(range(len(rows)))
