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
from indexcore.formats.binary_row import (
    decode_binary_field,
    is_compact_decimal,
    is_compact_timestamp,
)
from indexcore.scan.decision_columns import DecisionColumns, put_records
from indexcore.scan.stats import LACKS, Pushdowns, stats_map, stats_slots, test_predicate_on_stats
from indexcore.types import DataType, Timestamp, decimal_from_unscaled
from indexcore.views.common import partition_text_cached
from indexcore.warehouse.manifest import file_stats
from indexcore.warehouse.model import TableSchema
from indexcore.warehouse.plan_columns import PlanColumns, whole

Progress = Callable[[int, int, str], None]
# the plan's columns the early stages and the pruned files' records read, taken in the files' order
# (their value stats are read in place: _StatsBytes)
_READ = ["path", "partition_id", "_BUCKET", "_TOTAL_BUCKETS", "_LEVEL", "_ROW_COUNT", "_SCHEMA_ID", "_FILE_SIZE",
         "_VALUE_STATS_COLS", "_WRITE_COLS", "dv_offset", "dv_length", "dv_cardinality"]
_EMPTY_ROW_LEN = 12  # a stats row of arity 0 (4-byte arity, 8-byte null bits): the planner's empty stats


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
    # only what the early stages read, in file order; the stats read in place (_StatsBytes), the
    # paths the plan's own strings (those the $files frame shares)
    files = plan.files.select(_READ).take(pa.array(rows, pa.int64()))
    n = files.num_rows
    paths = plan.text_objects("path")[np.asarray(rows, np.int64)].tolist()
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
    # value statistics: each file's stats bytes, the predicate's columns decoded a column at a time
    row_counts = _column(files, "_ROW_COUNT")
    shown = _value_stats(table, files, schemas, ex.pushdowns, schema, stats.stat_fields, row_counts,
                         _StatsBytes(plan.files.column("_VALUE_STATS"), rows))
    stats_ok = np.ones(n, bool)
    sids = _column(files, "_SCHEMA_ID")
    # each schema's pushed value filter once (a few schemas over 10,000s of files)
    filters = {sid: ex.pushdowns(schemas[sid]).value_filter for sid in set(sids)}
    for sid, value_filter in filters.items():
        if value_filter is None:
            continue
        at = range(n) if len(filters) == 1 else [i for i in range(n) if sids[i] == sid]
        if isinstance(value_filter, Leaf):  # test_predicate_on_stats of one leaf, without its dispatch per file
            test, field, literals = value_filter.function.test_stats, value_filter.field, value_filter.literals
            in_range, kind = _range_test(value_filter)
            for i in at:
                cells = shown[i].get(field)
                if cells is None:
                    continue
                low, high, null_count = cells
                if type(low) is kind and type(high) is kind:  # noqa: E721 - the literal's exact type, no float
                    stats_ok[i] = (null_count is None or null_count != row_counts[i]) and in_range(low, high)
                else:
                    stats_ok[i] = test(row_counts[i], low, high, null_count, literals)
        else:
            for i in at:
                stats_ok[i] = test_predicate_on_stats(value_filter, row_counts[i], shown[i])
    # what the object stages decide: files every early stage keeps, and those whose deletion
    # vector's count must be read
    dv_offsets, dv_cards = _column(files, "dv_offset"), _column(files, "dv_cardinality")
    objects = (keep & stats_ok) | np.fromiter((o is not None and c is None for o, c in zip(dv_offsets, dv_cards,
                                                                                             strict=True)), bool, n)
    live_at = np.flatnonzero(objects).tolist()
    chosen = [paths[i] for i in live_at]
    partition.ok.update(zip(chosen, part_ok[pids[objects]].tolist(), strict=True))
    # by plan row: no map of every path to its row (the live files a view made already are taken)
    live = table.live_files_by_path(plan.snapshot.id if plan.snapshot else None).at_rows(rows[objects])
    # the kept files through the stages, in batches of the prefetch's size (progress in file order)
    size = table.prefetch_batch()
    live_records: list[dict] = []
    done = 0
    for lo in range(0, len(live), size):
        records = ex.decide(live[lo:lo + size]).records
        prepare(records)
        live_records.extend(records)
        done = _report(progress, done, live_at[min(lo + size, len(live)) - 1] + 1, n, paths)
    _report(progress, done, n, n, paths)
    # pruned files' fields as the stages set them, a column at a time; the kept files' records put in
    pids_list = pids.tolist()
    fields, stat_types, stat_values = _pruned_fields(
        ex, plan, pids_list, paths, buckets, totals, levels, row_counts, files, part_ok, bucket_ok, stats_ok, shown,
        stats.stat_types, bucket_stage, level.skip_level0, prepare)
    put_records(fields, stat_types, stat_values, live_at, live_records)
    decisions.extend_fields(n, fields, stat_types, stat_values)


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


