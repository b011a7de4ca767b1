"""The records explain produces: each stage's :class:`Decision`, the funnel's :class:`Stage`, one
:class:`FileDecision` per data file (with the :class:`StatsCells` the stats stage read), the
:class:`FileDecisions` of a batch (what a Spark task returns) and the :class:`Explanation`."""

from __future__ import annotations

import dataclasses
import posixpath
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from operator import attrgetter
from typing import Any

import numpy as np
import pyarrow as pa

from indexcore.expr import Predicate
from indexcore.formats.base import BitmapResult, FileIndexResult
from indexcore.types import DataType, to_json_value, to_json_values
from indexcore.warehouse.html import explanation_html
from indexcore.warehouse.model import LiveFile, Problem, TableSchema


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


@dataclass(frozen=True, eq=False, slots=True)  # equal as a mapping (its JSON dict); slots: one per file
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


@dataclass(frozen=True, slots=True)  # slots: 50,000 of them, a third of the memory of a __dict__ each
class _FileDecisionFields:
    """:class:`FileDecision`'s fields."""

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
    # the partition in the one partition format (:func:`indexcore.paimon.layout.format_partition`)
    partition_text: str = ""


class FileDecision(_FileDecisionFields):
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

    __slots__ = ("_skipped",)  # skipped_by once worked out (unset until then; not a field)

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> FileDecision:
        """The decision from a record of its fields (defaults filled in), as explain makes one per
        file: set in one step, where the frozen ``__init__`` sets each field through
        ``object.__setattr__`` (a quarter of a second over 50,000 files)."""
        if not _DECISION_REQUIRED <= record.keys() <= _DECISION_FIELDS:
            return cls(**record)  # the dataclass says what is wrong
        out = _new(cls)
        get = record.get
        for name, default, make, put in _DECISION_SLOTS:
            value = get(name, _MISSING)
            put(out, (make() if make is not None else default) if value is _MISSING else value)
        return out

    @property
    def skipped_by(self) -> Stage | None:
        """The first stage that pruned the file, or None when Paimon reads it (worked out once:
        the funnel asks for it at every stage of every file)."""
        try:
            skipped = self._skipped
        except AttributeError:
            skipped = _NOT_SKIPPED
            for stage, decision in zip(BEFORE_INDEX, (self.partition_decision, self.bucket_decision,
                                                      self.level_decision, self.stats_decision), strict=True):
                if decision is Decision.SKIP:
                    skipped = stage
                    break
            else:
                if self.global_index_decision is Decision.SKIP:
                    skipped = Stage.GLOBAL_INDEX
                elif self.index_decision is not None and not self.index_decision.remain():
                    skipped = Stage.INDEX
            _SET_SKIPPED(self, skipped)
        return skipped or None  # "" (worked out: no stage) is falsy, every stage is not

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
            "partition_text": self.partition_text,
            "bucket": self.bucket,
            "level": self.level,
            "row_count": self.row_count,
            "partition_decision": self.partition_decision.value,
            "bucket_decision": self.bucket_decision.value,
            "level_decision": self.level_decision.value,
            "stats_decision": self.stats_decision.value,
            "global_index_decision": None if self.global_index_decision is None else self.global_index_decision.value,
            "global_index_rows": self.global_index_rows,
            "index_decision": None if self.index_decision is None else self.index_decision.to_json(),
            "raw_index_result": None if self.raw_index_result is None else self.raw_index_result.to_json(),
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


# FileDecision's fields a record may give: all, those without a default; per slot its name, plain
# default, default factory and setter (a slot's own descriptor: the frozen ``__setattr__`` refuses)
_DECISION_FIELDS = frozenset(f.name for f in dataclasses.fields(FileDecision))
_DECISION_REQUIRED = frozenset(f.name for f in dataclasses.fields(FileDecision)
                               if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING)
_DECISION_SLOTS = tuple((f.name, None if f.default is dataclasses.MISSING else f.default,
                         None if f.default_factory is dataclasses.MISSING else f.default_factory,
                         getattr(FileDecision, f.name).__set__)
                        for f in dataclasses.fields(FileDecision) )
_SET_SKIPPED = FileDecision._skipped.__set__
_MISSING = object()
_NOT_SKIPPED = ""  # skipped_by worked out: no stage pruned the file (a pickled decision keeps it)
_new = object.__new__


