"""Explain a predicate over a table file by file, the way Paimon's batch read path decides.

Stages, in Paimon's order (``AbstractFileStoreScan`` then ``RawFileSplitRead``):

1. **partition**: the conjuncts that reference only partition keys, tested on the partition
   values.
2. **bucket**: fixed-bucket tables (``bucket`` > 0, default bucket function) whose predicate
   pins every bucket key (``bucket-key``, else the trimmed primary keys) with equal / IN
   literals keep only the buckets those key combinations hash to (``BucketSelectConverter``):
   conjuncts over bucket keys only, each an OR of equal / IN leaves on one key (null literals
   dropped; a key pinned twice keeps the intersection), at most 1,000 combinations; a file's
   bucket is tested against ``abs(hash % total_buckets)`` with the manifest entry's total.
3. **level**: primary-key tables that read without merging (deletion vectors, or the
   ``first-row`` merge engine) skip level-0 files (``batchScanSkipLevel0``).
4. **stats**: ``SimpleStats`` min/max/null counts (``filterByStats``). Append tables test the
   whole predicate on value stats. Primary-key tables test the conjuncts over the trimmed
   primary keys on key stats, and the whole predicate on value stats only where Paimon does:
   per file when level 0 is skipped, else per bucket (``filterWholeBucket*``). Stats of a
   file written under an older schema are mapped by field id; a column the file does not
   have reads as all-null; a column whose type changed is not used (conservative).
5. **index**: the file index as ``FileIndexEvaluator`` decides (embedded in the manifest or
   a ``.index`` file): the selection is every row minus the deletion vector; the result stays
   REMAIN where a bitmap answer holds every row, where the file has more than 2^31-1 rows, or
   where it equals the selection; a bitmap is intersected with the selection (a 64-bit
   deletion vector is subtracted from it), and an empty one is SKIP. Primary-key tables that
   merge on read (no deletion vectors) do not use the file index.

``verify=True`` reads the data and flags every file pruned although it holds a matching row,
and every matching row missing from an index bitmap, naming the leaf columns to blame.
"""

from __future__ import annotations

import dataclasses
import functools
import posixpath
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from operator import attrgetter
from typing import Any

import numpy as np
from pyroaring import BitMap, BitMap64

from indexcore.config import parse_pairs
from indexcore.errors import IndexCoreError, PredicateError
from indexcore.expr import (
    AND,
    Equal,
    In,
    Leaf,
    Predicate,
    and_all,
    conjuncts,
    disjuncts,
    leaves,
    parse_where,
    predicate_to_sql,
)
from indexcore.expr import rename as _rename
from indexcore.expr.functions import FunctionVisitor
from indexcore.expr.rows import row_matches, rows_matching
from indexcore.formats.base import REMAIN, SKIP, BitmapResult, FileIndexResult
from indexcore.formats.binary_row import bucket_of, key_hash
from indexcore.formats.container import read_container
from indexcore.formats.registry import FILE_INDEX_TYPES, index_kind
from indexcore.scan.file_index import FileIndexPredicate, result_to_json
from indexcore.scan.stats import stats_test, test_predicate_on_stats
from indexcore.types import DataType, from_text_or_python, to_json_value, to_json_values
from indexcore.warehouse.model import LiveFile, Problem, TableSchema

MAX_ROWS_32 = 2_147_483_647
MAX_BUCKET_KEY_ROWS = 1000  # Paimon's BucketSelector.MAX_VALUES
Progress = Callable[[int, int, str], None]


# ---------------------------------------------------------------------------------------
# Records


class Decision(StrEnum):
    """One pruning stage's verdict on one file (JSON: the value, ``"REMAIN"`` / ``"SKIP"``)."""

    REMAIN = "REMAIN"
    SKIP = "SKIP"

    @classmethod
    def of(cls, keep: bool) -> Decision:
        return cls.REMAIN if keep else cls.SKIP


class Stage(StrEnum):
    """The funnel's stages in Paimon's order; a file is pruned by at most one of
    PARTITION .. INDEX (its ``skipped_by``). MATCHING is counted only when verifying."""

    ALL = "all"
    PARTITION = "partition"
    BUCKET = "bucket"
    LEVEL = "level"
    STATS = "stats"
    GLOBAL_INDEX = "global_index"  # row-tracking tables with BTree / bitmap global indexes only
    INDEX = "index"
    READ = "read"
    MATCHING = "matching"


#: The funnel's stages without verification, in order.
STAGES: tuple[Stage, ...] = tuple(s for s in Stage if s not in (Stage.MATCHING, Stage.GLOBAL_INDEX))
#: The stages that prune a file before its file index is consulted.
BEFORE_INDEX: tuple[Stage, ...] = (Stage.PARTITION, Stage.BUCKET, Stage.LEVEL, Stage.STATS)
_ORDER = {s: i for i, s in enumerate(Stage)}


@dataclass(frozen=True, eq=False)  # equal as a mapping (to its JSON dict), not field by field
class StatsCells(Mapping):
    """The predicate's columns' min / max / null count as the stats stage read them, per file:
    ``cells[column]`` is ``{"min", "max", "null_count"}`` in JSON values (null count None:
    unknown). The internal values are kept and turned into JSON on access, so deciding 50,000
    files formats none of them; a frame formats a whole column at once (:func:`stats_column`).
    A dataclass of plain values, so a Spark task returns it as it returns the decision."""

    # column -> its type (shared by every file of one explanation)
    types: Mapping[str, DataType] = field(default_factory=dict)
    # column -> (min, max, null count) internal values; a column absent here is unknown
    values: Mapping[str, tuple[Any, Any, int | None]] = field(default_factory=dict)

    def raw(self, column: str) -> tuple[Any, Any, int | None]:
        """(min, max, null count) of ``column`` as internal values (all None when unknown)."""
        if column not in self.types:
            raise KeyError(column)
        return self.values.get(column, (None, None, None))

    def __getitem__(self, column: str) -> dict[str, Any]:
        low, high, nulls = self.raw(column)
        dtype = self.types[column]
        return {"min": to_json_value(dtype, low), "max": to_json_value(dtype, high), "null_count": nulls}

    def __contains__(self, column: object) -> bool:
        return column in self.types

    def __iter__(self):
        return iter(self.types)

    def __len__(self) -> int:
        return len(self.types)

    def __repr__(self) -> str:
        return repr(dict(self))


def stats_column(files: Sequence[FileDecision], column: str) -> dict[str, list]:
    """``min`` / ``max`` (JSON values) and ``null_count`` of ``column`` over ``files``, each
    formatted a column at a time; None where a file has no statistics of it."""
    dtype = next((f.stats.types[column] for f in files if column in f.stats), None)
    raw = [f.stats.raw(column) if column in f.stats else (None, None, None) for f in files]
    out: dict[str, list] = {"null_count": [r[2] for r in raw]}
    for i, key in enumerate(("min", "max")):
        values = [r[i] for r in raw]
        out[key] = values if dtype is None else to_json_values(dtype, values)
    return out