def _pruned_fields(ex, plan: PlanColumns, pids: list[int], paths: list[str], buckets: list, totals: list,
                   levels: list, row_counts: list, files: pa.Table, part_ok: np.ndarray, bucket_ok: dict,
                   stats_ok: np.ndarray, shown: list[dict], stat_types, bucket_stage, skip_level0: bool,
                   prepare: Callable[[list[dict]], None]) -> tuple[dict[str, Any], list, list]:
    """Every file's fields as the stages set them for a file an early stage pruned
    (:meth:`Explainer.batch` and each stage; :data:`~indexcore.scan.decision_columns.FIELDS`), the
    stage decisions as their codes, with each file's ``StatsCells`` types and values apart."""
    n = len(paths)
    dv_offsets, dv_cards = _column(files, "dv_offset"), _column(files, "dv_cardinality")
    sizes, dv_lengths = _column(files, "_FILE_SIZE"), _column(files, "dv_length")
    counts = [c if o is not None else 0 for o, c in zip(dv_offsets, dv_cards, strict=True)]
    # each distinct partition's JSON form and text, made as for a record (``prepare``)
    ptypes, labels = ex.partition_types, ex.table.caches.labels
    as_json, texts = {}, {}
    for pid in set(pids):
        record = {"partition": plan.partitions[pid][1], "problems": [], "notes": []}
        prepare([record])
        as_json[pid] = record["partition"]
        texts[pid] = partition_text_cached(plan.partitions[pid][0], ptypes, labels)
    bucket_notes = {pair: (bucket_stage.note(*pair),) for pair, ok in bucket_ok.items() if not ok}
    level0 = "level-0 file: not read by a batch scan that skips level 0"
    notes = [bucket_notes.get((b, t), _NO_NOTES) for b, t in zip(buckets, totals, strict=True)]
    level_ok = np.ones(n, bool)
    if skip_level0:
        level_ok = np.array([lv != 0 for lv in levels], bool) if n else level_ok
        notes = [note if ok else (*note, level0) for note, ok in zip(notes, level_ok.tolist(), strict=True)]
    pid_arr = np.asarray(pids, np.int64)
    bucket_codes = np.fromiter((bucket_ok[pair] for pair in zip(buckets, totals, strict=True)), bool, n)
    nones = [None] * n
    fields: dict[str, Any] = {
        "bucket": list(buckets), "level": list(levels), "row_count": list(row_counts),
        "dv_cardinality": counts, "rows_after_dv": [max(r - c, 0) for r, c in zip(row_counts, counts, strict=True)],
        "bytes_read": [0] * n, "requests": [0] * n, "file_size": list(sizes),
        "dv_bytes": [length + 8 if o is not None else 0 for o, length in zip(dv_offsets, dv_lengths, strict=True)],
        "partition_decision": np.where(part_ok[pid_arr], 1, 2).astype(np.int8) if n else np.zeros(0, np.int8),
        "bucket_decision": np.where(bucket_codes, 1, 2).astype(np.int8),
        "level_decision": np.where(level_ok, 1, 2).astype(np.int8),
        "stats_decision": np.where(stats_ok, 1, 2).astype(np.int8),
        "global_index_decision": np.zeros(n, np.int8),
        "path": list(paths), "partition": [as_json[p] for p in pids], "partition_text": [texts[p] for p in pids],
        "raw_index_result": list(nones), "index_decision": list(nones), "index_location": list(nones),
        "matching_rows": list(nones), "problems": [_NO_NOTES] * n, "notes": notes,
        "global_index_rows": list(nones), "pruning_index_types": [_NO_NOTES] * n, "index_types": [{}] * n}
    return fields, [stat_types] * n, list(shown)


