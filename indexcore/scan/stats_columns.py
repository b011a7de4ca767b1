"""Files' value statistics as typed columns: read off the plan's stats bytes and kept as arrays.

Explain on the plan (:mod:`indexcore.scan.plan_stages`) reads every planned file's min, max and
null count of the predicate's columns. Kept as a dict of ``(min, max, null count)`` tuples per
file, with two values each, they took about half a gigabyte at 1,000,000 files while explain ran
and left the heap fragmented after it. :class:`FileStats` keeps them per table column instead:
the min and max as they sit in the BinaryRows (numpy for fixed-width types, the decoded values
for the rest), which files have each, and the null counts. A file decoded the per-file way (its
stats row does not fit its bytes, or the object stages decided it) keeps its own cells.

Python values are made only for the files asked for (:meth:`FileStats.column`,
:meth:`FileStats.cells`), a slice at a time by the callers, equal to what
:func:`~indexcore.scan.stats.stats_map` gives each file.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from indexcore.errors import IndexCoreError
from indexcore.formats.binary_row import decode_binary_field, is_compact_decimal, is_compact_timestamp
from indexcore.scan.stats import LACKS, stats_map, stats_slots
from indexcore.types import DataType, Timestamp, decimal_from_unscaled, millis_json_values, to_json_values
from indexcore.types.data_type import TIMESTAMP_ROOTS
from indexcore.warehouse.manifest import file_stats
from indexcore.warehouse.model import TableSchema

_EMPTY_ROW_LEN = 12  # a stats row of arity 0 (4-byte arity, 8-byte null bits): the planner's empty stats
# fixed-width fields read straight from the rows' bytes, as numpy types (little-endian)
_FIXED = {"BOOLEAN": "u1", "TINYINT": "i1", "SMALLINT": "<i2", "INT": "<i4", "DATE": "<i4", "TIME": "<i4",
          "BIGINT": "<i8", "FLOAT": "<f4", "DOUBLE": "<f8"}
_IRREGULAR = object()  # a field value :func:`field_values` leaves to the per-file path


def _fixed(dtype: DataType) -> str | None:
    """The numpy type a field of ``dtype`` has in a BinaryRow's fixed part (None: variable length)."""
    root = dtype.root
    if root in _FIXED:
        return _FIXED[root]
    compact = (root in TIMESTAMP_ROOTS and is_compact_timestamp(dtype)) or \
        (root == "DECIMAL" and is_compact_decimal(dtype))
    return "<i8" if compact else None  # epoch millis or the unscaled value in the slot


def internal_values(dtype: DataType, raw: np.ndarray) -> list:
    """The internal values of fields of ``dtype`` as :class:`FieldColumn` keeps them raw."""
    if raw.dtype == object:
        return raw.tolist()
    values = raw.tolist()
    root = dtype.root
    if root == "BOOLEAN":
        return [v != 0 for v in values]
    if root in TIMESTAMP_ROOTS:
        return Timestamp.of_millis(values)
    if root == "DECIMAL":
        return [decimal_from_unscaled(dtype, v) for v in values]
    return values