@dataclass
class Explanation:
    """Per-file decisions, the pruning funnel, verification violations and problems."""

    table: str
    snapshot_id: int | None
    predicate: Predicate
    sql: str
    files: Sequence[FileDecision]  # in process a DecisionColumns: each FileDecision made when listed
    funnel: dict[str, dict[str, int]]
    violations: list[dict[str, Any]] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    verified: bool = False
    index_used: bool = True
    # storage I/O of the whole explain, the concurrent prefetch included
    bytes_read: int = 0
    requests: int = 0

    def to_json(self, max_files: int | None = None) -> dict[str, Any]:
        """The explanation as JSON; ``max_files``: list only the first that many files (in file
        order), with ``files_total`` saying how many there are."""
        files = self.files if max_files is None or len(self.files) <= max_files else self.files[:max_files]
        out = {
            "table": self.table,
            "snapshot": self.snapshot_id,
            "where": self.sql,
            "files": [f.to_json(self.verified) for f in files],
            "funnel": self.funnel,
            "violations": list(self.violations),
            "problems": [p.to_dict() for p in self.problems],
            "bytes_read": self.bytes_read,
            "requests": self.requests,
        }
        if len(files) < len(self.files):
            out["files_total"] = len(self.files)
        return out

    def _repr_html_(self) -> str:
        return explanation_html(self)

    def to_frame(self):
        """One row per file (pandas); decisions as text, a bitmap as ``"N rows"``. Each column of
        the predicate adds ``<column> min`` / ``max`` / ``nulls`` beside ``stats_decision``."""
        import pandas as pd  # pandas loads only when a frame is asked for

        columnar = getattr(self.files, "frame_columns", None)  # explain's DecisionColumns: no object per file
        cols, stat_cols = columnar() if columnar is not None else _frame_columns(self.files)
        for col in stat_cols:
            cols[f"{col} nulls"] = pd.array(cols[f"{col} nulls"], dtype="Int64")
        # the texts made for the frame (not shared with the plan): Arrow strings, a third of Python's
        for name in ["file", *(f"{col} {key}" for col in stat_cols for key in ("min", "max"))]:
            cols[name] = arrow_texts(cols[name], pd)
        return pd.DataFrame(cols, copy=False)  # new arrays: not copied into consolidated blocks (3 ms at 9,104 files)


# enum members as their text: ``member.value`` is a Python-level descriptor, and a frame of 50,000
# files reads a quarter of a million of them
_TEXT: dict[Any, str | None] = {None: None, **{m: m.value for m in (*Decision, *Stage)}}


#: files whose values a caller turns into Python objects at once (explain's stats test, a frame's
#: texts before they become Arrow strings): bounded work per slice, whatever the table's size
SLICE = 65_536


def _all_texts(values: Iterable) -> bool:
    return all(v is None or type(v) is str for v in values)


def text_array(values: Sequence) -> pa.Array | None:
    """``values`` as one Arrow string array where every one is a text or None; else None."""
    return pa.array(values, pa.string()) if _all_texts(values) else None


def text_chunks(values: Iterable[str | None]) -> list:
    """Texts as Arrow string arrays of at most :data:`SLICE` each (their Python objects let go
    of a slice at a time by a caller that makes them lazily)."""
    chunks, part = [], []
    for v in values:
        part.append(v)
        if len(part) == SLICE:
            chunks.append(pa.array(part, pa.string()))
            part = []
    if part or not chunks:
        chunks.append(pa.array(part, pa.string()))
    return chunks


def arrow_texts(values: Any, pd) -> Any:
    """A frame column of texts as pandas' Arrow strings (``pd.ArrowDtype(pa.string())``: the bytes
    in one buffer, no Python object per cell); values that are not all texts (ints, mixed) as
    they are. ``values``: a sequence, or Arrow string chunks (:func:`text_chunks`)."""
    if isinstance(values, list) and values and isinstance(values[0], pa.Array):
        chunks = values
    elif _all_texts(values):
        chunks = text_chunks(values)  # lazily made texts are let go a slice at a time
    else:
        return values
    return pd.arrays.ArrowExtensionArray(pa.chunked_array([c.cast(pa.string()) for c in chunks], pa.string()))


def frame_text(result: FileIndexResult | None) -> str | None:
    """An index result as :meth:`Explanation.to_frame` shows it: a bitmap as ``"N rows"``."""
    if result is None:
        return None
    if isinstance(result, BitmapResult):
        return f"{len(result.bitmap)} rows"
    return result.to_json()