def plan_value_stats(table, plan: PlanColumns, rows: Sequence[int], schema: TableSchema,
                     file_schema: TableSchema) -> list[dict]:
    """Every column's (min, max, null count) of the plan's ``rows``, files written with
    ``file_schema`` (the table's ``schema``, or one it evolved from), as
    :func:`~indexcore.scan.stats.column_stats` gives them, decoded a column at a time
    (:func:`_value_stats`): the suggestion's statistics of its sampled files."""
    files = plan.files.select(_READ).take(pa.array(rows, pa.int64()))
    sids = set(_column(files, "_SCHEMA_ID"))
    return _value_stats(table, files, dict.fromkeys(sids, file_schema), Pushdowns(schema, []), schema,
                        list(schema.field_names), _column(files, "_ROW_COUNT"),
                        _StatsBytes(plan.files.column("_VALUE_STATS"), rows))


def _value_stats(table, files: pa.Table, schemas: dict[Any, TableSchema], pushdowns, schema: TableSchema,
                 stat_fields: list[str], row_counts: list[int], stats: _StatsBytes) -> list[dict]:
    """Each file's (min, max, null count) of ``stat_fields``, as :func:`~indexcore.scan.stats.column_stats`
    gives them (value stats mapped by field id): the files of one schema and stats layout
    decoded a field at a time over all their rows (:func:`_field_column`); a file whose stats
    are irregular (empty, a row that does not fit, a field read through a reader that fails) goes
    through :func:`~indexcore.scan.stats.stats_map` on its own, which handles them. ``stats``: the
    files' value stats, in the plan's own column (:class:`_StatsBytes`)."""
    n = files.num_rows
    if not n:
        return []
    sids, cols, write_cols = _column(files, "_SCHEMA_ID"), _column(files, "_VALUE_STATS_COLS"), \
        _column(files, "_WRITE_COLS")
    types_of = table._stats_types  # the types the planner decodes stats with, per schema and layout
    groups: dict[tuple, list[int]] = {}
    if len(set(sids)) == 1 and cols.count(None) == n and write_cols.count(None) == n:
        groups[(sids[0], None, None)] = list(range(n))  # one schema, dense stats: one group (a loop took 1.5 ms)
    else:
        for i, key in enumerate(zip(sids, map(_as_tuple, cols), map(_as_tuple, write_cols), strict=True)):
            groups.setdefault(key, []).append(i)
    out: list[dict | None] = [None] * n
    for (sid, c, w), at_rows in groups.items():
        fs = schemas[sid]
        fmap = pushdowns(fs).field_map
        names = c if c is not None else w
        types = types_of.value(sid, c, w)
        try:
            whole = types()
            slots = stats_slots(names, schema, fs, fmap, stat_fields)
        except IndexCoreError:
            whole = slots = None
        if slots is not None:
            _decode_group(np.asarray(at_rows, np.int64), slots, whole, stats, row_counts, out)
        for i in at_rows:
            if out[i] is None:  # irregular: the planner's own stats object and stats_map
                low, high, nulls = stats.row(i)
                got = file_stats({"_MIN_VALUES": low, "_MAX_VALUES": high, "_NULL_COUNTS": nulls}, types)
                out[i] = stats_map(got, names, schema, fs, fmap, row_counts[i], only=stat_fields)
    return out