@dataclass(frozen=True)
class FileDecision:
    """What Paimon's read path decides for one data file, stage by stage.

    Decisions are :class:`Decision` values (``bucket_decision`` is REMAIN unless the
    predicate selects buckets); ``raw_index_result`` is what the file index answered
    (REMAIN, SKIP or a :class:`BitmapResult`), ``index_decision`` what the read path
    makes of it. Both are ``None`` when the index was not consulted (pruned earlier).
    ``bytes_read`` counts the file-index bytes read to decide (an embedded index counts its
    bytes from the manifest; 0 where Paimon does not read the index). ``matching_rows``
    (verify) counts the file's rows satisfying the predicate, deletion vector applied.
    ``stats`` holds, per column of the predicate, the min / max / null count the stats stage
    tested (null count None: unknown), so a reader sees why the file was kept or skipped.
    """

    path: str
    partition: dict[str, Any] = field(compare=False, hash=False)
    bucket: int
    level: int
    row_count: int
    partition_decision: Decision
    bucket_decision: Decision
    level_decision: Decision
    stats_decision: Decision
    raw_index_result: FileIndexResult | None
    index_decision: FileIndexResult | None
    index_types: dict[str, list[str]] = field(compare=False, hash=False)
    index_location: str | None
    dv_cardinality: int
    rows_after_dv: int
    bytes_read: int
    matching_rows: int | None = None
    problems: tuple[Problem, ...] = ()
    notes: tuple[str, ...] = ()
    global_index_decision: Decision | None = None  # when the table's global indexes apply
    global_index_rows: int | None = None  # rows of the file the global indexes keep
    requests: int = 0
    file_size: int = 0  # data bytes of the file (the manifest's file_size)
    dv_bytes: int = 0  # bytes of its deletion vector in the DV index file (size prefix and CRC included)
    # the predicate's columns: {"min", "max", "null_count"} as the stats stage read them (JSON values)
    stats: StatsCells = field(default_factory=StatsCells, compare=False, hash=False)
    # the index kinds that could have skipped the file (:func:`pruning_index_types`)
    pruning_index_types: tuple[str, ...] = ()

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> FileDecision:
        """The decision from a record of its fields (defaults filled in), as explain makes one per
        file: set in one step, where the frozen ``__init__`` sets each field through
        ``object.__setattr__`` (a quarter of a second over 50,000 files)."""
        if not _DECISION_REQUIRED <= record.keys() <= _DECISION_FIELDS:
            return cls(**record)  # the dataclass says what is wrong
        out = object.__new__(cls)
        out.__dict__.update(_DECISION_DEFAULTS)
        out.__dict__.update({name: make() for name, make in _DECISION_FACTORIES.items() if name not in record})
        out.__dict__.update(record)
        return out

    @functools.cached_property
    def skipped_by(self) -> Stage | None:
        """The first stage that pruned the file, or None when Paimon reads it (worked out once:
        the funnel asks for it at every stage of every file)."""
        for stage, decision in zip(BEFORE_INDEX, (self.partition_decision, self.bucket_decision,
                                                  self.level_decision, self.stats_decision), strict=True):
            if decision is Decision.SKIP:
                return stage
        if self.global_index_decision is Decision.SKIP:
            return Stage.GLOBAL_INDEX
        if self.index_decision is not None and not self.index_decision.remain():
            return Stage.INDEX
        return None

    @property
    def read(self) -> bool:
        """Paimon's read path reads this file."""
        return self.skipped_by is None

    @property
    def pruned_before_index(self) -> bool:
        """Pruned by partition, bucket, level or stats (its file index is not consulted)."""
        return self.skipped_by in BEFORE_INDEX

    def survives(self, stage: Stage) -> bool:
        """The file is still kept after ``stage`` of the funnel (MATCHING: read and matching)."""
        if stage is Stage.MATCHING:
            return self.read and bool(self.matching_rows)
        skipped = self.skipped_by
        return skipped is None or _ORDER[skipped] > _ORDER[stage]

    def rows_at(self, stage: Stage) -> int:
        """The rows the funnel counts for this file at ``stage`` (when it survives it)."""
        if stage is Stage.MATCHING:
            return self.matching_rows or 0
        if stage is Stage.READ:
            return self.rows_after_dv
        if self.global_index_rows is not None and _ORDER[stage] >= _ORDER[Stage.GLOBAL_INDEX]:
            return self.global_index_rows  # the rows the global indexes dropped stay dropped
        return self.row_count

    def to_json(self, verify: bool = False) -> dict[str, Any]:
        out = {
            "path": self.path,
            "partition": self.partition,
            "bucket": self.bucket,
            "level": self.level,
            "row_count": self.row_count,
            "partition_decision": self.partition_decision.value,
            "bucket_decision": self.bucket_decision.value,
            "level_decision": self.level_decision.value,
            "stats_decision": self.stats_decision.value,
            "global_index_decision": None if self.global_index_decision is None else self.global_index_decision.value,
            "global_index_rows": self.global_index_rows,
            "index_decision": None if self.index_decision is None else result_to_json(self.index_decision),
            "raw_index_result": None if self.raw_index_result is None else result_to_json(self.raw_index_result),
            "index_types": self.index_types,
            "pruning_index_types": list(self.pruning_index_types),
            "index_location": self.index_location,
            "dv_cardinality": self.dv_cardinality,
            "rows_after_dv": self.rows_after_dv,
            "bytes_read": self.bytes_read,
            "requests": self.requests,
            "skipped_by": None if self.skipped_by is None else self.skipped_by.value,
            "file_size": self.file_size,
            "dv_bytes": self.dv_bytes,
            "stats": dict(self.stats),
        }
        if verify:
            out["matching_rows"] = self.matching_rows
        out["problems"] = [p.to_dict() for p in self.problems]
        out["notes"] = list(self.notes)
        return out


# FileDecision's fields: all, those without a default, plain defaults, defaults made by a factory
_DECISION_FIELDS = frozenset(f.name for f in dataclasses.fields(FileDecision))
_DECISION_REQUIRED = frozenset(f.name for f in dataclasses.fields(FileDecision)
                               if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING)
_DECISION_DEFAULTS = {f.name: f.default for f in dataclasses.fields(FileDecision) if f.default is not dataclasses.MISSING}
_DECISION_FACTORIES = {f.name: f.default_factory for f in dataclasses.fields(FileDecision)
                       if f.default_factory is not dataclasses.MISSING}


