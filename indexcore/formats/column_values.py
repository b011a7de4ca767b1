"""What a file index is audited against: one column of a data file, and how an index disagrees with it.

Each kind's audit check (reachable from :mod:`indexcore.formats.registry`) compares its reader
with a :class:`ColumnValues` and returns :class:`Disagreement` s, none when the index agrees.
A column is dictionary-encoded once (Arrow) and rows are grouped per distinct value, so no
check loops over rows in Python.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import BitMap

from indexcore.formats.bulk import bitmap_of
from indexcore.types import INTEGER_ROOTS, DataType, to_json_value, to_long
from indexcore.types.values import to_internal

#: at most this many values are listed in a disagreement
MAX_VALUES_LISTED = 5
LONG_MIN, LONG_MAX = -(1 << 63), (1 << 63) - 1

# the audit's check names (its ``Check`` values) a kind's check reports
BITMAP_ROWS, MIN_MAX, NULL_ROWS = "bitmap-rows", "min-max", "null-rows"
ROW_COUNT, STALE_VALUES, VALUE_COVERAGE = "row-count", "stale-values", "value-coverage"


@dataclass(frozen=True)
class Disagreement:
    """One way an index disagrees with its column: the audit check it fails, why, the values shown."""

    check: str
    message: str
    value: Any = None


def show(dtype: DataType, values: Iterable[Any]) -> list:
    """Up to :data:`MAX_VALUES_LISTED` internal values as JSON values (repr when not convertible)."""
    out = []
    for v in values:
        if len(out) >= MAX_VALUES_LISTED:
            break
        try:
            out.append(to_json_value(dtype, v))
        except (TypeError, ValueError, AttributeError):
            out.append(repr(v))
    return out


def positions_of(bitmap: BitMap, n: int) -> np.ndarray:
    """The bitmap's positions below ``n``."""
    idx = np.frombuffer(bitmap.to_array(), dtype=np.uint32)
    return idx[idx < n]


def slice_codes(ebm: BitMap, slices: list[BitMap], n: int) -> np.ndarray:
    """Each row's code rebuilt from bit slices (0 where no slice is set)."""
    codes = np.zeros(n, dtype=np.int64)
    for i, sl in enumerate(slices):
        idx = positions_of(sl, n)
        codes[idx] |= np.int64(1) << np.int64(i)
    return codes


def row_count_disagreement(index_rows: int, data_rows: int) -> Disagreement | None:
    if index_rows != data_rows:
        return Disagreement(ROW_COUNT, f"index holds {index_rows} rows, the data file {data_rows}", index_rows)
    return None


def checks_row_count(audit: Callable[[Any, ColumnValues, int], Iterator[Disagreement]]):
    """A kind's audit that first compares the index's row count with the file's, and stops at that
    one disagreement when they differ (nothing else can be compared row by row)."""

    @functools.wraps(audit)
    def checked(reader, col: ColumnValues, n: int) -> Iterator[Disagreement]:
        bad = row_count_disagreement(reader.row_count, n)
        if bad is not None:
            yield bad
            return
        yield from audit(reader, col, n)

    return checked


def null_rows_disagreement(null_rows: BitMap, col: ColumnValues) -> Disagreement | None:
    want = col.nulls
    if null_rows != want:
        return Disagreement(NULL_ROWS, f"index has {len(null_rows)} null rows, the data {len(want)}", len(null_rows))
    return None


def _hashable(v: Any) -> Any:
    return v if not isinstance(v, list | dict | bytearray) else repr(v)