def _as_tuple(value: list | None) -> tuple | None:
    return tuple(value) if value is not None else None


_IRREGULAR = object()  # a field :func:`_field_column` leaves to the per-file path


class _StatsBytes:
    """The files' value stats as their Arrow arrays (``_VALUE_STATS``' fields as the manifest's
    columns hold them), file ``i`` at row ``rows[i]`` of them (the plan's own column, not a copy in
    the files' order): each min and max row read off the binary array's buffers, not a bytes object
    per file (two per file: 0.4 GB at 1,000,000 files, and their joined copies)."""

    def __init__(self, value_stats: pa.StructArray | pa.ChunkedArray, rows: Sequence[int]):
        value_stats = whole(value_stats)
        self.rows = np.asarray(rows, np.int64)
        self.lows, self.highs = value_stats.field("_MIN_VALUES"), value_stats.field("_MAX_VALUES")
        self.nulls = value_stats.field("_NULL_COUNTS")
        self.low_len = pc.fill_null(pc.binary_length(self.lows), 0).to_numpy(zero_copy_only=False)[self.rows]
        self.null_len = pc.fill_null(pc.list_value_length(self.nulls), 0).to_numpy(zero_copy_only=False)[self.rows]

    def row(self, i: int) -> tuple:
        """File ``i``'s min row, max row and null counts as Python values (the per-file path)."""
        r = int(self.rows[i])
        return self.lows[r].as_py(), self.highs[r].as_py(), self.nulls[r].as_py()

    def null_counts(self, files: np.ndarray, at: int) -> list:
        """The null count of field ``at`` of each of ``files`` (None past its row's counts, or null)."""
        out: list = [None] * len(files)
        has = np.flatnonzero(self.null_len[files] > at)
        if len(has):
            offsets = self.nulls.offsets.to_numpy()
            got = self.nulls.values.take(pa.array(offsets[self.rows[files[has]]] + at)).to_pylist()
            for k, v in zip(has.tolist(), got, strict=True):
                out[k] = v
        return out


def _decode_group(at_rows: np.ndarray, slots: tuple, types: tuple, stats: _StatsBytes, row_counts: list[int],
                  out: list) -> None:
    """Fill ``out`` for the rows of one schema and layout whose stats decode regularly."""
    regular = at_rows[(stats.null_len[at_rows] > 0) | (stats.low_len[at_rows] > _EMPTY_ROW_LEN)]
    if not len(regular):
        return
    # LazyStats' layout: the types past both the min row's arity and the null counts are not the stats'
    at_rows = stats.rows[regular]  # their rows in the stats' arrays
    min_rows, max_rows = _rows_of(stats.lows, at_rows), _rows_of(stats.highs, at_rows)  # once for every field
    width = np.minimum(len(types), np.maximum(min_rows[3], stats.null_len[regular])).tolist()
    fields, counts = {}, {}
    for _col, at in slots:
        if at is not None and at != LACKS and at not in fields:
            counts[at] = stats.null_counts(regular, at)
            if at < len(types):
                fields[at] = (_field_column(stats.lows, at_rows, at, types[at], min_rows),
                              _field_column(stats.highs, at_rows, at, types[at], max_rows))
    for k, i in enumerate(regular.tolist()):
        cells = {}
        for col, at in slots:
            if at is None:
                cells[col] = (None, None, None)
            elif at == LACKS:
                cells[col] = (None, None, row_counts[i])
            else:
                null_count = counts[at][k]
                if at >= width[k]:
                    cells[col] = (None, None, null_count)
                    continue
                low, high = fields[at][0][k], fields[at][1][k]
                if low is _IRREGULAR or high is _IRREGULAR:
                    break
                cells[col] = (low, high, null_count)
        else:
            out[i] = cells