@dataclass
class Explanation:
    """Per-file decisions, the pruning funnel, verification violations and problems."""

    table: str
    snapshot_id: int | None
    predicate: Predicate
    sql: str
    files: list[FileDecision]
    funnel: dict[str, dict[str, int]]
    violations: list[dict[str, Any]] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    verified: bool = False
    index_used: bool = True
    # storage I/O of the whole explain, the concurrent prefetch included
    bytes_read: int = 0
    requests: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "snapshot": self.snapshot_id,
            "where": self.sql,
            "files": [f.to_json(self.verified) for f in self.files],
            "funnel": self.funnel,
            "violations": list(self.violations),
            "problems": [p.to_dict() for p in self.problems],
            "bytes_read": self.bytes_read,
            "requests": self.requests,
        }

    def _repr_html_(self) -> str:
        from indexcore.warehouse.html import explanation_html

        return explanation_html(self)

    def to_frame(self):
        """One row per file (pandas); decisions as text, a bitmap as ``"N rows"``. Each column of
        the predicate adds ``<column> min`` / ``max`` / ``nulls`` beside ``stats_decision``."""
        import pandas as pd

        def text(result: FileIndexResult | None) -> str | None:
            if result is None:
                return None
            if isinstance(result, BitmapResult):
                return f"{len(result.bitmap)} rows"
            return result.to_json()

        stat_cols = stats_columns(self.files)
        files = self.files
        partitions: dict[tuple, str] = {}  # a few hundred partitions over tens of thousands of files

        def partition(f: FileDecision) -> str:
            key = tuple(f.partition.items())
            hit = partitions.get(key)
            if hit is None:
                hit = partitions[key] = ", ".join(f"{k}={v}" for k, v in key)
            return hit

        n = len(files)

        def ints(name: str) -> np.ndarray:  # typed up front: pandas infers a list slowly
            return np.fromiter(map(attrgetter(name), files), np.int64, n)

        def texts(values: Iterable[str | None]) -> np.ndarray:  # an object array, no shape discovery
            return np.fromiter(values, dtype=object, count=n)

        def decision_texts(name: str) -> np.ndarray:
            return texts(map(_TEXT.get, map(attrgetter(name), files)))

        paths = list(map(attrgetter("path"), files))
        cols: dict[str, Any] = {
            "path": texts(paths), "file": texts(map(posixpath.basename, paths)),
            "partition": texts(partition(f) for f in files), "bucket": ints("bucket"),
            "level": ints("level"), "row_count": ints("row_count"), "file_size": ints("file_size"),
            **{name: decision_texts(name)
               for name in ("partition_decision", "bucket_decision", "level_decision", "stats_decision")}}
        for col in stat_cols:  # as recorded (no float for ints); text where files disagree (NaN as "NaN")
            got = stats_column(files, col)
            for key in ("min", "max"):
                values = got[key]
                mixed = len({type(v) for v in values if v is not None}) > 1
                cols[f"{col} {key}"] = texts(str(v) if mixed and v is not None else v for v in values)
            cols[f"{col} nulls"] = pd.array(got["null_count"], dtype="Int64")
        cols.update({
            "global_index_decision": decision_texts("global_index_decision"),
            "global_index_rows": list(map(attrgetter("global_index_rows"), files)),
            "raw_index_result": texts(map(text, map(attrgetter("raw_index_result"), files))),
            "index_decision": texts(map(text, map(attrgetter("index_decision"), files))),
            "index_types": texts("; ".join(f"{c}: {', '.join(t)}" for c, t in f.index_types.items())
                                 if f.index_types else "" for f in files),
            "dv_cardinality": ints("dv_cardinality"), "rows_after_dv": ints("rows_after_dv"),
            "bytes_read": ints("bytes_read"), "dv_bytes": ints("dv_bytes"),
            "matching_rows": list(map(attrgetter("matching_rows"), files)),
            "skipped_by": decision_texts("skipped_by"),
            "problems": np.fromiter(map(len, map(attrgetter("problems"), files)), np.int64, n)})
        return pd.DataFrame(cols)


# enum members as their text: ``member.value`` is a Python-level descriptor, and a frame of 50,000
# files reads a quarter of a million of them
_TEXT: dict[Any, str | None] = {None: None, **{m: m.value for m in (*Decision, *Stage)}}


def stats_columns(files: Iterable[FileDecision]) -> list[str]:
    """The columns whose statistics the files carry, in first-seen order."""
    out: dict[str, None] = {}
    for types in {id(f.stats.types): f.stats.types for f in files}.values():  # shared by one explanation's files
        out.update(dict.fromkeys(types))
    return list(out)


# ---------------------------------------------------------------------------------------
# Predicate plumbing


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
    hit = _SLOTS.get(key)
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
    if len(_SLOTS) >= 256:
        _SLOTS.clear()
    _SLOTS[key] = (table_schema, file_schema, tuple(slots))
    return _SLOTS[key][2]


# (id(table schema), id(file schema), layout, columns) -> (the schemas, their slots); schemas never change
_SLOTS: dict[tuple, tuple] = {}


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


def parse_partition(table_schema: TableSchema, partition: Mapping[str, Any] | str | None) -> dict[str, Any] | None:
    """``{"k": v}`` or ``"k=v,k2=v2"`` as internal partition values (the default name is null)."""
    if partition is None:
        return None
    if isinstance(partition, str):
        partition = parse_pairs([p for p in partition.split(",") if p.strip()], "a partition", PredicateError)
    default = table_schema.core_options.partition_default_name
    out = {}
    for key, value in partition.items():
        if key not in table_schema.partition_keys:
            raise PredicateError(f"{key!r} is not a partition key of the table "
                                 f"(partition keys: {', '.join(table_schema.partition_keys) or 'none'})")
        dtype = table_schema.field(key).type
        out[key] = None if value is None or value == default else from_text_or_python(dtype, value)
    return out


# ---------------------------------------------------------------------------------------
# The bucket decision


@dataclass(frozen=True)
class BucketSelector:
    """The bucket-key rows a predicate pins; a fixed bucket is kept when one of them hashes to it."""

    bucket_keys: tuple[str, ...]
    key_rows: tuple[tuple, ...]
    hashes: tuple[int, ...]

    def buckets(self, total_buckets: int) -> frozenset[int]:
        """The buckets kept among ``total_buckets`` (``abs(hash % total)`` per key row)."""
        return frozenset(bucket_of(h, total_buckets) for h in self.hashes)


