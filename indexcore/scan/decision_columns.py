"""Explain's per-file records as columns: no :class:`~indexcore.scan.records.FileDecision` per
file until a caller lists them.

:class:`DecisionColumns` takes each decided batch's records (the dicts the stages fill) and keeps
them a field at a time: integers as ``int64`` arrays, the stage decisions as small codes, the
statistics the stats stage read typed (:class:`~indexcore.scan.stats_columns.FileStats`), the
index results as kinds and row positions (:class:`~indexcore.scan.index_results.IndexResults`),
equal ``index_types`` shared, the rest (paths, partitions, problems, notes) as references. The funnel is summed over
these columns (:meth:`DecisionColumns.funnel_columns`); a caller that iterates or indexes the
files gets :class:`FileDecision` objects equal to those explain made before, made once and kept.
Kept so, a batch's records take about a quarter of the memory of their objects (0.23x on 20,000
records, ``tests/test_explain.py``; issue 30 item 1).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from itertools import repeat
from operator import itemgetter
from typing import Any

import numpy as np
import pyarrow as pa

from indexcore.scan.index_results import IndexResults
from indexcore.scan.records import (
    SLICE,
    Decision,
    FileDecision,
    Stage,
    StatsCells,
    index_types_text,
    stat_texts,
    text_array,
    text_chunks,
)
from indexcore.scan.stats_columns import FileStats

# integer fields (never None in a decided record); a batch whose values are not all ints keeps objects
_INTS = ("bucket", "level", "row_count", "dv_cardinality", "rows_after_dv", "bytes_read", "requests", "file_size",
         "dv_bytes")
# the stage decisions kept as codes (0 None, 1 REMAIN, 2 SKIP); the index's is a result object
_CODED = ("partition_decision", "bucket_decision", "level_decision", "stats_decision", "global_index_decision")
_CODES = {None: 0, Decision.REMAIN: 1, Decision.SKIP: 2}
_DECISIONS = (None, Decision.REMAIN, Decision.SKIP)
_SKIPS = dict(zip(_CODED[:4], (Stage.PARTITION, Stage.BUCKET, Stage.LEVEL, Stage.STATS), strict=True))
_OBJECTS = ("path", "partition", "partition_text", "raw_index_result", "index_decision", "index_location",
            "matching_rows", "problems", "notes", "global_index_rows", "pruning_index_types")
# the file index results, kept as :class:`IndexResults` (a kind per file, the bitmaps' rows in one buffer)
_RESULTS = ("raw_index_result", "index_decision")
#: the record fields :meth:`DecisionColumns.extend_fields` takes (``stats`` apart)
FIELDS = (*_INTS, *_CODED, *_OBJECTS, "index_types")
#: the integer fields and the stage decisions kept as codes (arrays in :meth:`DecisionColumns.of_columns`)
INT_FIELDS, CODED_FIELDS = _INTS, _CODED
# each field's value when a record lacks it (FileDecision's defaults; required ones are always set)
_DEFAULTS = {f.name: None if f.default is dataclasses.MISSING else f.default for f in dataclasses.fields(FileDecision)}
_EMPTY_STATS = StatsCells()
_NO_VALUES: dict = {}
_INT = {int}
_DECISION_TEXTS = np.array([None, Decision.REMAIN.value, Decision.SKIP.value], object)  # by code


def _field(records: Sequence[dict[str, Any]], name: str) -> list:
    """One field of every record (its default where a record lacks it)."""
    try:
        return list(map(itemgetter(name), records))
    except KeyError:
        default = _DEFAULTS[name]
        return [r.get(name, default) for r in records]


def _once_each(text, values: list) -> list:
    """``text`` of each value, worked out once per distinct object (equal index kinds share one dict)."""
    memo: dict[int, Any] = {}
    out = []
    for v in values:
        key = id(v)
        if key not in memo:
            memo[key] = text(v)
        out.append(memo[key])
    return out


def put_records(fields: dict[str, Any], stat_types: list, stat_values: FileStats, at: Sequence[int],
                records: Sequence[dict[str, Any]]) -> None:
    """Put decided ``records`` at positions ``at`` of the fields :meth:`DecisionColumns.extend_fields`
    takes (a stage decision as its code where that field is codes; a field a record lacks as its
    default, as :meth:`DecisionColumns.extend` reads it). A value equal to the one held, of the
    same type, is not put (a file the object stages kept has the plan's path, partition and
    statistics: 966,800 copies of them when every file reaches the index stage)."""
    if not len(at):
        return
    where = np.asarray(at, np.int64)
    for name, column in list(fields.items()):
        values = _field(records, name)
        if isinstance(column, np.ndarray) and column.dtype == np.int8 and name in _CODED:
            column[where] = np.fromiter(map(_CODES.__getitem__, values), np.int8, len(values))
        elif isinstance(column, np.ndarray) and column.dtype == np.int64:
            if set(map(type, values)) <= _INT:
                column[where] = values
            else:  # a value that is not an int: the field kept as objects, as extend keeps it
                fields[name] = column = column.tolist()
                for i, value in zip(at, values, strict=True):
                    column[i] = value
        elif isinstance(column, IndexResults):
            for i, value in zip(at, values, strict=True):
                column[i] = value
        else:  # only what differs: the plan's shared path and partition stay, no copy per file
            for i, value in zip(at, values, strict=True):
                held = column[i]
                if held is not value and (type(held) is not type(value) or held != value):
                    column[i] = value
    held_cells = stat_values.cells(at)  # the statistics the columns hold (the same decoding, mostly)
    for i, record, held in zip(at, records, held_cells, strict=True):
        cells = record.get("stats", _EMPTY_STATS)
        stat_types[i] = None if cells is None else cells.types
        values = cells.values if cells is not None else _NO_VALUES
        if values is not held and (type(values) is not type(held) or values != held):
            stat_values.put(i, values)


def _texts_chunk(values: list) -> pa.Array | list:
    """A slice of a column's values as Arrow strings where they are all texts (or None), else as they are."""
    texts = text_array(values)
    return values if texts is None else texts