class StatsBytes:
    """The files' value stats as their Arrow arrays (``_VALUE_STATS``' fields as the manifest's
    columns hold them), file ``i`` at row ``rows[i]`` of them: the plan's own column, chunk by
    chunk, not a copy in the files' order nor its chunks joined (a copy of the column: 0.3 GB at
    1,000,000 files); each min and max row read off the binary arrays' buffers, not a bytes object
    per file."""

    def __init__(self, value_stats: pa.StructArray | pa.ChunkedArray, rows: Sequence[int]):
        chunks = value_stats.chunks if isinstance(value_stats, pa.ChunkedArray) else [value_stats]
        rows = np.asarray(rows, np.int64)
        starts = np.cumsum([0] + [len(c) for c in chunks])
        self.chunk_of = np.searchsorted(starts, rows, "right") - 1
        self.local = rows - starts[self.chunk_of] if len(rows) else rows
        self.chunks = [(c.field("_MIN_VALUES"), c.field("_MAX_VALUES"), c.field("_NULL_COUNTS")) for c in chunks]
        self.low_len, self.null_len = np.zeros(len(rows), np.int64), np.zeros(len(rows), np.int64)
        for (lows, _highs, nulls), at, local in self.by_chunk(np.arange(len(rows))):
            self.low_len[at] = pc.fill_null(pc.binary_length(lows), 0).to_numpy(zero_copy_only=False)[local]
            self.null_len[at] = pc.fill_null(pc.list_value_length(nulls), 0).to_numpy(zero_copy_only=False)[local]

    def by_chunk(self, files: np.ndarray):
        """Each chunk's (min, max, null counts) arrays among ``files``, with the positions in ``files``
        of its files and their rows in the chunk."""
        which = self.chunk_of[files]
        order = np.argsort(which, kind="stable")
        for at in np.split(order, np.flatnonzero(np.diff(which[order])) + 1):
            if len(at):
                yield self.chunks[int(which[at[0]])], at, self.local[files[at]]

    def row(self, i: int) -> tuple:
        """File ``i``'s min row, max row and null counts as Python values (the per-file path)."""
        lows, highs, nulls = self.chunks[int(self.chunk_of[i])]
        r = int(self.local[i])
        return lows[r].as_py(), highs[r].as_py(), nulls[r].as_py()


def _null_counts(nulls: pa.ListArray, rows: np.ndarray, lengths: np.ndarray, at: int) -> tuple[np.ndarray, np.ndarray]:
    """The null count of field ``at`` of the list array's ``rows`` (each ``lengths`` long) and
    whether it has one (not past its row's counts, not null)."""
    values, has = np.zeros(len(rows), np.int64), np.zeros(len(rows), bool)
    within = np.flatnonzero(lengths > at)
    if len(within):
        offsets = nulls.offsets.to_numpy()
        got = nulls.values.take(pa.array(offsets[rows[within]] + at))
        has[within] = got.is_valid().to_numpy(zero_copy_only=False)
        values[within] = pc.fill_null(got, 0).to_numpy(zero_copy_only=False)
    return values, has


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


