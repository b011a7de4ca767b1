"""The stats stage: manifest statistics with Paimon's semantics (``filterByStats``), across schema evolution.

Each leaf function owns its statistics test (:meth:`indexcore.expr.LeafFunction.test_stats`);
this module folds it over a predicate tree. Stats of a file written under an older schema are
mapped by field id (``SimpleStatsEvolution``); a column the file does not have reads as all-null;
a column whose type changed is not used (``filterUnsafeFilter``). Append tables test the whole
predicate on value stats. Primary-key tables test the conjuncts over the trimmed primary keys on
key stats, and the whole predicate on value stats only where Paimon does: per file when level 0 is
skipped, else per bucket (``filterWholeBucketByStats``, :func:`~indexcore.scan.bucket.whole_bucket_filter`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from indexcore.cache import LRU
from indexcore.errors import IndexCoreError
from indexcore.expr import Leaf, Predicate, and_all
from indexcore.expr import rename as _rename
from indexcore.scan.bucket import whole_bucket_filter
from indexcore.scan.records import Batch, Decision, StatsCells
from indexcore.types import DataType, to_json_value
from indexcore.views.common import partition_text_cached
from indexcore.warehouse.model import LiveFile, TableSchema


def stats_test(leaf: Leaf, row_count: int, min_value: Any, max_value: Any, null_count: int | None) -> bool:
    """May a file with these statistics hold a row matching ``leaf``? (``LeafPredicate.test``)"""
    return leaf.function.test_stats(row_count, min_value, max_value, null_count, leaf.literals)


def test_predicate_on_stats(pred: Predicate, row_count: int,
                            stats: Mapping[str, tuple[Any, Any, int | None]]) -> bool:
    """Fold ``stats_test`` over a tree; a field without statistics may match."""
    if isinstance(pred, Leaf):
        if pred.field not in stats:
            return True
        return stats_test(pred, row_count, *stats[pred.field])
    return pred.function.test(test_predicate_on_stats(c, row_count, stats) for c in pred.children)


def _same_type(a: DataType, b: DataType) -> bool:
    return a == b or dataclasses.replace(a, nullable=True) == dataclasses.replace(b, nullable=True)


def field_map(table_schema: TableSchema, file_schema: TableSchema) -> dict[str, str | None]:
    """Table field name -> the data file's field name by id: None where the file lacks the
    field, ``""`` where its type changed (unsafe to push down)."""
    out: dict[str, str | None] = {}
    for tf in table_schema.fields:
        ff = file_schema.field_by_id(tf.id)
        if ff is None:
            out[tf.name] = None
        elif not _same_type(tf.type, ff.type):
            out[tf.name] = ""
        else:
            out[tf.name] = ff.name
    return out


def unsafe_filtered(preds: Sequence[Predicate], fmap: Mapping[str, str | None]) -> list[Predicate]:
    """``filterUnsafeFilter(keepNewFieldFilter=true)``: drop conjuncts over type-changed fields."""
    return [p for p in preds if all(fmap.get(f) != "" for f in p.fields())]


def devolved(preds: Sequence[Predicate], fmap: Mapping[str, str | None]) -> list[Predicate]:
    """``tryDevolveFilter``: conjuncts in the file's field names; those over fields the file
    lacks or whose type changed are dropped."""
    out = []
    for p in preds:
        names = {f: fmap.get(f) for f in p.fields()}
        if all(names.values()):
            out.append(_rename(p, names))  # type: ignore[arg-type]
    return out


_LACKS = -1  # a stats slot: the file lacks the field, so it is all null
LACKS = _LACKS


def stats_slots(names: Sequence[str] | None, table_schema: TableSchema, file_schema: TableSchema,
                fmap: Mapping[str, str | None],
                only: Sequence[str] | None = None) -> tuple[tuple[str, int | None], ...]:
    """Where each table column's stats sit in a stats row of layout ``names`` (dense
    ``value_stats_cols``, key fields, or the file's fields when None): a position, ``_LACKS``
    (the file lacks the field: all null) or None (outside a dense layout: unknown); columns
    whose type changed are left out. The same for every file of one schema and layout, so worked
    out once for them (``fmap`` is :func:`field_map` of the two schemas)."""
    key = (id(table_schema), id(file_schema), None if names is None else tuple(names),
           None if only is None else tuple(only))
    hit = _SLOTS.peek(key)
    if hit is not None and hit[0] is table_schema and hit[1] is file_schema:
        return hit[2]
    layout = list(names) if names is not None else list(file_schema.field_names)
    slots = []
    for tf in table_schema.fields:
        if only is not None and tf.name not in only:
            continue
        fname = fmap.get(tf.name)
        if fname is None:
            slots.append((tf.name, _LACKS))
        elif fname != "":
            slots.append((tf.name, layout.index(fname) if fname in layout else None))
    found = tuple(slots)
    _SLOTS.put(key, (table_schema, file_schema, found))
    return found


# (id(table schema), id(file schema), layout, columns) -> (the schemas, their slots); schemas never change
_SLOTS = LRU(256)


def stats_map(stats, names: Sequence[str] | None, table_schema: TableSchema, file_schema: TableSchema,
              fmap: Mapping[str, str | None], row_count: int,
              only: Sequence[str] | None = None) -> dict[str, tuple[Any, Any, int | None]]:
    """Table column -> (min, max, null count) as ``SimpleStatsEvolution`` gives them.

    ``names`` is the stats layout (dense ``value_stats_cols``, key fields, or the file's
    fields). A field the file lacks is all-null; one outside a dense layout is unknown.
    """
    out: dict[str, tuple[Any, Any, int | None]] = {}
    try:
        for col, at in stats_slots(names, table_schema, file_schema, fmap, only):
            if at is None:
                out[col] = (None, None, None)
            elif at == _LACKS:
                out[col] = (None, None, row_count)
            else:
                out[col] = stats.value_at(at)  # only the fields asked are decoded
    except IndexCoreError:
        return {}
    return out


def column_stats(lf: LiveFile, table_schema: TableSchema, file_schema: TableSchema,
                 fmap: Mapping[str, str | None] | None = None, key_stats: bool = False,
                 only: Sequence[str] | None = None) -> dict[str, tuple[Any, Any, int | None]]:
    """Table column -> (min, max, null count) of one live file, as the stats stage reads them.

    Value stats (dense ``value_stats_cols``, else the written columns, else the file's fields)
    mapped to table columns by field id; with ``key_stats`` (primary-key tables) the trimmed
    primary keys come from the key stats. ``only`` restricts the columns.
    """
    fmap = field_map(table_schema, file_schema) if fmap is None else fmap
    f = lf.file
    names = f.value_stats_cols if f.value_stats_cols is not None else f.write_cols
    out = stats_map(f.value_stats, names, table_schema, file_schema, fmap, f.row_count, only=only)
    if key_stats:
        keys = [file_schema.field(k).name for k in file_schema.trimmed_primary_keys if k in file_schema.field_names]
        wanted = [k for k in table_schema.trimmed_primary_keys if only is None or k in only]
        out.update(stats_map(f.key_stats, keys, table_schema, file_schema, fmap, f.row_count, only=wanted))
    return out


def stats_json(table_schema: TableSchema, stats: Mapping[str, tuple[Any, Any, int | None]],
               columns: Iterable[str]) -> dict[str, dict[str, Any]]:
    """``{column: {"min", "max", "null_count"}}`` in JSON values; a column without usable stats
    (type changed, stats unreadable) has all three None."""
    out = {}
    for col in columns:
        low, high, nulls = stats.get(col, (None, None, None))
        dtype = table_schema.field(col).type
        out[col] = {"min": to_json_value(dtype, low), "max": to_json_value(dtype, high), "null_count": nulls}
    return out


@dataclass(frozen=True)
class Pushdown:
    """The filters pushed to the files written with one schema: the table-to-file field map, the
    conjuncts in the file's names for its index (``tryDevolveFilter``), and those safe for its
    value and key stats (``filterUnsafeFilter``)."""

    file_schema: TableSchema
    field_map: dict[str, str | None]
    index_filter: Predicate | None
    value_filter: Predicate | None
    key_filter: Predicate | None


class Pushdowns:
    """:class:`Pushdown` per file schema, worked out once per explanation (the same for every
    file written with it)."""

    def __init__(self, table_schema: TableSchema, parts: Sequence[Predicate]):
        self.schema = table_schema
        self.parts = parts
        trimmed = set(table_schema.trimmed_primary_keys)
        self.key_parts = [c for c in parts if c.fields() <= trimmed] if table_schema.primary_keys else []
        self._hits: dict[int, Pushdown] = {}  # id(file schema) -> its pushdown

    def __call__(self, fs: TableSchema) -> Pushdown:
        hit = self._hits.get(id(fs))
        if hit is None or hit.file_schema is not fs:
            fmap = field_map(self.schema, fs)
            hit = self._hits[id(fs)] = Pushdown(fs, fmap, and_all(devolved(self.parts, fmap)),
                                                and_all(unsafe_filtered(self.parts, fmap)),
                                                and_all(unsafe_filtered(self.key_parts, fmap)))
        return hit


class StatsStage:
    """``stats``: each file's ``SimpleStats`` tested as Paimon's scan does; records the predicate's
    columns' stats beside the decision. Built over every planned file: a primary-key table merging
    on read decides value stats per bucket, across batches."""

    def __init__(self, table, table_schema: TableSchema, predicate: Predicate, pushdowns: Pushdowns,
                 files: Sequence[LiveFile]):
        self.table = table
        self.schema = table_schema
        self.pk = bool(table_schema.primary_keys)
        self.skip_level0 = table_schema.skips_level0
        self.pushdowns = pushdowns
        fields = predicate.fields()
        self.stat_fields = [n for n in table_schema.field_names if n in fields]  # shown beside each decision
        self.stat_types = {n: table_schema.field(n).type for n in self.stat_fields}
        self.bucket_value_ok: dict[str, bool] = {}  # path -> the whole-bucket value filter's answer
        if self.pk and not self.skip_level0:
            opts = table_schema.core_options
            keep_all = not opts.deletion_vectors_enabled and opts.merge_engine in ("partial-update", "aggregation")
            self.bucket_value_ok = whole_bucket_filter(files, self._file_value_ok, keep_all)

    def _file_value_ok(self, lf: LiveFile) -> bool:
        fs = self.table.file_schema(lf)
        return self.value_stats_ok(lf, fs, self.pushdowns(fs))

    def key_stats_ok(self, lf: LiveFile, fs: TableSchema, push: Pushdown) -> bool:
        if push.key_filter is None:
            return True
        keys = [fs.field(k).name for k in fs.trimmed_primary_keys if k in fs.field_names]
        stats = stats_map(lf.file.key_stats, keys, self.schema, fs, push.field_map, lf.file.row_count,
                          only=self.schema.trimmed_primary_keys)
        return test_predicate_on_stats(push.key_filter, lf.file.row_count, stats)

    def value_stats_ok(self, lf: LiveFile, fs: TableSchema, push: Pushdown, stats: dict | None = None) -> bool:
        """The value stats test; ``stats`` when the file's value stats are already at hand."""
        if push.value_filter is None:
            return True
        if stats is None:
            stats = column_stats(lf, self.schema, fs, push.field_map, only=self.stat_fields)
        return test_predicate_on_stats(push.value_filter, lf.file.row_count, stats)

    def decide(self, batch: Batch) -> None:
        for lf, fs, push, record in zip(batch.files, batch.schemas, batch.pushed, batch.records, strict=True):
            if self.pk:
                ok = self.key_stats_ok(lf, fs, push)
                if self.skip_level0:
                    ok = ok and self.value_stats_ok(lf, fs, push)
                else:
                    whole = self.bucket_value_ok.get(lf.path)
                    if whole is not None:
                        ok = ok and whole
                shown = column_stats(lf, self.schema, fs, push.field_map, key_stats=True, only=self.stat_fields)
            else:
                shown = column_stats(lf, self.schema, fs, push.field_map, only=self.stat_fields)
                ok = self.value_stats_ok(lf, fs, push, shown)
            record["stats_decision"] = Decision.of(ok)
            record["stats"] = StatsCells(self.stat_types, shown)


STATS_FILES_SLICE = 4096  # live files made at a time for a statistics frame of every file


def _stats_files(table, plan, snapshot_id: int | None, paths: Sequence[str] | None,
                 limit: int | None) -> Iterable[LiveFile]:
    """The live files a statistics frame reads, in plan order. A few ``paths`` come from the
    table's kept map (shared with the page's other views of them); every file (up to ``limit``)
    is made a slice at a time and not kept: at 100,000 files the kept map held 3.4 KiB per live
    file once the Table page's statistics tab had listed one column of every file."""
    if paths is not None:
        chosen = set(paths)
        planned = [p for p in plan.files.column("path").to_pylist()[:limit] if p in chosen]
        yield from table.live_files_by_path(snapshot_id).many(planned) if planned else ()
        return
    n = plan.num_files if limit is None else min(limit, plan.num_files)
    for lo in range(0, n, STATS_FILES_SLICE):
        yield from plan.live_files(table, range(lo, min(n, lo + STATS_FILES_SLICE)))


def file_stats_frame(table, snapshot_id: int | None = None, columns: Sequence[str] | None = None,
                     paths: Sequence[str] | None = None, limit: int | None = None):
    """Per live file and column: the min, max and null count the manifest records (pandas).

    Read as the stats stage reads them (:func:`column_stats`: value stats mapped by
    field id across schema evolution, key stats for primary keys); ``columns`` / ``paths``
    restrict the columns and files, ``limit`` keeps the first files of the plan (a bound on what
    a page decodes). ``null_count`` None is unknown; a column whose type changed since the file
    was written has no usable statistics (all three None).
    """
    import pandas as pd  # pandas loads only when a frame is asked for

    plan = table.plan_columns(snapshot_id)  # objects for the files asked for only, kept on the table
    schema = table.read_schema(snapshot_id, plan.snapshot)
    wanted = [c for c in schema.field_names if columns is None or c in columns]
    pk = bool(schema.primary_keys)
    ptypes = [f.type for f in schema.partition_fields]
    # one list per column, no dict per row: at 1,000,000 files a dict per row was about 1 GB at once
    cols: dict[str, list] = {k: [] for k in STATS_FRAME_COLUMNS}
    for lf in _stats_files(table, plan, snapshot_id, paths, limit):
        file_schema = table.file_schema(lf)
        shown = stats_json(schema, column_stats(lf, schema, file_schema, key_stats=pk, only=wanted), wanted)
        base = (lf.path.rsplit("/", 1)[-1], partition_text_cached(lf.partition, ptypes, table.caches.labels),
                lf.bucket, lf.file.level, lf.file.row_count, lf.file.schema_id)
        for col, got in shown.items():
            for name, value in zip(STATS_FRAME_COLUMNS, (*base, col, got["min"], got["max"], got["null_count"]),
                                   strict=True):
                cols[name].append(value)
    for name in ("min", "max"):  # as recorded (no float for ints); text when columns or files mix types
        values = cols[name]
        if len({type(v) for v in values if v is not None}) > 1:
            cols[name] = [str(v) if v is not None else v for v in values]
    frame = pd.DataFrame({k: pd.Series(v, dtype=object) if k in ("min", "max") else v for k, v in cols.items()},
                         columns=list(STATS_FRAME_COLUMNS))
    frame["null_count"] = frame["null_count"].astype("Int64")
    return frame


STATS_FRAME_COLUMNS = ("file_name", "partition", "bucket", "level", "row_count", "schema_id", "column", "min", "max",
                       "null_count")