def bucket_selector(schema: TableSchema, predicate: Predicate) -> BucketSelector | None:
    """Paimon's ``BucketSelectConverter`` / ``BucketSelector``: the bucket-key combinations
    ``predicate`` allows, or None when it does not select buckets (no pruning)."""
    if schema.bucket <= 0:
        return None
    if schema.core_options.bucket_function_type != "default":
        return None
    keys = tuple(schema.bucket_keys)
    if not keys or any(k not in schema.field_names for k in keys):
        return None
    if not set(keys) <= predicate.fields():
        return None
    values: dict[str, list] = {}
    for conjunct in conjuncts(predicate):
        if not conjunct.fields() <= set(keys):
            continue  # pickTransformFieldMapping keeps conjuncts over bucket keys only
        field_name: str | None = None
        found: list = []
        for leaf in disjuncts(conjunct):
            if not isinstance(leaf, Leaf) or not isinstance(leaf.function, Equal | In) or \
                    (field_name is not None and leaf.field != field_name):
                break
            field_name = leaf.field
            found.extend(v for v in leaf.literals if v is not None)
        else:
            if field_name is None:
                continue
            if field_name in values:  # pinned again: keep the intersection
                values[field_name] = [v for v in values[field_name] if v in found]
                if not values[field_name]:
                    return None  # contradictory: Paimon does not prune buckets then
            else:
                values[field_name] = found
    rows: list[tuple] = [()]
    for k in keys:
        if k not in values:
            return None
        if len(rows) * len(values[k]) > MAX_BUCKET_KEY_ROWS:
            return None
        rows = [row + (v,) for row in rows for v in values[k]]
    types = [schema.field(k).type for k in keys]
    try:
        hashes = tuple(key_hash(row, types) for row in rows)
    except (IndexCoreError, TypeError, ValueError, OverflowError, ArithmeticError, AttributeError):
        return None  # a literal that is no value of the key's type: no pruning
    return BucketSelector(keys, tuple(rows), hashes)


# ---------------------------------------------------------------------------------------
# The index decision


def read_path_result(raw: FileIndexResult, row_count: int, deleted: Any = None,
                     bitmap64: bool = False) -> FileIndexResult:
    """``FileIndexEvaluator``: what the read path makes of the index's answer for one file.

    ``deleted`` holds the deletion vector's positions (None: no deletion vector).
    """
    result = raw
    if isinstance(raw, BitmapResult):
        if row_count > MAX_ROWS_32 or len(raw.bitmap) == row_count:
            return REMAIN
        if deleted is not None and bitmap64:
            # Paimon's conservative fallback (apache/paimon#9141): row positions are 32-bit,
            # so a 64-bit deletion vector is never combined with the index bitmap.
            return REMAIN
        selection = BitMap(range(row_count))
        if deleted is not None:
            selection -= deleted if isinstance(deleted, BitMap) else BitMap(p for p in deleted if p < row_count)
        result = BitmapResult(raw.bitmap & selection)
        if result.bitmap == selection:
            return REMAIN
    if not result.remain():
        return SKIP
    return result


class _MethodName(FunctionVisitor):
    """Answers a leaf with the name of the reader method its function calls (None: calls none)."""

    def unanswered(self) -> None:
        return None


for _name in [n for n in vars(FunctionVisitor) if n.startswith("visit_")]:
    setattr(_MethodName, _name, lambda self, *_, _n=_name: _n)


@functools.cache
def _kind_answers(index_type: str, method: str | None) -> bool:
    """Whether the reader of ``index_type`` implements ``method`` (else it answers REMAIN)."""
    if method is None or index_type not in FILE_INDEX_TYPES:
        return False
    cls = index_kind(index_type).reader
    return getattr(cls, method) is not getattr(FunctionVisitor, method)


def pruning_index_types(predicate: Predicate | None, index_types: Mapping[str, Sequence[str]]) -> tuple[str, ...]:
    """The file's index kinds that could skip it under ``predicate`` (file column names), by
    :class:`FileIndexPredicate`'s folding: a leaf is answered by the kinds on its column whose
    reader implements its function; AND by any answered child; OR only when every child is.
    Empty when the indexes cannot skip the file (e.g. an OR branch on an unindexed column)."""
    def kinds(p: Predicate) -> set[str] | None:
        if isinstance(p, Leaf):
            if p.null_false():
                return set()
            method = p.function.visit(_MethodName(), p.literals)
            found = {t for t in index_types.get(p.field, ()) if _kind_answers(t, method)}
            return found or None
        answers = [kinds(c) for c in p.children]
        if p.function is AND:
            known = [k for k in answers if k is not None]
            return set().union(*known) if known else None
        return None if any(k is None for k in answers) else set().union(*answers)

    found = kinds(predicate) if predicate is not None else None
    return tuple(sorted(found or ()))


def container_index_types(container) -> dict[str, list[str]]:
    """Column -> the index kinds a file-index container holds for it, in file order."""
    out: dict[str, list[str]] = {}
    for e in container.head.entries:
        out.setdefault(e.column, []).append(e.index_type)
    return out


# ---------------------------------------------------------------------------------------
# Explain