def _texts_or_values(chunks: list) -> list | np.ndarray:
    """A column made a slice at a time (:func:`_texts_chunk`): the Arrow chunks where every slice is
    texts, else the values as :func:`stat_texts` gives a column (text where kinds disagree)."""
    if all(isinstance(c, pa.Array) for c in chunks):
        return chunks if chunks else [pa.array([], pa.string())]
    values = stat_texts(None, [v for c in chunks for v in (c.to_pylist() if isinstance(c, pa.Array) else c)])
    out = np.empty(len(values), object)  # as the objects' frame has them (pandas infers no type)
    out[:] = values
    return out


class Sparse(Sequence):
    """``n`` values, all ``value`` but those set (``sparse[i] = v``), without a list of ``n``: a field
    that every file explain pruned early leaves at its default (no index result, no problem).
    Past :data:`DENSE` of the files set it becomes a list (a dict entry per file costs more)."""

    def __init__(self, value: Any, n: int):
        self.value, self.n = value, n
        self.set: dict[int, Any] = {}
        self.dense: list | None = None

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, at):
        if isinstance(at, slice):
            return [self[i] for i in range(self.n)[at]]
        if not -self.n <= at < self.n:
            raise IndexError("index out of range")
        return self.dense[at] if self.dense is not None else self.set.get(at % self.n, self.value)

    def __setitem__(self, at: int, value: Any) -> None:
        if not -self.n <= at < self.n:
            raise IndexError("index out of range")
        if self.dense is not None:
            self.dense[at] = value
            return
        self.set[at % self.n] = value
        if len(self.set) > self.n * DENSE:
            self.dense = [self.value] * self.n
            for i, v in self.set.items():
                self.dense[i] = v
            self.set = {}

    def __iter__(self) -> Iterator:
        if self.dense is not None:
            return iter(self.dense)
        if not self.set:
            return repeat(self.value, self.n)
        return (self.set.get(i, self.value) for i in range(self.n))

    def is_default(self) -> bool:
        """Every value is the default (none set)."""
        return self.dense is None and not self.set