class FieldColumn:
    """Field ``at`` of some rows' serialized BinaryRows: ``raw`` values (numpy of the field's
    fixed-width type, or an object array of decoded values), ``ok`` where a row holds a value
    (else None: null, past the row, or no row), ``irregular`` where a row does not fit its bytes
    (the per-file decoding refuses it)."""

    __slots__ = ("dtype", "raw", "ok", "irregular")

    def __init__(self, raws: pa.Array, at_rows: np.ndarray, at: int, dtype: DataType, rows: tuple | None = None):
        self.dtype = dtype
        n = len(at_rows)
        fixed = _fixed(dtype)
        if fixed is None:  # variable-length fields: each row's own decoding
            self.raw, self.ok, self.irregular = np.empty(n, object), np.zeros(n, bool), np.zeros(n, bool)
            for i, raw in enumerate(raws.take(pa.array(at_rows, pa.int64())).to_pylist()):
                try:
                    self.raw[i] = value = decode_binary_field(raw, at, dtype, "stats values")
                    self.ok[i] = value is not None
                except IndexCoreError:
                    self.irregular[i] = True
            return
        self.raw, self.ok = np.zeros(n, fixed), np.zeros(n, bool)
        buf, lens, s, arity = _rows_of(raws, at_rows) if rows is None else rows
        has_row = lens >= 4
        null_width = ((arity + 63 + 8) // 64) * 8
        fits = 4 + null_width + 8 * arity <= lens
        self.irregular = has_row & ~fits
        bit = at + 8
        read = np.flatnonzero(has_row & fits & (at < arity))
        read = read[(buf[s[read] + 4 + (bit >> 3)] & (1 << (bit & 7))) == 0]  # not null
        slot = s[read] + 4 + null_width[read] + 8 * at
        width = np.dtype(fixed).itemsize
        self.raw[read] = buf[slot[:, None] + np.arange(width)].copy().view(fixed).ravel()
        self.ok[read] = True


def field_values(column: FieldColumn) -> list:
    """A field column's values as :func:`~indexcore.formats.binary_row.decode_binary_field` gives
    each row's (None where it holds none), :data:`_IRREGULAR` where a row does not fit its bytes."""
    values = internal_values(column.dtype, column.raw)
    return [_IRREGULAR if bad else (v if ok else None)
            for v, ok, bad in zip(values, column.ok.tolist(), column.irregular.tolist(), strict=True)]


class _Cells:
    """One table column's cells over a :class:`FileStats`' files: the min and max raw (as a
    :class:`FieldColumn` holds them; None until a file has a value), the null counts, and which
    files have each, and which files' cells hold the column at all."""

    __slots__ = ("dtype", "low", "high", "has_low", "has_high", "nulls", "has_nulls", "present")

    def __init__(self, n: int):
        self.dtype: DataType | None = None
        self.low = self.high = None
        self.has_low, self.has_high, self.has_nulls, self.present = (np.zeros(n, bool) for _ in range(4))
        self.nulls = np.zeros(n, np.int64)

    def takes(self, low: FieldColumn) -> bool:
        """Can the raw values of ``low`` go into this column (the same type, or none yet)?"""
        if self.low is None:
            self.dtype = low.dtype
            self.low, self.high = np.zeros(len(self.present), low.raw.dtype), np.zeros(len(self.present), low.raw.dtype)
            return True
        return self.dtype == low.dtype and self.low.dtype == low.raw.dtype


class FileStats:
    """The value statistics cells of ``n`` files (see the module): file ``i``'s cells are its own
    dict where the per-file path decoded it, else the columns' cells it holds."""

    def __init__(self, n: int):
        self.n = n
        self._columns: dict[str, _Cells] = {}
        self._own: dict[int, dict] = {}
        self._listed: dict[str, list] = {}  # column -> each file's cells (None: absent), as given

    @classmethod
    def of_cells(cls, cells: Sequence[dict]) -> FileStats:
        """Files whose cells are given as dicts (records the object stages decided), kept as a list
        of each column's cells (the cells' own tuples, not the dicts)."""
        out = cls(len(cells))
        for got in cells:
            for name in got:
                if name not in out._listed:
                    out._listed[name] = [got.get(name) for got in cells]
        return out

    def put(self, i: int, cells: dict) -> None:
        """File ``i``'s cells, given (decoded on its own, or by the object stages)."""
        self._own[i] = cells

    def _cells(self, name: str) -> _Cells:
        if name not in self._columns:
            self._columns[name] = _Cells(self.n)
        return self._columns[name]

    def _own_at(self, rows: np.ndarray) -> list[tuple[int, int]]:
        """(position in ``rows``, file) of the files among ``rows`` with their own cells."""
        if not self._own:
            return []
        if len(self._own) == self.n:
            return list(enumerate(rows.tolist()))
        at = np.flatnonzero(np.isin(rows, np.fromiter(self._own, np.int64, len(self._own))))
        return list(zip(at.tolist(), rows[at].tolist(), strict=True))

    def column(self, name: str, rows: Sequence[int]) -> tuple[list, list, list, list[bool]]:
        """The min, max and null count of column ``name`` of the files at ``rows`` as internal
        values (None where unknown), and whether each file's cells hold the column."""
        rows = np.asarray(rows, np.int64)
        k = len(rows)
        c = self._columns.get(name)
        if name in self._listed:
            listed = self._listed[name]
            got = [listed[i] for i in rows.tolist()]
            present = [cells is not None for cells in got]
            got = [cells or (None, None, None) for cells in got]
            lows, highs, nulls = [g[0] for g in got], [g[1] for g in got], [g[2] for g in got]
        elif c is None:
            lows, highs, nulls, present = [None] * k, [None] * k, [None] * k, [False] * k
        else:
            lows, highs = ([None] * k, [None] * k) if c.low is None else \
                (_converted(lambda raw: internal_values(c.dtype, raw), c.low[rows], c.has_low[rows]),
                 _converted(lambda raw: internal_values(c.dtype, raw), c.high[rows], c.has_high[rows]))
            nulls, present = _masked(c.nulls[rows].tolist(), c.has_nulls[rows]), c.present[rows].tolist()
        for j, i in self._own_at(rows):
            cells = self._own[i].get(name)
            present[j] = cells is not None
            lows[j], highs[j], nulls[j] = cells if cells is not None else (None, None, None)
        return lows, highs, nulls, present

    def json_column(self, name: str, rows: Sequence[int], dtype: DataType) -> tuple[list, list, list]:
        """:meth:`column`'s min and max as JSON values of ``dtype`` (:func:`~indexcore.types.to_json_values`)
        and its null counts; a timestamp column kept as epoch milliseconds is formatted off the
        numbers (no Timestamp per file)."""
        rows = np.asarray(rows, np.int64)
        c = self._columns.get(name)
        if c is None or c.low is None or c.low.dtype != np.int64 or c.dtype.root not in TIMESTAMP_ROOTS or \
                dtype.root not in TIMESTAMP_ROOTS:
            lows, highs, nulls, _present = self.column(name, rows)
            return to_json_values(dtype, lows), to_json_values(dtype, highs), nulls
        lows = _converted(lambda raw: millis_json_values(dtype, raw), c.low[rows], c.has_low[rows])
        highs = _converted(lambda raw: millis_json_values(dtype, raw), c.high[rows], c.has_high[rows])
        nulls = _masked(c.nulls[rows].tolist(), c.has_nulls[rows])
        for j, i in self._own_at(rows):
            low, high, nulls[j] = self._own[i].get(name) or (None, None, None)
            lows[j], highs[j] = to_json_values(dtype, [low, high])
        return lows, highs, nulls

    def cells(self, rows: Sequence[int]) -> list[dict]:
        """Each of the files at ``rows``' cells: column -> (min, max, null count)."""
        rows = np.asarray(rows, np.int64)
        out: list[dict] = [{} for _ in range(len(rows))]
        for name in [*self._columns, *self._listed]:
            lows, highs, nulls, present = self.column(name, rows)
            for d, has, cell in zip(out, present, zip(lows, highs, nulls, strict=True), strict=True):
                if has:
                    d[name] = cell
        for j, i in self._own_at(rows):
            out[j] = self._own[i]
        return out

    def _fill(self, files: np.ndarray, slots: tuple, fields: dict, counts: dict, width: np.ndarray,
              row_counts: np.ndarray) -> np.ndarray:
        """Put the cells of ``files`` (one schema and layout, their stats regular) column by column;
        returns which of them must be decoded on their own (a field that does not fit, or a type
        this column already holds differently)."""
        own = np.zeros(len(files), bool)
        for _col, at in slots:
            if at is not None and at != LACKS and at in fields:
                low, high = fields[at]
                own |= (at < width) & (low.irregular | high.irregular)
        for col, at in slots:
            c = self._cells(col)
            if at is not None and at != LACKS and at in fields and not c.takes(fields[at][0]):
                own |= at < width
        take = ~own
        chosen = files[take]
        for col, at in slots:
            c = self._cells(col)
            c.present[chosen] = True
            if at is None:
                continue
            if at == LACKS:
                c.nulls[chosen], c.has_nulls[chosen] = row_counts[chosen], True
                continue
            values, has = counts[at]
            c.nulls[chosen], c.has_nulls[chosen] = values[take], has[take]
            if at in fields:
                low, high = fields[at]
                within = (at < width)[take]
                c.low[chosen], c.high[chosen] = low.raw[take], high.raw[take]
                c.has_low[chosen], c.has_high[chosen] = within & low.ok[take], within & high.ok[take]
        return own


def _masked(values: list, ok: np.ndarray) -> list:
    return [v if has else None for v, has in zip(values, ok.tolist(), strict=True)]


def _converted(convert, raw: np.ndarray, ok: np.ndarray) -> list:
    """``convert`` of the raw values where ``ok``, None elsewhere: a value a file lacks is not converted."""
    if ok.all():
        return list(convert(raw))
    out: list = [None] * len(raw)
    at = np.flatnonzero(ok)
    for j, v in zip(at.tolist(), convert(raw[at]), strict=True):
        out[j] = v
    return out


def value_stats(table, files: pa.Table, schemas: dict[Any, TableSchema], pushdowns, schema: TableSchema,
                stat_fields: list[str], row_counts: Sequence[int], stats: StatsBytes) -> FileStats:
    """Each file's (min, max, null count) of ``stat_fields``, as :func:`~indexcore.scan.stats.column_stats`
    gives them (value stats mapped by field id): the files of one schema and stats layout decoded
    a field at a time over all their rows (:class:`FieldColumn`), kept typed; a file whose stats
    are irregular (empty, a row that does not fit, a field read through a reader that fails) goes
    through :func:`~indexcore.scan.stats.stats_map` on its own, which handles them. ``files``: the
    plan's ``_SCHEMA_ID`` / ``_VALUE_STATS_COLS`` / ``_WRITE_COLS`` of the files; ``stats``: their
    value stats, in the plan's own column (:class:`StatsBytes`)."""
    n = files.num_rows
    out = FileStats(n)
    if not n:
        return out
    sids, cols, write_cols = (files.column(c).to_pylist() for c in ("_SCHEMA_ID", "_VALUE_STATS_COLS", "_WRITE_COLS"))
    types_of = table._stats_types  # the types the planner decodes stats with, per schema and layout
    groups: dict[tuple, list[int]] = {}
    if len(set(sids)) == 1 and cols.count(None) == n and write_cols.count(None) == n:
        groups[(sids[0], None, None)] = list(range(n))  # one schema, dense stats: one group (a loop took 1.5 ms)
    else:
        for i, key in enumerate(zip(sids, map(_as_tuple, cols), map(_as_tuple, write_cols), strict=True)):
            groups.setdefault(key, []).append(i)
    counts_of = np.asarray(row_counts, np.int64)
    for (sid, c, w), at_rows in groups.items():
        fs = schemas[sid]
        fmap = pushdowns(fs).field_map
        names = c if c is not None else w
        types = types_of.value(sid, c, w)
        try:
            whole_types = types()
            slots = stats_slots(names, schema, fs, fmap, stat_fields)
        except IndexCoreError:
            whole_types = slots = None
        alone = np.asarray(at_rows, np.int64)
        if slots is not None:
            alone = _decode_group(alone, slots, whole_types, stats, counts_of, out)
        for i in alone.tolist():  # irregular: the planner's own stats object and stats_map
            low, high, nulls = stats.row(i)
            got = file_stats({"_MIN_VALUES": low, "_MAX_VALUES": high, "_NULL_COUNTS": nulls}, types)
            out.put(i, stats_map(got, names, schema, fs, fmap, int(counts_of[i]), only=stat_fields))
    return out


def _as_tuple(value: list | None) -> tuple | None:
    return tuple(value) if value is not None else None


def _decode_group(at_rows: np.ndarray, slots: tuple, types: tuple, stats: StatsBytes, row_counts: np.ndarray,
                  out: FileStats) -> np.ndarray:
    """Put the cells of the files ``at_rows`` (one schema and layout) whose stats decode regularly
    into ``out``, a chunk of the stats at a time; returns the files left to the per-file path."""
    is_regular = (stats.null_len[at_rows] > 0) | (stats.low_len[at_rows] > _EMPTY_ROW_LEN)
    regular = at_rows[is_regular]
    alone = [at_rows[~is_regular]]
    for (lows, highs, nulls), at, rows in stats.by_chunk(regular):
        files = regular[at]
        # LazyStats' layout: the types past both the min row's arity and the null counts are not the stats'
        min_rows, max_rows = _rows_of(lows, rows), _rows_of(highs, rows)  # once for every field
        null_len = stats.null_len[files]
        width = np.minimum(len(types), np.maximum(min_rows[3], null_len))
        fields, counts = {}, {}
        for _col, slot in slots:
            if slot is not None and slot != LACKS and slot not in counts:
                counts[slot] = _null_counts(nulls, rows, null_len, slot)
                if slot < len(types):
                    fields[slot] = (FieldColumn(lows, rows, slot, types[slot], min_rows),
                                    FieldColumn(highs, rows, slot, types[slot], max_rows))
        alone.append(files[out._fill(files, slots, fields, counts, width, row_counts)])
    return np.concatenate(alone)