class _Explainer:
    def __init__(self, table, predicate: Predicate, table_schema: TableSchema, verify: bool,
                 all_files: bool, kept: bool = False):
        self.table = table
        self.kept = kept  # file indexes through the table's kept heads and readers (Table.index_container)
        self.storage = table.storage
        self.predicate = predicate
        self.schema = table_schema
        self.verify = verify
        self.all_files = all_files
        opts = table_schema.core_options
        self.pk = bool(table_schema.primary_keys)
        self.dv_enabled = opts.deletion_vectors_enabled
        self.merge_engine = opts.merge_engine
        self.skip_level0 = table_schema.skips_level0
        self.index_enabled = opts.file_index_read_enabled
        # Paimon reads a PK table through the file index only when it reads raw files (DV).
        self.index_at_read = self.index_enabled and (not self.pk or self.dv_enabled)
        self.parts = conjuncts(predicate)
        pkeys = set(table_schema.partition_keys)
        self.partition_filter = and_all([c for c in self.parts if c.fields() <= pkeys]) if pkeys else None
        self.partition_ok: dict[str, bool] = {}  # data file path -> partition filter answer
        trimmed = set(table_schema.trimmed_primary_keys)
        self.key_parts = [c for c in self.parts if c.fields() <= trimmed] if self.pk else []
        self.bucket_selector = bucket_selector(table_schema, predicate)
        self._selected: dict[int, frozenset[int]] = {}
        self.global_scan = None  # evaluate.global_index.GlobalIndexScan, set by decide_files
        fields = predicate.fields()
        self.stat_fields = [n for n in table_schema.field_names if n in fields]  # shown beside each decision
        self.stat_types = {n: table_schema.field(n).type for n in self.stat_fields}
        # id(file schema) -> (it, field map, index predicate, value stats predicate, key stats predicate)
        self._pushed: dict[int, tuple] = {}

    def file_schema(self, lf: LiveFile, problems: list) -> TableSchema:
        return self.table.file_schema(lf, problems)

    def bucket_ok(self, lf: LiveFile) -> bool:
        """The bucket stage: the file's bucket is among those the predicate selects."""
        if self.bucket_selector is None:
            return True
        total = lf.total_buckets if lf.total_buckets and lf.total_buckets > 0 else self.schema.bucket
        if total not in self._selected:
            self._selected[total] = self.bucket_selector.buckets(total)
        return lf.bucket in self._selected[total]

    # -- stats ----------------------------------------------------------------------------
    def key_stats_ok(self, lf: LiveFile, fs: TableSchema, fmap) -> bool:
        pred = self._pushed_for(fs)[4]
        if pred is None:
            return True
        keys = [fs.field(k).name for k in fs.trimmed_primary_keys if k in fs.field_names]
        stats = stats_map(lf.file.key_stats, keys, self.schema, fs, fmap, lf.file.row_count,
                          only=self.schema.trimmed_primary_keys)
        return test_predicate_on_stats(pred, lf.file.row_count, stats)

    def value_stats(self, lf: LiveFile, fs: TableSchema, fmap) -> dict:
        return column_stats(lf, self.schema, fs, fmap, only=self.stat_fields)

    def value_stats_ok(self, lf: LiveFile, fs: TableSchema, fmap, stats: dict | None = None) -> bool:
        """The value stats stage; ``stats`` when :meth:`value_stats` of the file is already at hand."""
        pred = self._pushed_for(fs)[3]
        if pred is None:
            return True
        return test_predicate_on_stats(pred, lf.file.row_count,
                                       self.value_stats(lf, fs, fmap) if stats is None else stats)

    # -- index ----------------------------------------------------------------------------
    def evaluator(self, lf: LiveFile, fs: TableSchema) -> tuple[FileIndexPredicate | None, dict, str | None]:
        embedded = lf.file.embedded_index is not None
        if not embedded and not lf.index_path:
            return None, {}, None
        if self.kept:
            container = self.table.index_container(lf)
        else:
            container = read_container(self.table.file_index_source(lf))
            container.prefetch(self.predicate.fields())
        location = "embedded" if embedded else "file"
        return FileIndexPredicate(container, fs.row_type()), container_index_types(container), location

    def deleted(self, lf: LiveFile, problems: list) -> Any:
        if lf.deletion_vector is None:
            return None
        try:
            dv = self.table.deletion_vector(lf)
        except IndexCoreError as exc:
            problems.append(Problem(lf.dv_file_path or lf.path, "deletion vector", exc.message))
            return None
        return None if dv is None else dv.positions

    # -- one file ---------------------------------------------------------------------------
    def pushed_down(self, fs: TableSchema) -> tuple[dict[str, str | None], Predicate | None]:
        """The table-to-file field map and the predicate pushed to the file index, per file schema
        (the same for every file written with it, so worked out once per explanation)."""
        hit = self._pushed_for(fs)
        return hit[1], hit[2]

    def _pushed_for(self, fs: TableSchema) -> tuple:
        """(file schema, field map, index predicate, value stats predicate, key stats predicate)."""
        hit = self._pushed.get(id(fs))
        if hit is None or hit[0] is not fs:
            fmap = field_map(self.schema, fs)
            hit = self._pushed[id(fs)] = (fs, fmap, and_all(devolved(self.parts, fmap)),
                                          and_all(unsafe_filtered(self.parts, fmap)),
                                          and_all(unsafe_filtered(self.key_parts, fmap)))
        return hit

    def decide(self, lf: LiveFile, bucket_value_ok: bool | None) -> tuple[dict, Any]:
        problems: list[Problem] = []
        notes: list[str] = []
        fs = self.file_schema(lf, problems)
        fmap, index_pred = self.pushed_down(fs)
        f = lf.file

        partition_ok = self.partition_filter is None or bool(self.partition_ok[lf.path])
        bucket_ok = self.bucket_ok(lf)
        if not bucket_ok:
            keys = ", ".join(self.bucket_selector.bucket_keys)
            notes.append(f"bucket {lf.bucket} of {lf.total_buckets or self.schema.bucket} holds none of "
                         f"the selected bucket keys ({keys})")
        level_ok = not (self.skip_level0 and f.level == 0)
        if not level_ok:
            notes.append("level-0 file: not read by a batch scan that skips level 0")
        shown = None  # the predicate's columns' stats, read once for the decision and the record
        if self.pk:
            stats_ok = self.key_stats_ok(lf, fs, fmap)
            if self.skip_level0:
                stats_ok = stats_ok and self.value_stats_ok(lf, fs, fmap)
            elif bucket_value_ok is not None:
                stats_ok = stats_ok and bucket_value_ok
        else:
            shown = self.value_stats(lf, fs, fmap)
            stats_ok = self.value_stats_ok(lf, fs, fmap, shown)

        dv_range = lf.deletion_vector
        deleted = None
        need_dv = dv_range is not None and (self.verify or dv_range.cardinality is None)
        if need_dv:
            deleted = self.deleted(lf, problems)
        dv_card = dv_range.cardinality if dv_range is not None and dv_range.cardinality is not None \
            else (len(deleted) if deleted is not None else 0)

        raw = decision = None
        index_types: dict[str, list[str]] = {}
        pruning: tuple[str, ...] = ()
        location = None
        bytes_read = requests = 0
        evaluator = None
        consult = partition_ok and bucket_ok and level_ok and stats_ok
        if lf.has_file_index and (consult or self.all_files):
            before, before_requests = self.storage.stats.bytes_served, self.storage.stats.requests
            try:
                if index_pred is None:
                    raw = REMAIN
                    notes.append("no conjunct can be pushed to this file's index")
                else:
                    evaluator, index_types, location = self.evaluator(lf, fs)
                    raw = REMAIN if evaluator is None else evaluator.evaluate(index_pred)
                    if self.index_at_read:
                        pruning = pruning_index_types(index_pred, index_types)
                if isinstance(raw, BitmapResult) and dv_range is not None and deleted is None:
                    deleted = self.deleted(lf, problems)
                decision = read_path_result(raw, f.row_count, deleted, lf.bitmap64)
                if not self.index_at_read:
                    notes.append("file-index.read.enabled is false" if not self.index_enabled else
                                 "merge read: Paimon does not use the file index for this file")
                    decision = REMAIN
            except IndexCoreError as exc:
                where = lf.index_path or f"{lf.path} (embedded file index)"
                problems.append(Problem(where, exc.structure or "file index", exc.message))
                notes.append("file index unreadable: decision REMAIN (Paimon would fail or read the file)")
                raw = decision = REMAIN
                evaluator = None
                pruning = ()
            bytes_read = self.storage.stats.bytes_served - before if self.index_at_read else 0
            requests = self.storage.stats.requests - before_requests if self.index_at_read else 0
        elif consult:  # no file index: FileIndexEvaluator answers REMAIN
            decision = REMAIN

        if isinstance(decision, BitmapResult):
            rows_after_dv = len(decision.bitmap)
        else:
            rows_after_dv = max(f.row_count - dv_card, 0)
        global_decision = global_rows = kept = None
        if self.global_scan is not None and f.first_row_id is not None:
            kept = self.global_scan.kept_positions(f.first_row_id, f.row_count)
            global_rows = len(kept)
            global_decision = Decision.of(global_rows > 0)
            if global_rows < f.row_count:
                notes.append(f"global index keeps {global_rows} of {f.row_count} rows (row ids "
                             f"{f.first_row_id}..{f.first_row_id + f.row_count - 1})")
            rows_after_dv = min(rows_after_dv, global_rows)
        if shown is None:
            shown = column_stats(lf, self.schema, fs, fmap, key_stats=self.pk, only=self.stat_fields)
        record = dict(
            path=lf.path, partition=dict(lf.partition_spec), bucket=lf.bucket, level=f.level,
            row_count=f.row_count, partition_decision=Decision.of(partition_ok),
            bucket_decision=Decision.of(bucket_ok), level_decision=Decision.of(level_ok),
            stats_decision=Decision.of(stats_ok),
            raw_index_result=raw, index_decision=decision, index_types=index_types,
            index_location=location, dv_cardinality=dv_card, rows_after_dv=rows_after_dv,
            bytes_read=bytes_read, requests=requests, problems=problems, notes=notes,
            global_index_decision=global_decision, global_index_rows=global_rows, file_size=f.file_size,
            dv_bytes=dv_range.length + 8 if dv_range is not None else 0,
            stats=StatsCells(self.stat_types, shown), pruning_index_types=pruning)
        return record, (fs, fmap, evaluator, deleted, kept)

    # -- verify -------------------------------------------------------------------------------
    def positions(self, lf: LiveFile, fs: TableSchema, pred: Predicate) -> BitMap:
        from indexcore.warehouse.data import matching_positions

        return matching_positions(self.storage, lf, fs, self.schema, pred)

    def verify_file(self, lf: LiveFile, record: dict, ctx: tuple, violations: list) -> None:
        fs, fmap, evaluator, deleted, kept = ctx
        problems = record["problems"]
        if lf.deletion_vector is not None and deleted is None:
            deleted = self.deleted(lf, problems)
        try:
            match = self.positions(lf, fs, self.predicate)
        except IndexCoreError as exc:
            problems.append(Problem(lf.path, exc.structure or "data file", exc.message))
            return
        visible = match - deleted if deleted is not None else match
        record["matching_rows"] = len(visible)
        if not visible:
            return
        path = lf.path
        n = len(visible)
        if record["partition_decision"] is Decision.SKIP:
            cols = self.culprits(lf, fs, deleted, lambda leaf: row_matches(leaf, lf.partition_spec, self.schema),
                                 set(self.schema.partition_keys))
            violations.append(_violation(path, cols, f"partition filter pruned a file with {n} matching rows"))
        if record["bucket_decision"] is Decision.SKIP:
            cols = list(self.bucket_selector.bucket_keys) if self.bucket_selector else []
            violations.append(_violation(path, cols, f"bucket filter pruned a file with {n} matching rows"))
        if record["stats_decision"] is Decision.SKIP:
            stats = column_stats(lf, self.schema, fs, fmap, key_stats=self.pk)
            cols = self.culprits(lf, fs, deleted, lambda leaf: leaf.field not in stats or stats_test(
                leaf, lf.file.row_count, *stats[leaf.field]), None)
            violations.append(_violation(path, cols, f"stats pruned a file with {n} matching rows"))
        if kept is not None:
            lost = BitMap64(visible) - kept
            if lost:
                used = {g.field.name for g in self.global_scan.used}
                cols = sorted({leaf.field for leaf in leaves(self.predicate) if leaf.field in used})
                violations.append(_violation(path, cols, f"global index drops {len(lost)} of {n} matching rows "
                                                         f"(first positions: {list(lost)[:10]})"))
        for what, result in (("index answer", record["raw_index_result"]), ("index decision",
                                                                            record["index_decision"])):
            if result is None:
                continue
            if isinstance(result, BitmapResult):
                missing = visible - result.bitmap
            elif not result.remain():
                missing = visible
            else:
                continue
            if not missing:
                continue
            cols = self.index_culprits(lf, fs, fmap, evaluator, deleted)
            violations.append(_violation(
                path, cols, f"{what} drops {len(missing)} of {n} matching rows "
                            f"(first positions: {list(missing)[:10]})"))
            break

    def culprits(self, lf, fs, deleted, passes: Callable[[Leaf], bool], fields: set | None) -> list[str]:
        """Leaf columns whose own test said 'no row' although a visible row satisfies the leaf."""
        cols = []
        for leaf in leaves(self.predicate):
            if fields is not None and leaf.field not in fields:
                continue
            if passes(leaf):
                continue
            try:
                hits = self.positions(lf, fs, leaf)
            except IndexCoreError:
                continue
            if deleted is not None:
                hits = hits - deleted
            if hits and leaf.field not in cols:
                cols.append(leaf.field)
        return cols

    def index_culprits(self, lf, fs, fmap, evaluator, deleted) -> list[str]:
        if evaluator is None:
            return []
        cols = []
        for leaf in leaves(self.predicate):
            renamed = devolved([leaf], fmap)
            if not renamed:
                continue
            try:
                answer = evaluator.evaluate(renamed[0])
                hits = self.positions(lf, fs, leaf)
            except IndexCoreError:
                continue
            if deleted is not None:
                hits = hits - deleted
            lost = hits - answer.bitmap if isinstance(answer, BitmapResult) else (
                hits if not answer.remain() else BitMap())
            if lost and leaf.field not in cols:
                cols.append(leaf.field)
        return cols


