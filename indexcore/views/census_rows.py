"""The census's rows: the ``$file_indexes`` schema, the verdicts of a head's entries, and the fold
of a census walk (:class:`Walked`) into Arrow columns. Kept apart from the walk itself
(:mod:`indexcore.views.census`), which reads the heads and hands each file's verdicts here."""

from __future__ import annotations

from array import array
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from indexcore.formats.container import EMPTY_INDEX_FLAG
from indexcore.types import DataType
from indexcore.warehouse.plan_columns import whole

# a text column repeated on many rows: dictionary-encoded, its dictionary the plan's own column
# (paths, ``.index`` paths, file names), the distinct partitions, or the few texts of a column (column
# names, index kinds, storage types, errors), so a census row costs 4 bytes per such column instead of
# a copy of the text (at 1,000,000 files, about 1.2 GB less for the first, 90 MB for the others)
SHARED_TEXT = pa.dictionary(pa.int32(), pa.string())
FILE_INDEXES = pa.schema([
    ("partition", SHARED_TEXT), ("bucket", pa.int32()), ("file_path", SHARED_TEXT),
    ("file_size_in_bytes", pa.int64()), ("record_count", pa.int64()), ("schema_id", pa.int64()),
    ("column_name", SHARED_TEXT), ("index_type", SHARED_TEXT), ("storage_type", SHARED_TEXT),
    ("index_file_path", SHARED_TEXT), ("index_size_in_bytes", pa.int64()),
    ("index_container_size_in_bytes", pa.int64()), ("is_empty", pa.bool_()),
    ("file_name", SHARED_TEXT), ("index_offset", pa.int64()), ("error", SHARED_TEXT)])
@dataclass(frozen=True)
class Verdicts:
    """What a census says of each entry of one head (in head order), for every file of one schema
    whose head lists the same (column, kind, empty) entries: judged once per such shape, not once
    per entry of a 50,000-file snapshot."""

    columns: tuple[str, ...]
    kinds: tuple[str, ...]
    empty: tuple[bool, ...]
    types: tuple[DataType | None, ...]
    errors: tuple[str | None, ...]  # why the entry cannot be used (its column, then its kind)
    options: tuple[dict | None, ...]
    unusable: tuple[bool, ...]  # an error, or a kind that is not a file index
    any_unusable: bool


NO_VERDICTS = Verdicts((), (), (), (), (), (), (), False)