def index_types_text(index_types: Mapping[str, Sequence[str]] | None) -> str:
    """A file's index kinds per column as one text (``"c: bitmap, bloom-filter; d: bsi"``)."""
    return "; ".join(f"{c}: {', '.join(t)}" for c, t in index_types.items()) if index_types else ""


def stat_texts(dtype: DataType | None, raw: Sequence[Any]) -> list:
    """Internal min or max values of one column over files as a frame shows them: JSON values as
    recorded (no float for ints), text where files disagree in type (NaN as "NaN")."""
    values = raw if dtype is None else to_json_values(dtype, list(raw))
    if len({type(v) for v in values if v is not None}) > 1:
        return [str(v) if v is not None else v for v in values]
    return list(values)


def _frame_columns(files: Sequence[FileDecision]) -> tuple[dict[str, Any], list[str]]:
    """:meth:`Explanation.to_frame`'s columns from decision objects (a list: Spark's parts), and
    the predicate's columns whose ``min`` / ``max`` / ``nulls`` they hold (nulls as a list)."""
    stat_cols = stats_columns(files)
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
        "partition": texts(f.partition_text for f in files), "bucket": ints("bucket"),
        "level": ints("level"), "row_count": ints("row_count"), "file_size": ints("file_size"),
        **{name: decision_texts(name)
           for name in ("partition_decision", "bucket_decision", "level_decision", "stats_decision")}}
    for col in stat_cols:
        dtype = next((f.stats.types[col] for f in files if col in f.stats), None)
        raw = [f.stats.raw(col) if col in f.stats else (None, None, None) for f in files]
        for i, key in enumerate(("min", "max")):
            cols[f"{col} {key}"] = texts(stat_texts(dtype, [r[i] for r in raw]))
        cols[f"{col} nulls"] = [r[2] for r in raw]
    cols.update({
        "global_index_decision": decision_texts("global_index_decision"),
        "global_index_rows": list(map(attrgetter("global_index_rows"), files)),
        "raw_index_result": texts(map(frame_text, map(attrgetter("raw_index_result"), files))),
        "index_decision": texts(map(frame_text, map(attrgetter("index_decision"), files))),
        "index_types": texts(map(index_types_text, map(attrgetter("index_types"), files))),
        "dv_cardinality": ints("dv_cardinality"), "rows_after_dv": ints("rows_after_dv"),
        "bytes_read": ints("bytes_read"), "dv_bytes": ints("dv_bytes"),
        "matching_rows": list(map(attrgetter("matching_rows"), files)),
        "skipped_by": decision_texts("skipped_by"),
        "problems": np.fromiter(map(len, map(attrgetter("problems"), files)), np.int64, n)})
    return cols, stat_cols


def stats_columns(files: Iterable[FileDecision]) -> list[str]:
    """The columns whose statistics the files carry, in first-seen order."""
    out: dict[str, None] = {}
    for types in {id(f.stats.types): f.stats.types for f in files}.values():  # shared by one explanation's files
        out.update(dict.fromkeys(types))
    return list(out)


@dataclass
class FileDecisions:
    """The decisions over some planned files and the violations verify found among them:
    what one Spark task of the evaluate job returns (picklable)."""

    files: Sequence[FileDecision]  # explain's own: a DecisionColumns (objects made when listed)
    violations: list[dict[str, Any]]
    index_used: bool
    problems: list[Problem] = field(default_factory=list)  # not tied to one file (global indexes)
    # storage I/O of deciding them, the concurrent prefetch included
    bytes_read: int = 0
    requests: int = 0
    # bytes and requests of the global index scan (its own stage of the funnel)
    global_index_bytes: int = 0
    global_index_requests: int = 0


@dataclass(eq=False)
class Batch:
    """Files the stages decide together (one prefetched batch), one list per field aligned with
    ``files``: each file's record of :class:`FileDecision` fields, filled stage by stage (notes and
    problems say why), and what a later stage or verify reads of an earlier one."""

    files: list[LiveFile]
    records: list[dict[str, Any]]
    schemas: list[TableSchema]  # the schema each file was written with
    pushed: list[Any]  # the :class:`~indexcore.scan.stats.Pushdown` for each file's schema
    deleted: list[Any]  # deletion-vector positions, where read (None: not read or none)
    evaluators: list[Any]  # the file index evaluator (kept for verify only)
    kept: list[Any]  # rows the global indexes keep (kept for verify only)