def _violation(path: str, cols: list[str], reason: str) -> dict[str, Any]:
    return {"path": path, "column": ", ".join(cols) if cols else None, "reason": reason}


def _bucket_value_filter(ex: _Explainer, files: list[LiveFile]) -> dict[str, bool]:
    """Primary-key tables merging on read: ``filterWholeBucketPerFile`` / ``AllFiles`` by value stats."""
    out: dict[str, bool] = {}
    if not ex.pk or ex.skip_level0:
        return out
    groups: dict[tuple, list[LiveFile]] = {}
    for lf in files:
        groups.setdefault((lf.partition, lf.bucket), []).append(lf)
    keep_all = not ex.dv_enabled and ex.merge_engine in ("partial-update", "aggregation")
    for group in groups.values():
        per_file = {}
        for lf in group:
            fs = ex.table.file_schema(lf)
            per_file[lf.path] = ex.value_stats_ok(lf, fs, field_map(ex.schema, fs))
        levels = {lf.file.level for lf in group}
        no_overlap = len(group) <= 1 or (0 not in levels and len(levels) == 1)
        if no_overlap:
            out.update(per_file)
        else:
            keep = keep_all or any(per_file.values())
            out.update({p: keep for p in per_file})
    return out


#: The counts each funnel stage carries: kept after the stage, skipped by it, index I/O spent in it.
FUNNEL_KEYS = ("files", "rows", "bytes", "files_skipped", "rows_skipped", "bytes_skipped",
               "index_bytes", "index_requests")