class Walked:
    """What a census walk found, folded as it goes: each shown file's pattern (the verdicts of its
    head's shape and which entries are shown), its head entries' spans and its container size."""

    def __init__(self, errors_only: bool, rows: bool = False):
        self.errors_only = errors_only
        # what the file is to the caller: a plan row (``rows``: 8 bytes each), or a live file
        self.shown: list | array = array("q") if rows else []
        self.patterns: list[tuple[Verdicts | None, tuple[int, ...], str | None]] = []  # verdicts, shown, error
        self.pattern_of: dict[int, int] = {}  # id(verdicts) -> its pattern (verdicts outlive the census)
        self.file_pattern = array("q")  # per shown file, as the others: 8 bytes a file, no int object
        self.entries = array("q")  # head entries per shown file (0 when unreadable)
        self.spans_flat = array("q")  # (offset, length) of every head entry, flat: 8 bytes a value
        self.container = array("q")  # container size per shown file (-1: unreadable, null)

    def pattern(self, v: Verdicts) -> int:
        """The pattern of a readable head's verdicts (-2: none of its rows is shown)."""
        if self.errors_only and not v.any_unusable:
            return -2
        pid = self.pattern_of.get(id(v))
        if pid is None:
            at = tuple(j for j, bad in enumerate(v.unusable) if bad or not self.errors_only)
            pid = self.pattern_of[id(v)] = len(self.patterns)
            self.patterns.append((v, at, None))
        return pid

    def add(self, who, spans, size: int | None, why: str | None, v: Verdicts | None) -> None:
        """One walked file: unreadable (``why``: one row, no column), or its head's ``spans``."""
        if why is not None:
            pid = len(self.patterns)
            self.patterns.append((None, (0,), why))
        else:
            pid = self.pattern(v)
            if pid < 0:
                return
            self.spans_flat.extend(spans)
        self.shown.append(who)
        self.file_pattern.append(pid)
        self.entries.append(len(spans) // 2)
        self.container.append(-1 if size is None else size)

    def add_many(self, who: np.ndarray, pattern: np.ndarray, entries: np.ndarray, spans: np.ndarray,
                 size: np.ndarray, faults: dict[int, tuple]) -> None:
        """A batch of walked files in order, as arrays: each file's ``pattern`` (:meth:`pattern`;
        -1: the file at that position is added from ``faults`` as :meth:`add` takes it), its head's
        entry count and container size, and all its entries' spans flat, in file order."""
        ends = np.cumsum(entries) * 2
        start = 0
        for stop in [*sorted(faults), len(pattern)]:
            if stop > start:
                keep = pattern[start:stop] >= 0
                count = entries[start:stop]
                part = spans[(ends[start - 1] if start else 0):(ends[stop - 1] if stop else 0)]
                if not keep.all():
                    part = part.reshape(-1, 2)[np.repeat(keep, count)].ravel()
                for column, values in ((self.shown, who[start:stop]), (self.file_pattern, pattern[start:stop]),
                                       (self.entries, count), (self.container, size[start:stop])):
                    column.frombytes(np.ascontiguousarray(values[keep], np.int64).tobytes())
                self.spans_flat.frombytes(np.ascontiguousarray(part, np.int64).tobytes())
            if stop < len(pattern):
                self.add(int(who[stop]), *faults[stop])
            start = stop + 1

    def table(self, file_columns) -> pa.Table:
        """The census's rows: each shown file's pattern of rows over its head entries' spans (numpy
        indexes, Arrow takes; no Python value per row); ``file_columns(shown)``: the per-file ones."""
        if not self.shown:
            return FILE_INDEXES.empty_table()
        per_file = file_columns(self.shown)
        patterns = self.patterns
        # the patterns' rows, flat: pattern p's r-th row is row pattern_start[p] + r
        p_len = np.fromiter((len(at) for _, at, _ in patterns), np.int64, len(patterns))
        p_start = starts(p_len)
        p_at, p_column, p_kind, p_empty, p_error, p_readable = [], [], [], [], [], []
        for v, at, why in patterns:
            p_at.extend(at)
            if v is None:
                for column in (p_column, p_kind, p_empty):
                    column.append(None)
                p_error.append(why)
                p_readable.append(False)
                continue
            p_column.extend(v.columns[i] for i in at)
            p_kind.extend(v.kinds[i] for i in at)
            p_empty.extend(v.empty[i] for i in at)
            p_error.extend(v.errors[i] for i in at)
            p_readable.extend([True] * len(at))
        # each row: its file, its pattern row, its head entry
        pattern = np.frombuffer(self.file_pattern, np.int64)
        n_rows = p_len[pattern]
        file_of_row = np.repeat(np.arange(len(pattern), dtype=np.int64), n_rows)
        r = np.arange(int(n_rows.sum()), dtype=np.int64) - np.repeat(starts(n_rows), n_rows)
        pattern_row = p_start[pattern[file_of_row]] + r
        entry_base = starts(np.frombuffer(self.entries, np.int64))
        readable = np.asarray(p_readable, bool)[pattern_row]
        entry = np.where(readable, entry_base[file_of_row] + np.asarray(p_at, np.int64)[pattern_row], 0)
        flat = self.spans_flat
        spans = (np.frombuffer(flat, np.int64) if len(flat) else np.zeros(2, np.int64)).reshape(-1, 2)
        offset, length = spans[entry, 0], spans[entry, 1]
        size = np.where(readable & (offset != EMPTY_INDEX_FLAG), length, 0)
        rows, at = pa.array(file_of_row), pa.array(pattern_row)
        container = np.frombuffer(self.container, np.int64)
        columns = {
            "column_name": few_texts(p_column, at),
            "index_type": few_texts(p_kind, at),
            "index_size_in_bytes": pa.array(size, pa.int64()),
            "index_container_size_in_bytes": pa.array(container, pa.int64(), mask=container < 0).take(rows),
            "is_empty": pa.array(p_empty, pa.bool_()).take(at),
            "index_offset": pa.array(offset, pa.int64(), mask=~readable),
            "error": few_texts(p_error, at),
        }
        return pa.Table.from_arrays(
            [as_column(per_file[f.name], f.type).take(rows) if f.name in per_file else columns[f.name]
             for f in FILE_INDEXES], schema=FILE_INDEXES)


def as_column(values, kind: pa.DataType) -> pa.Array:
    """One of a census's per-file columns (a Python list, or Arrow) as an array of ``kind``."""
    if isinstance(values, list):
        if kind == SHARED_TEXT:  # each distinct text once
            return pa.array(values, pa.string()).dictionary_encode()
        return pa.array(values, kind)
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    return values if values.type == kind else values.cast(kind)


def few_texts(values: list[str | None], at: pa.Array) -> pa.DictionaryArray:
    """``values[at]`` as a :data:`SHARED_TEXT` array over the distinct texts of ``values`` (the
    census's patterns' few column names, kinds and errors): 4 bytes a row, no text copied per row."""
    encoded = pa.array(values, pa.string()).dictionary_encode()  # nulls: null indices
    return pa.DictionaryArray.from_arrays(encoded.indices.take(at), encoded.dictionary)


def storage_types(embedded: np.ndarray) -> pa.DictionaryArray:
    """Each file's ``storage_type`` (EMBEDDED in the manifest, else FILE: a ``.index`` file) as a
    :data:`SHARED_TEXT` array whose dictionary holds the kinds used."""
    kinds = np.array([True, False])[np.isin([True, False], embedded)]  # the ones used, EMBEDDED first
    codes = np.zeros(len(embedded), np.int32) if len(kinds) < 2 else np.where(embedded, 0, 1).astype(np.int32)
    return pa.DictionaryArray.from_arrays(pa.array(codes, pa.int32()),
                                          pa.array(["EMBEDDED" if k else "FILE" for k in kinds], pa.string()))


def values_of(column: pa.ChunkedArray | pa.Array) -> list:
    """A census column's values as Python (None for null); a :data:`SHARED_TEXT` column's as its
    plain texts first (Arrow's ``to_pylist`` of a dictionary array makes a scalar per row: 16x
    slower than the cast's at a million rows)."""
    if pa.types.is_dictionary(column.type):
        column = column.cast(column.type.value_type)
    return column.to_pylist()


def codes_of(column: pa.ChunkedArray | pa.Array) -> tuple[list, np.ndarray]:
    """A census column's distinct values (None for null) and each row's number among them: a
    :data:`SHARED_TEXT` column's own dictionary and indices (no hash of its rows; a value no row
    uses may be listed), another column's ``dictionary_encode``."""
    values = whole(column)
    if not pa.types.is_dictionary(values.type):
        values = pc.dictionary_encode(values, null_encoding="encode")
    dictionary, codes = values.dictionary.to_pylist(), values.indices
    if codes.null_count:
        codes = pc.fill_null(codes, len(dictionary))
        dictionary.append(None)
    return dictionary, codes.to_numpy(zero_copy_only=False).astype(np.int64)


def distinct_codes(codes: list[pa.Array], size: int) -> int:
    """How many distinct values among dictionary indices ``codes`` (nulls left out) into a dictionary
    of ``size`` texts: a flag per text, no hash of the rows (at 1,000,000 files 0.01 s against
    ``count_distinct``'s 0.15 s per million, and 1 MB)."""
    seen = np.zeros(size, bool)
    for chunk in codes:
        if chunk.null_count:
            chunk = chunk.drop_null()
        seen[chunk.to_numpy(zero_copy_only=False)] = True
    return int(np.count_nonzero(seen))


def plain(census: pa.Table) -> pa.Table:
    """A census with its :data:`SHARED_TEXT` columns decoded to plain text: to compare two
    censuses whose dictionaries differ (one process's is the plan's columns, Spark's its tasks')."""
    return census.cast(pa.schema([pa.field(f.name, pa.string()) if f.type == SHARED_TEXT else f
                                  for f in census.schema]))


def starts(counts: np.ndarray) -> np.ndarray:
    """Where each run of ``counts`` starts when the runs are laid end to end."""
    return np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