DENSE = 1 / 16  # the share of files set past which a Sparse keeps a list


class DecisionColumns(Sequence):
    """The decisions of explain's files in its file order, kept a field at a time (see the module)."""

    def __init__(self) -> None:
        self._n = 0
        self._ints: dict[str, list] = {name: [] for name in _INTS}  # per batch: an int64 array or a list
        self._codes: dict[str, list[np.ndarray]] = {name: [] for name in _CODED}
        self._index_skip: list[np.ndarray] = []  # the file index pruned the file
        self._objects: dict[str, list] = {name: [] for name in _OBJECTS}  # per batch: a sequence
        self._index_types: list[dict] = []  # equal ones shared
        self._shared_types: dict[tuple, dict] = {}
        self._stat_types: list = []  # each file's StatsCells.types (one mapping shared by the files)
        self._stats: list[FileStats] = []  # each batch's statistics cells, kept typed
        self._stat_starts: list[int] = []  # the first file of each
        self._made: list[FileDecision] | None = None

    # ---------------------------------------------------------------- building

    def extend(self, records: Sequence[dict[str, Any]]) -> None:
        """Take one batch's decided records (in file order) as columns."""
        n = len(records)
        if not n:
            return
        cells = [r.get("stats", _EMPTY_STATS) for r in records]
        self.extend_fields(n, {name: _field(records, name) for name in FIELDS},
                           [None if c is None else c.types for c in cells],  # None: no StatsCells
                           [c.values if c is not None else _NO_VALUES for c in cells])

    def extend_fields(self, n: int, fields: dict[str, Any], stat_types: list,
                      stat_values: list[dict] | FileStats) -> None:
        """Take ``n`` decided files (in file order) given a field at a time: each of :data:`FIELDS` as
        the list of the records' values (a stage decision may come as its codes, an ``int8`` array),
        each file's ``StatsCells.types`` (None: none) and ``values`` (each file's dict, or typed
        columns of them); an integer field may come as an ``int64`` array, an object field as any
        sequence (an object array, a :class:`Sparse`), kept as given. What :meth:`extend` makes of records, without a record per file
        (explain's files pruned on the plan's columns)."""
        if not n:
            return
        self._made = None
        for name, chunks in self._ints.items():
            values = fields[name]
            if not isinstance(values, np.ndarray):
                values = np.array(values, np.int64) if set(map(type, values)) <= _INT else values
            chunks.append(values)
        for name, chunks in self._codes.items():
            values = fields[name]
            chunks.append(values if isinstance(values, np.ndarray) else
                          np.fromiter(map(_CODES.__getitem__, values), np.int8, n))
        results = {name: IndexResults.of(fields[name]) for name in _RESULTS}  # the caller's fields left as given
        self._index_skip.append(results["index_decision"].skips())
        for name, chunks in self._objects.items():
            chunks.append(results.get(name, fields[name]))
        shared, seen = self._shared_types, {}
        for types in fields["index_types"]:
            if id(types) in seen:  # the same object again (the pruned files' one empty mapping)
                self._index_types.append(seen[id(types)])
                continue
            try:
                key = tuple((k, tuple(v)) for k, v in types.items()) if types else ()
                seen[id(types)] = kept = shared.setdefault(key, types)
                self._index_types.append(kept)
            except TypeError:  # a value that cannot be a key: kept as it is
                self._index_types.append(types)
        self._stat_types.extend(stat_types)
        self._stats.append(stat_values if isinstance(stat_values, FileStats) else FileStats.of_cells(stat_values))
        self._stat_starts.append(self._n)
        self._n += n

    @classmethod
    def of_columns(cls, n: int, ints: dict[str, np.ndarray], codes: dict[str, np.ndarray], index_skip: np.ndarray,
                   objects: dict[str, Sequence], index_types: Sequence) -> DecisionColumns:
        """``n`` decided files given whole columns (a Spark task's shipped decisions): each of the
        integer fields as an ``int64`` array, each stage decision as its codes (:meth:`codes`),
        whether the file index pruned the file, object fields as sequences read when asked for
        (one not given reads its default), each file's ``index_types``; no statistics. No list or
        object per file is made here: what reads a field by position (advise) reads only those."""
        out = cls()
        out._n = n
        out._ints = {name: [np.asarray(ints[name], np.int64)] for name in _INTS}
        out._codes = {name: [np.asarray(codes[name], np.int8)] for name in _CODED}
        out._index_skip = [np.asarray(index_skip, bool)]
        out._objects = {name: [objects[name] if name in objects else Sparse(_DEFAULTS[name], n)]
                        for name in _OBJECTS}
        for name in _RESULTS:
            out._objects[name] = [IndexResults.of(objects[name]) if name in objects else IndexResults(n)]
        out._index_types = index_types
        out._stat_types = Sparse(None, n)
        return out

    # ---------------------------------------------------------------- columns

    def codes(self, name: str) -> np.ndarray:
        """A stage decision of every file as its code (``int8``: 0 none, 1 REMAIN, 2 SKIP)."""
        return self._code(name)

    @staticmethod
    def _joined(store: dict, name: str, empty: np.ndarray):
        """A field's batches joined once (an array; a list where a batch kept its values as objects)."""
        chunks = store[name]
        if len(chunks) > 1:
            if all(isinstance(c, np.ndarray) for c in chunks):
                store[name] = [np.concatenate(chunks)]
            else:
                store[name] = [[v for c in chunks for v in (c.tolist() if isinstance(c, np.ndarray) else c)]]
        return store[name][0] if store[name] else empty

    def ints(self, name: str) -> np.ndarray:
        """An integer field of every file (``int64``)."""
        return np.asarray(self._joined(self._ints, name, np.zeros(0, np.int64)), np.int64)

    def _code(self, name: str) -> np.ndarray:
        return self._joined(self._codes, name, np.zeros(0, np.int8))

    def skipped_by(self) -> np.ndarray:
        """Each file's :attr:`FileDecision.skipped_by` as its text (None: read), an object array."""
        out = np.full(self._n, None, object)
        free = np.ones(self._n, bool)
        for name, stage in _SKIPS.items():
            hit = free & (self._code(name) == 2)
            out[hit] = stage.value
            free &= ~hit
        hit = free & (self._code("global_index_decision") == 2)
        out[hit] = Stage.GLOBAL_INDEX.value
        free &= ~hit
        if len(self._index_skip) > 1:
            self._index_skip = [np.concatenate(self._index_skip)]
        index_skip = self._index_skip[0] if self._index_skip else np.zeros(0, bool)
        out[free & index_skip] = Stage.INDEX.value
        return out

    def funnel_columns(self) -> dict[str, np.ndarray]:
        """What :func:`~indexcore.scan.funnel.funnel_of_columns` sums, from the columns (no object)."""
        n = self._n
        columns = {name: self.ints(name) for name in ("row_count", "file_size", "rows_after_dv", "dv_bytes",
                                                       "bytes_read", "requests")}
        columns["skipped_by"] = self.skipped_by()
        columns["matching_rows"] = np.fromiter((v or 0 for v in self.objects("matching_rows")), np.int64, n)
        columns["global_index_rows"] = np.fromiter(
            (rows if g is None else g for rows, g in zip(columns["row_count"].tolist(),
                                                         self.objects("global_index_rows"), strict=True)),
            np.int64, n)
        columns["global_index"] = self._code("global_index_decision") != 0
        return columns

    def objects(self, name: str) -> Sequence:
        """An object field of every file (``path``, ``raw_index_result``, ...), in file order; read
        only: a list, an object array, a :class:`Sparse` or the index results' :class:`IndexResults`
        (the batches' sequences joined once)."""
        chunks = self._objects[name]
        if len(chunks) > 1:
            if all(isinstance(c, Sparse) and c.is_default() and c.value is chunks[0].value for c in chunks):
                self._objects[name] = [Sparse(chunks[0].value, self._n)]
            elif name in _RESULTS:
                self._objects[name] = [IndexResults.concat(chunks)]
            else:
                self._objects[name] = [[v for c in chunks for v in c]]
        if not chunks:
            return IndexResults(0) if name in _RESULTS else []
        return self._objects[name][0]

    def index_types(self) -> list[dict]:
        """Each file's ``index_types`` (column -> index kinds), in file order; read only."""
        return self._index_types

    def rows_of(self, rows: Sequence[int]) -> list[FileDecision]:
        """The :class:`FileDecision` of the files at ``rows`` only (equal to those of :meth:`decisions`)."""
        if self._made is not None:
            return [self._made[i] for i in rows]
        return self._rows(rows)

    def problems(self) -> list:
        """Every file's problems, in file order."""
        return [p for problems in self.objects("problems") for p in problems]

    def stat_columns(self) -> list[str]:
        """The columns whose statistics the files carry, in first-seen order (as
        :func:`~indexcore.scan.records.stats_columns` over the objects)."""
        out: dict[str, None] = {}
        for types in self._stat_kinds():
            if types is not None:
                out.update(dict.fromkeys(types))
        return list(out)

    def _stat_kinds(self) -> list:
        """The distinct ``StatsCells.types`` mappings the files share (by identity), None included."""
        return list({id(t): t for t in self._stat_types}.values())

    def frame_columns(self) -> tuple[dict[str, Any], list[str]]:
        """:meth:`Explanation.to_frame <indexcore.scan.records.Explanation.to_frame>`'s columns read
        from the columns (no :class:`FileDecision` made), and the predicate's columns whose
        ``min`` / ``max`` / ``nulls`` they hold (nulls as a list); every array its own (a frame
        made on them without a copy shares none of these columns)."""
        n = self._n
        objects = {name: self.objects(name) for name in _OBJECTS}

        def texts(values) -> np.ndarray:
            out = np.empty(n, object)
            out[:] = values if isinstance(values, list | np.ndarray) else list(values)
            return out

        def decision_texts(name: str) -> np.ndarray:
            return _DECISION_TEXTS[self._code(name)] if n else np.empty(0, object)

        paths = objects["path"]
        cols: dict[str, Any] = {
            "path": texts(paths), "file": text_chunks(p.rsplit("/", 1)[-1] for p in paths),
            "partition": texts(objects["partition_text"]),
            **{name: self.ints(name).copy() for name in ("bucket", "level", "row_count", "file_size")},
            **{name: decision_texts(name)
               for name in ("partition_decision", "bucket_decision", "level_decision", "stats_decision")}}
        stat_cols = self.stat_columns()
        for col in stat_cols:
            cols[f"{col} min"], cols[f"{col} max"], cols[f"{col} nulls"] = self._stat_texts(col)
        cols.update({
            "global_index_decision": decision_texts("global_index_decision"),
            "global_index_rows": list(objects["global_index_rows"]),
            "raw_index_result": objects["raw_index_result"].texts(),
            "index_decision": objects["index_decision"].texts(),
            "index_types": texts(_once_each(index_types_text, self._index_types)),
            **{name: self.ints(name).copy() for name in ("dv_cardinality", "rows_after_dv", "bytes_read", "dv_bytes")},
            "matching_rows": list(objects["matching_rows"]),
            "skipped_by": self.skipped_by(),
            "problems": np.fromiter(map(len, objects["problems"]), np.int64, n)})
        return cols, stat_cols

    def _stat_parts(self, rows: np.ndarray) -> Iterator[tuple[FileStats, np.ndarray, np.ndarray]]:
        """Each batch's statistics among the files at ``rows``: (its cells, the positions in ``rows``,
        their rows in the batch)."""
        if not self._stats:  # decisions shipped without statistics (:meth:`of_columns`)
            return
        if len(self._stats) == 1:
            yield self._stats[0], np.arange(len(rows)), rows
            return
        starts = np.asarray(self._stat_starts, np.int64)
        part_of = np.searchsorted(starts, rows, "right") - 1
        order = np.argsort(part_of, kind="stable")
        bounds = np.flatnonzero(np.diff(part_of[order])) + 1
        for at in np.split(order, bounds):
            if len(at):
                p = int(part_of[at[0]])
                yield self._stats[p], at, rows[at] - starts[p]

    def _stat_cells(self, rows: np.ndarray) -> list[dict]:
        """The statistics cells (column -> (min, max, null count)) of the files at ``rows``."""
        out: list = [_NO_VALUES] * len(rows)
        for part, at, local in self._stat_parts(rows):
            for j, cells in zip(at.tolist(), part.cells(local), strict=True):
                out[j] = cells
        return out

    def _stat_texts(self, col: str) -> tuple[Any, Any, list]:
        """Every file's min and max of ``col`` as a frame shows them (:func:`stat_texts`) and its null
        count (None: unknown), made a slice of files at a time (:meth:`FileStats.json_column`):
        texts as Arrow chunks of a slice each (:func:`text_chunks`), else values in a list."""
        stat_types = self._stat_types
        kinds = self._stat_kinds()
        known_of = {id(t): t is not None and col in t for t in kinds}
        known = np.fromiter((known_of[id(t)] for t in stat_types), bool, self._n)
        dtype = next((t[col] for t in kinds if t is not None and col in t), None)
        lows, highs, nulls = [], [], []
        for lo in range(0, self._n, SLICE):
            rows = np.arange(lo, min(lo + SLICE, self._n))
            got = ([None] * len(rows), [None] * len(rows), [None] * len(rows))
            for part, at, local in self._stat_parts(rows):
                cells = part.column(col, local)[:3] if dtype is None else part.json_column(col, local, dtype)
                for into, values in zip(got, cells, strict=True):
                    if len(at) == len(rows):
                        into[:] = values
                    else:
                        for j, v in zip(at.tolist(), values, strict=True):
                            into[j] = v
            for j in np.flatnonzero(~known[lo:lo + len(rows)]).tolist():
                got[0][j] = got[1][j] = got[2][j] = None
            lows.append(_texts_chunk(got[0]))
            highs.append(_texts_chunk(got[1]))
            nulls.extend(got[2])
        return _texts_or_values(lows), _texts_or_values(highs), nulls

    # ---------------------------------------------------------------- objects on request

    def decisions(self) -> list[FileDecision]:
        """Every file's :class:`FileDecision`, made once (a field of all files read at a time)."""
        if self._made is None:
            self._made = self._rows(range(self._n))
        return self._made

    def _rows(self, rows: Sequence[int]) -> list[FileDecision]:
        idx = np.asarray(rows, np.int64)
        fields: dict[str, list] = {}
        for name in _INTS:
            values = self._joined(self._ints, name, np.zeros(0, np.int64))
            fields[name] = values[idx].tolist() if isinstance(values, np.ndarray) else [values[i] for i in idx.tolist()]
        for name in _CODED:
            fields[name] = [_DECISIONS[c] for c in self._code(name)[idx].tolist()]
        for name in _OBJECTS:
            column = self.objects(name)
            fields[name] = [column[i] for i in idx.tolist()]
        fields["index_types"] = [self._index_types[i] for i in idx.tolist()]
        stat_types = self._stat_types
        values = self._stat_cells(idx)
        fields["stats"] = [None if stat_types[i] is None else StatsCells(stat_types[i], got)
                           for i, got in zip(idx.tolist(), values, strict=True)]
        names = list(fields)
        make = FileDecision.from_record
        return [make(dict(zip(names, values, strict=True))) for values in zip(*fields.values(), strict=True)]

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, at):
        if self._made is not None:
            return self._made[at]
        if isinstance(at, slice):
            return self._rows(range(self._n)[at])
        if not -self._n <= at < self._n:
            raise IndexError("decision index out of range")
        return self._rows([at % self._n])[0]

    def __iter__(self) -> Iterator[FileDecision]:
        return iter(self.decisions())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, DecisionColumns | list | tuple):
            return len(self) == len(other) and list(self) == list(other)
        return NotImplemented

    __hash__ = None  # mutable while explain adds batches, as the list it stands for

    def __repr__(self) -> str:
        return f"DecisionColumns({self._n} files)"

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_made"] = None  # the objects are made again on request
        return state