def funnel(files: Iterable[FileDecision], verified: bool,
           global_index_io: tuple[int, int] = (0, 0)) -> dict[str, dict[str, int]]:
    """The pruning funnel: per stage, the files, rows and data bytes still kept after it, those
    it skipped, and the index bytes (and requests) read to decide it (``matching`` when verified).

    ``files`` / ``rows`` / ``bytes`` are kept after the stage; ``*_skipped`` are what the stage
    took away from what entered it (the files it pruned with their rows and bytes, plus rows
    dropped inside kept files: global index, index bitmaps and deletion vectors at ``read``), so
    kept + skipped equals what the stage before kept. Data bytes count whole files (a file read
    is read whole at most). Index bytes: the file indexes at ``index``, the global indexes at
    ``global_index`` (``global_index_io``: bytes and requests), the deletion vectors of the files
    read at ``read``.

    The one aggregation of per-file decisions: explain applies it to its files, the Spark
    evaluate job to the decisions its tasks return.
    """
    files = list(files)
    stages = STAGES + ((Stage.MATCHING,) if verified else ())
    if any(f.global_index_decision is not None for f in files):  # a row-tracking table with global indexes
        stages = stages[:STAGES.index(Stage.INDEX)] + (Stage.GLOBAL_INDEX,) + stages[STAGES.index(Stage.INDEX):]
    out = {s.value: dict.fromkeys(FUNNEL_KEYS, 0) for s in stages}
    n = len(stages)
    position = {s: i for i, s in enumerate(stages)}
    # per stage: files, rows, bytes kept; files, rows, bytes skipped (summed here, put in ``out`` below)
    kept_files, kept_rows, kept_bytes = [0] * n, [0] * n, [0] * n
    gone_files, gone_rows, gone_bytes = [0] * n, [0] * n, [0] * n
    # a file pruned up to the stats stage keeps its row count at each stage before (rows_at): those
    # files, most of a selective predicate's, are summed by the stage that cut them and spread below
    early = position[Stage.STATS] + 1
    cut_files, cut_rows, cut_bytes = [0] * early, [0] * early, [0] * early
    index_bytes = index_requests = dv_bytes = dv_requests = 0
    for f in files:
        # a file survives every stage before the one that prunes it (none prunes at Stage.ALL)
        cut = n if f.skipped_by is None else position[f.skipped_by]
        if verified and cut == n and not f.survives(Stage.MATCHING):
            cut -= 1  # read, but no row matches
        size = f.file_size
        index_bytes += f.bytes_read
        index_requests += f.requests
        if cut < early:
            cut_files[cut] += 1
            cut_rows[cut] += f.row_count
            cut_bytes[cut] += size
            continue
        before = f.rows_at(Stage.ALL)
        for i in range(cut):
            now = f.rows_at(stages[i])
            kept_files[i] += 1
            kept_rows[i] += now
            kept_bytes[i] += size
            gone_rows[i] += before - now
            before = now
        if cut < n:
            gone_files[cut] += 1
            gone_rows[cut] += before
            gone_bytes[cut] += size
        if f.read and f.dv_bytes:
            dv_bytes += f.dv_bytes
            dv_requests += 1
    for cut in range(early):
        gone_files[cut] += cut_files[cut]
        gone_rows[cut] += cut_rows[cut]
        gone_bytes[cut] += cut_bytes[cut]
        for i in range(cut):
            kept_files[i] += cut_files[cut]
            kept_rows[i] += cut_rows[cut]
            kept_bytes[i] += cut_bytes[cut]
    for i, s in enumerate(stages):
        out[s.value].update(files=kept_files[i], rows=kept_rows[i], bytes=kept_bytes[i], files_skipped=gone_files[i],
                            rows_skipped=gone_rows[i], bytes_skipped=gone_bytes[i])
    out[Stage.INDEX.value].update(index_bytes=index_bytes, index_requests=index_requests)
    out[Stage.READ.value].update(index_bytes=dv_bytes, index_requests=dv_requests)
    if Stage.GLOBAL_INDEX.value in out:
        out[Stage.GLOBAL_INDEX.value]["index_bytes"], out[Stage.GLOBAL_INDEX.value]["index_requests"] = \
            global_index_io
    return out


def file_order(lf: LiveFile) -> tuple:
    """The order explain lists files in: partition, bucket, highest level first, path."""
    return str(lf.partition), lf.bucket, -lf.file.level, lf.path


def bind_predicate(table, schema: TableSchema, predicate_or_sql: Predicate | str) -> tuple[Predicate, str]:
    """The predicate over ``schema`` and its SQL text; an unknown column is a :class:`PredicateError`."""
    if isinstance(predicate_or_sql, str):
        sql = predicate_or_sql
        predicate = parse_where(sql, schema.row_type())
    else:
        predicate = predicate_or_sql
        sql = predicate_to_sql(predicate, schema.row_type())
    unknown = predicate.fields() - set(schema.field_names)
    if unknown:
        raise PredicateError(f"unknown column(s) {', '.join(sorted(unknown))} in table {table.name}")
    return predicate, sql


def explain(table, predicate_or_sql: Predicate | str, snapshot_id: int | None = None,
            partition: Mapping[str, Any] | str | None = None, bucket: int | None = None,
            verify: bool = False, progress: Progress | None = None, all_files: bool = False,
            paths: Sequence[str] | None = None) -> Explanation:
    """Explain ``predicate_or_sql`` over the live files of a snapshot (latest by default).

    ``partition`` / ``bucket`` restrict which files are explained (not a pruning stage).
    ``all_files`` consults the file index even for files pruned earlier (its bytes are counted
    in ``bytes_read`` but the funnel stays Paimon's). ``paths`` restricts to these data files.
    Unreadable parts become problems; nothing here raises for a bad file.
    """
    plan = table.plan(snapshot_id)
    schema = table.read_schema(snapshot_id, plan.snapshot)
    predicate, sql = bind_predicate(table, schema, predicate_or_sql)
    wanted = parse_partition(schema, partition)
    files = list(plan.files)
    if wanted:
        files = [lf for lf in files if all(lf.partition_spec.get(k) == v for k, v in wanted.items())]
    if bucket is not None:
        files = [lf for lf in files if lf.bucket == int(bucket)]
    if paths is not None:
        chosen = set(paths)
        files = [lf for lf in files if lf.path in chosen]
    out = explain_files(table, predicate, files, schema=schema, verify=verify, progress=progress,
                        all_files=all_files, snapshot_id=plan.snapshot.id if plan.snapshot else None)
    out.sql = sql
    out.problems[:0] = plan.problems
    return out