# fixed-width fields read straight from the rows' bytes, as numpy types (little-endian)
_FIXED = {"BOOLEAN": "u1", "TINYINT": "i1", "SMALLINT": "<i2", "INT": "<i4", "DATE": "<i4", "TIME": "<i4",
          "BIGINT": "<i8", "FLOAT": "<f4", "DOUBLE": "<f8"}


def _rows_of(raws: pa.Array, at: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The serialized BinaryRows of a binary array's rows ``at`` (null: none), read in place: the
    array's bytes, each row's length, start (0 for a row shorter than its 4-byte arity) and arity (0
    where it has none, as :func:`~indexcore.formats.binary_row.binary_row_arity`)."""
    n = len(at)
    _validity, offsets_buf, data = raws.buffers()
    wide = pa.types.is_large_binary(raws.type)
    offsets = np.frombuffer(offsets_buf, np.int64 if wide else np.int32)[raws.offset:raws.offset + len(raws) + 1]
    buf = np.frombuffer(data, np.uint8) if data is not None else np.zeros(0, np.uint8)
    starts = offsets[at].astype(np.int64)
    lens = offsets[at + 1].astype(np.int64) - starts
    if raws.null_count:
        lens[~raws.is_valid().to_numpy(zero_copy_only=False)[at]] = 0
    has_row = lens >= 4
    s = np.where(has_row, starts, 0)
    arity = np.zeros(n, np.int64)
    first = s[has_row]
    arity[has_row] = (buf[first].astype(np.int64) << 24) | (buf[first + 1].astype(np.int64) << 16) | \
        (buf[first + 2].astype(np.int64) << 8) | buf[first + 3].astype(np.int64)
    return buf, lens, s, arity


def _field_column(raws: pa.Array, at_rows: np.ndarray, at: int, dtype: DataType, rows: tuple | None = None) -> list:
    """Field ``at`` of the serialized BinaryRow of each of rows ``at_rows`` of ``raws`` as
    :func:`decode_binary_field` gives it (None: null, past the row, or no row), fixed-width fields
    read for all rows at once from the array's bytes; :data:`_IRREGULAR` where the row does not fit
    its bytes (the per-file path reports that)."""
    root = dtype.root
    fixed = _FIXED.get(root)
    compact = (root in ("TIMESTAMP", "TIMESTAMP_LTZ") and is_compact_timestamp(dtype)) or \
        (root == "DECIMAL" and is_compact_decimal(dtype))
    if fixed is None and compact:  # epoch millis or the unscaled value in the slot
        fixed = "<i8"
    if fixed is None:  # variable-length fields: each row's own decoding
        out = []
        for raw in raws.take(pa.array(at_rows, pa.int64())).to_pylist():
            try:
                out.append(decode_binary_field(raw, at, dtype, "stats values"))
            except IndexCoreError:
                out.append(_IRREGULAR)
        return out
    n = len(at_rows)
    buf, lens, s, arity = _rows_of(raws, at_rows) if rows is None else rows
    has_row = lens >= 4
    if not has_row.any():
        return [None] * n
    null_width = ((arity + 63 + 8) // 64) * 8
    fits = 4 + null_width + 8 * arity <= lens
    bit = at + 8
    read = has_row & fits & (at < arity)
    rows = np.flatnonzero(read)
    is_null = (buf[s[rows] + 4 + (bit >> 3)] & (1 << (bit & 7))) != 0
    rows = rows[~is_null]
    slot = s[rows] + 4 + null_width[rows] + 8 * at
    width = np.dtype(fixed).itemsize
    values = buf[slot[:, None] + np.arange(width)].copy().view(fixed).ravel().tolist()
    if root == "BOOLEAN":
        values = [v != 0 for v in values]
    elif root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        values = Timestamp.of_millis(values)
    elif root == "DECIMAL":
        values = [decimal_from_unscaled(dtype, v) for v in values]
    out: list = [None] * n
    for i in np.flatnonzero(has_row & ~fits).tolist():
        out[i] = _IRREGULAR
    for i, v in zip(rows.tolist(), values, strict=True):
        out[i] = v
    return out