class ColumnValues:
    """One column of a data file as Arrow, with the forms the checks need derived once, vectorized.

    ``encoded`` is the column's distinct non-null values (internal, first-occurrence order)
    and, per row, the index of its value among them (-1 for null): the checks compare an
    index against the distinct values and group rows by value, never looping over rows.
    """

    def __init__(self, data: pa.Array | pa.ChunkedArray, dtype: DataType):
        if isinstance(data, pa.ChunkedArray):
            data = data.combine_chunks() if data.num_chunks != 1 else data.chunk(0)
        self.array = data
        self.dtype = dtype
        self.n = len(data)

    @cached_property
    def values(self) -> list:
        """Every row's internal value (only the key-hash check needs them)."""
        return to_internal(self.array, self.dtype)

    @property
    def has_values(self) -> bool:
        return self.array.null_count < self.n

    @cached_property
    def null_mask(self) -> np.ndarray:
        if not self.array.null_count:
            return np.zeros(self.n, dtype=bool)
        return np.asarray(self.array.is_null().to_numpy(zero_copy_only=False), dtype=bool)

    @cached_property
    def nulls(self) -> BitMap:
        return bitmap_of(np.flatnonzero(self.null_mask)) if self.array.null_count else BitMap()

    @cached_property
    def encoding(self) -> tuple[pa.Array | None, list | None, np.ndarray]:
        """(Arrow dictionary or None, Python distinct values or None, per-row index or -1)."""
        try:
            enc = pc.dictionary_encode(self.array)
        except (pa.ArrowNotImplementedError, pa.ArrowInvalid, TypeError):
            seen: dict[Any, int] = {}
            firsts: list = []
            idx = np.full(self.n, -1, dtype=np.int64)
            for i, v in enumerate(self.values):
                if v is None:
                    continue
                j = seen.setdefault(_hashable(v), len(seen))
                if j == len(firsts):
                    firsts.append(v)
                idx[i] = j
            return None, firsts, idx
        indices = pc.fill_null(enc.indices, -1).to_numpy(zero_copy_only=False).astype(np.int64)
        return enc.dictionary, None, indices

    @cached_property
    def distinct(self) -> list:
        """The distinct non-null internal values, in first-occurrence order."""
        dictionary, firsts, _ = self.encoding
        return firsts if dictionary is None else to_internal(dictionary, self.dtype)

    @property
    def encoded(self) -> tuple[list, np.ndarray]:
        return self.distinct, self.encoding[2]

    @property
    def index(self) -> np.ndarray:
        return self.encoding[2]

    def distinct_values(self, which: Iterable[int]) -> list:
        """Internal values of some distinct entries (without converting all of them)."""
        which = list(which)
        dictionary, firsts, _ = self.encoding
        if dictionary is None or "distinct" in self.__dict__:
            return [self.distinct[j] for j in which]
        return to_internal(dictionary.take(pa.array(which, pa.int64())), self.dtype)

    def distinct_count(self) -> int:
        dictionary, firsts, _ = self.encoding
        return len(firsts) if dictionary is None else len(dictionary)

    def row_longs(self) -> tuple[list, np.ndarray]:
        """:func:`indexcore.types.to_long` of each distinct value, and per row as int64 where it fits
        (0 for null rows and for keys beyond the long range)."""
        dictionary, _, idx = self.encoding
        if dictionary is not None and self.dtype.root in INTEGER_ROOTS \
                and pa.types.is_integer(dictionary.type):
            longs = dictionary.to_numpy(zero_copy_only=False).astype(np.int64)
            keys = np.append(longs, 0)
            return longs.tolist(), keys[idx]
        present = [to_long(self.dtype, v) for v in self.distinct]
        keys = np.array([k if LONG_MIN <= k <= LONG_MAX else 0 for k in present] + [0], dtype=np.int64)
        return present, keys[idx]

    def groups(self) -> list[tuple[int, np.ndarray]]:
        """(distinct value index, its sorted row positions) per distinct value, in first-occurrence
        order, with (-1, null rows) placed where the first null occurs."""
        distinct, idx = self.encoded
        order = np.argsort(idx, kind="stable")
        counts = np.bincount(idx + 1, minlength=len(distinct) + 1)
        parts = np.split(order, np.cumsum(counts)[:-1])
        out = [(j, parts[j + 1]) for j in range(len(distinct))]
        if counts[0]:
            first_null = parts[0][0]
            at = next((k for k, (_, rows) in enumerate(out) if rows[0] > first_null), len(out))
            out.insert(at, (-1, parts[0]))
        return out

    def rows_values(self, rows: np.ndarray) -> list:
        """Internal values of some rows (for listing them in a finding)."""
        distinct, idx = self.encoded
        return [None if idx[i] < 0 else distinct[idx[i]] for i in rows[:MAX_VALUES_LISTED]]