@dataclass
class FileDecisions:
    """The decisions over some planned files and the violations verify found among them:
    what one Spark task of the evaluate job returns (picklable)."""

    files: list[FileDecision]
    violations: list[dict[str, Any]]
    index_used: bool
    problems: list[Problem] = field(default_factory=list)  # not tied to one file (global indexes)
    # storage I/O of deciding them, the concurrent prefetch included
    bytes_read: int = 0
    requests: int = 0
    # bytes and requests of the global index scan (its own stage of the funnel)
    global_index_bytes: int = 0
    global_index_requests: int = 0


def decide_files(table, predicate: Predicate, files: Sequence[LiveFile], schema: TableSchema,
                 verify: bool = False, all_files: bool = False,
                 progress: Progress | None = None, snapshot_id: int | None = None,
                 global_indexes: bool = False, kept: bool = False) -> FileDecisions:
    """The per-file decision: every stage for each of ``files``, in :func:`file_order`.

    ``predicate`` is bound to ``schema`` (the table schema the read goes through); ``files``
    are planned live files (a primary-key bucket passed whole: its files decide stats
    together). ``table`` is only read from (schemas, file indexes, deletion vectors, data).
    ``global_indexes`` adds the global index stage of row-tracking tables (the snapshot's
    BTree / bitmap global indexes narrow each file's row range). ``kept`` reads file indexes
    through the table's kept heads and readers (:meth:`Table.index_container`): for trying many
    predicates on the same files, whose index bytes then count only what was not read before.
    """
    files = sorted(files, key=file_order)
    io_before = table.storage.stats.snapshot()
    ex = _Explainer(table, predicate, schema, verify, all_files, kept)
    if ex.partition_filter is not None:  # one vectorized pass over every file's partition
        ex.partition_ok = dict(zip([lf.path for lf in files], rows_matching(
            ex.partition_filter, [lf.partition_spec for lf in files], schema), strict=True))
    bucket_ok = _bucket_value_filter(ex, files)
    violations: list[dict[str, Any]] = []
    decisions: list[FileDecision] = []
    loose: list[Problem] = []
    global_io = (0, 0)
    if global_indexes and any(lf.file.first_row_id is not None for lf in files):
        from indexcore.scan.global_index import global_index_scan

        stats = table.storage.stats
        served, asked = stats.bytes_served, stats.requests
        try:
            ex.global_scan = global_index_scan(table, predicate, snapshot_id)
        except IndexCoreError as exc:
            loose.append(Problem(table.path, exc.structure or "global index", exc.message))
        global_io = (stats.bytes_served - served, stats.requests - asked)
        if ex.global_scan is not None:
            loose.extend(ex.global_scan.problems)
    ptypes = {f.name: f.type for f in schema.partition_fields}
    partitions: dict[tuple, dict] = {}  # partition values -> their JSON form (a few hundred over 50,000 files)
    for i, lf in enumerate(table.iter_prefetched(files, index=ex.index_enabled, data=verify)):
        record, ctx = ex.decide(lf, bucket_ok.get(lf.path))
        if verify:
            ex.verify_file(lf, record, ctx, violations)
        spec = record["partition"]
        try:
            key = tuple(spec.items())
            as_json = partitions.get(key)
        except TypeError:  # a value that cannot be a key
            key = as_json = None
        if as_json is None:
            as_json = {k: (None if v is None or k not in ptypes else to_json_value(ptypes[k], v))
                       for k, v in spec.items()}
            if key is not None:
                partitions[key] = as_json
        record["partition"] = dict(as_json)
        record["problems"] = tuple(record["problems"])
        record["notes"] = tuple(record["notes"])
        decisions.append(FileDecision.from_record(record))
        if progress is not None:
            progress(i + 1, len(files), posixpath.basename(lf.path))
    return FileDecisions(decisions, violations, ex.index_at_read, loose,
                         table.storage.stats.bytes_read - io_before[0], table.storage.stats.requests - io_before[1],
                         *global_io)


def explanation(table_name: str, snapshot_id: int | None, predicate: Predicate, sql: str,
                parts: Iterable[FileDecisions], verified: bool,
                planned: Sequence[LiveFile] = ()) -> Explanation:
    """An :class:`Explanation` from decided parts (one, or one per Spark task): the funnel by
    :func:`funnel`, the files' problems; files and violations in :func:`file_order` of
    ``planned`` when parts come from several tasks."""
    parts = list(parts)
    files = [f for part in parts for f in part.files]
    violations = [v for part in parts for v in part.violations]
    if planned:
        rank = {lf.path: i for i, lf in enumerate(sorted(planned, key=file_order))}
        files.sort(key=lambda f: rank.get(f.path, len(rank)))
        violations.sort(key=lambda v: rank.get(v["path"], len(rank)))
    return Explanation(table=table_name, snapshot_id=snapshot_id, predicate=predicate, sql=sql, files=files,
                       funnel=funnel(files, verified, (sum(p.global_index_bytes for p in parts),
                                                       sum(p.global_index_requests for p in parts))),
                       violations=violations,
                       problems=[p for part in parts for p in part.problems] + [p for f in files for p in f.problems],
                       verified=verified,
                       index_used=all(part.index_used for part in parts),
                       bytes_read=sum(part.bytes_read for part in parts),
                       requests=sum(part.requests for part in parts))


def explain_files(table, predicate: Predicate | str, files: Sequence[LiveFile], schema: TableSchema | None = None,
                  verify: bool = False, progress: Progress | None = None, all_files: bool = False,
                  snapshot_id: int | None = None, kept: bool = False) -> Explanation:
    """Explain ``predicate`` over already planned live files, without planning the table.

    ``schema`` is the table schema the predicate and stats are read through (default: the
    latest). A primary-key bucket should be passed whole: its files decide stats together.
    Only the files' own problems are listed (not the plan's). ``snapshot_id`` is reported as is.
    ``kept``: as :func:`decide_files`.
    """
    schema = schema or table.schema()
    predicate, sql = bind_predicate(table, schema, predicate)
    part = decide_files(table, predicate, files, schema, verify=verify, all_files=all_files, progress=progress,
                        snapshot_id=snapshot_id, global_indexes=True, kept=kept)
    return explanation(table.name, snapshot_id, predicate, sql, [part], verify)
