"""Paimon's ``bsi`` file index (bit-sliced index over the column's 64-bit integer key).

Layout (big-endian, Java ``DataOutputStream``)::

    u8 version | i32 row count
    u8 has positive | [positive part]      values >= 0
    u8 has negative | [negative part]      absolute values of values < 0
    part: u8 version, i64 min, i64 max, ebm (portable roaring), i32 slice count,
          slice bitmaps (portable roaring, back to back; a bitmap carries no length prefix)

A part stores ``value - min`` bit by bit; its ebm holds the rows it covers. Paimon's writer
starts min at 0, so min is 0 and max is the largest (absolute) value in practice. Keys come
from :func:`indexcore.types.to_long` (DECIMAL unscaled, TIMESTAMP millis or micros).

Every range predicate walks all slices of a part, so the reader fetches the whole blob with
one read, finds each bitmap's extent from its header alone (:func:`.roaring.portable_size`) and
deserializes a part's bitmaps only when a predicate first needs them.
"""

from __future__ import annotations

import array
import struct
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
from pyroaring import BitMap

from indexcore.errors import CorruptFileError, UnsupportedError
from indexcore.expr.functions import (
    EQUAL,
    GREATER_OR_EQUAL,
    GREATER_THAN,
    LESS_OR_EQUAL,
    LESS_THAN,
    Comparison,
)
from indexcore.formats import bulk, roaring
from indexcore.formats.base import REMAIN, BitmapResult, FileIndexReader, FileIndexResult, FileIndexWriter
from indexcore.formats.column_values import LONG_MAX, LONG_MIN
from indexcore.io import ByteSource
from indexcore.types import (
    INTEGER_ROOTS,
    DataType,
    decimal_from_unscaled,
    timestamp_from_key,
    to_json_value,
    to_long,
)

try:  # the optional C decoder of a part's bitmaps (setup.py): without it, pyroaring reads them
    from indexcore.formats import _roaring_rows
except ImportError:
    _roaring_rows = None

VERSION = 1
NATIVE = _roaring_rows is not None  # BSI parts decoded to their rows' values in C


def check_type(dtype: DataType) -> None:
    """Paimon's ``getValueMapper``: the types a BSI index accepts."""
    if dtype.root not in INTEGER_ROOTS + ("DATE", "TIME", "TIMESTAMP", "TIMESTAMP_LTZ", "DECIMAL"):
        raise UnsupportedError(f"{dtype.sql()} type is not support to build bsi index yet.")


# (every stored value matches, no stored value matches) for min ``lo``, max ``hi``, predicate ``p``
_SHORTCUTS: dict[Comparison, Callable[[int, int, int], tuple[bool, bool]]] = {
    EQUAL: lambda lo, hi, p: (lo == hi == p, p < lo or p > hi),
    GREATER_OR_EQUAL: lambda lo, hi, p: (p <= lo, p > hi),
    GREATER_THAN: lambda lo, hi, p: (p < lo, p >= hi),
    LESS_OR_EQUAL: lambda lo, hi, p: (p >= hi, p < lo),
    LESS_THAN: lambda lo, hi, p: (p > hi, p <= lo),
}


# a comparison on stored values, as ``compare`` answers it from the slices
_COMPARE: dict[Comparison, Callable[[np.ndarray, int], np.ndarray]] = {
    EQUAL: np.equal, GREATER_OR_EQUAL: np.greater_equal, GREATER_THAN: np.greater,
    LESS_OR_EQUAL: np.less_equal, LESS_THAN: np.less,
}


_NO_ROWS = np.empty(0, np.uint32)


class BsiPart:
    """One ``BitSliceIndexRoaringBitmap``: values ``min + sum(bit_i << i)`` for the rows in ebm.

    Read from a blob, it keeps where its bitmaps lie (``spans``: ebm first, then each slice) and
    deserializes the ebm, then the slices, only when a predicate first needs them: a lookup the
    min/max answers, or one on the other part, decodes none of them."""

    def __init__(self, min: int = 0, max: int = 0, ebm: BitMap | None = None,  # noqa: A002 - Paimon's names
                 slices: list[BitMap] | None = None, size_bytes: int = 0, data: bytes = b"",
                 spans: tuple[tuple[int, int], ...] = (), name: str = "", structure: str = "",
                 values: tuple[np.ndarray, np.ndarray] | None = None, bounds: tuple[int, int] | None = None):
        self.min, self.max, self.size_bytes = min, max, size_bytes
        self._ebm = ebm if ebm is not None or spans else BitMap()
        self._slices = slices if slices is not None or spans else []
        self._data, self._spans, self._name, self._structure = data, spans, name, structure
        # a writer's part: its rows (uint32, ascending) and their stored values (int64, value - min),
        # the very numbers the slices hold bit by bit, so a comparison reads them directly; ``bounds``:
        # the least and greatest of those values where known (the C decoder's), not reduced again
        self._values, self._bounds = values, bounds

    def _bitmap(self, i: int, what: str) -> BitMap:
        at, n = self._spans[i]
        return roaring.deserialize(self._data[at:at + n], self._name, f"{self._structure} {what}", at)

    @property
    def ebm(self) -> BitMap:
        if self._ebm is None:
            self._ebm = self._bitmap(0, "existence bitmap")
        return self._ebm

    @property
    def slices(self) -> list[BitMap]:
        if self._slices is None:
            self._slices = [self._bitmap(i + 1, f"slice {i}") for i in range(len(self._spans) - 1)]
        return self._slices

    def rows(self) -> np.ndarray | None:
        """The ebm's rows (uint32, ascending) where they are at hand without a bitmap: the slices'
        numbers decoded in C, or a part the blob leaves out (none); else None."""
        if self._values is not None:
            return self._values[0]
        if not self._spans and self._ebm is not None and not self._ebm:
            return _NO_ROWS
        return None

    @property
    def slice_count(self) -> int:
        return len(self._spans) - 1 if self._spans else len(self.slices)

    def _all(self) -> BitMap:
        return BitMap(self.ebm)

    def compare(self, function: Comparison, predicate: int) -> BitMap:
        """Rows whose value ``function``-compares to ``predicate`` (equal, less than, ...):
        Paimon's min/max shortcut, then O'Neil's bit-sliced comparison."""
        every, none = _SHORTCUTS[function](self.min, self.max, predicate)
        if every:
            return self._all()
        if none:
            return BitMap()
        value = predicate - self.min
        if self._values is not None:  # the slices' numbers at hand: one array comparison (exact)
            rows, stored = self._values
            op = _COMPARE[function]
            return BitMap(array.array("I", rows[op(stored, value)].tobytes()))
        ebm, slices = self.ebm, self.slices
        gt, lt, eq = BitMap(), BitMap(), ebm
        for i in range(len(slices) - 1, -1, -1):
            sl = slices[i]
            if (value >> i) & 1:
                lt |= eq - sl
                eq = eq & sl
            else:
                gt |= eq & sl
                eq = eq - sl
        eq = eq & ebm
        if function is EQUAL:  # only the answer asked for is combined
            result = eq
        elif function is GREATER_THAN:
            result = gt
        elif function is LESS_THAN:
            result = lt
        elif function is LESS_OR_EQUAL:
            result = lt | eq
        else:
            result = gt | eq
        return result & ebm

    def between(self, low: int, high: int) -> BitMap | None:
        """``compare(GREATER_OR_EQUAL, low) & compare(LESS_OR_EQUAL, high)`` in one pass over the
        slices' numbers (one bitmap made, not three); None without them."""
        if self._values is None:
            return None
        ge_every, ge_none = _SHORTCUTS[GREATER_OR_EQUAL](self.min, self.max, low)
        le_every, le_none = _SHORTCUTS[LESS_OR_EQUAL](self.min, self.max, high)
        if ge_none or le_none:
            return BitMap()
        rows, stored = self._values
        if _roaring_rows is not None and rows.dtype == np.uint32 and stored.dtype == np.int64 \
                and rows.flags.c_contiguous and stored.flags.c_contiguous:  # one pass in C
            return BitMap(array.array("I", _roaring_rows.between(rows, stored, LONG_MIN if ge_every else low - self.min,
                                                                 LONG_MAX if le_every else high - self.min)))
        keep = None if ge_every else stored >= low - self.min
        if not le_every:
            keep = stored <= high - self.min if keep is None else keep & (stored <= high - self.min)
        return BitMap(array.array("I", (rows if keep is None else rows[keep]).tobytes()))

    def extreme(self, largest: bool) -> int | None:
        """The smallest or largest stored value, walking slices from the top bit (or, with the
        slices' numbers at hand, the least or greatest of them)."""
        if self._values is not None:
            stored = self._values[1]
            if not len(stored):
                return None
            if self._bounds is not None:
                return self.min + self._bounds[largest]
            return self.min + int(stored.max() if largest else stored.min())
        if not self.ebm:
            return None
        e, value, slices = self.ebm, 0, self.slices
        for i in range(len(slices) - 1, -1, -1):  # a bitmap made only where the rows narrow
            sl = slices[i]
            if largest:
                if e.intersect(sl):
                    e = e & sl
                    value |= 1 << i
            elif e <= sl:  # every row left has the bit
                value |= 1 << i
            else:
                e = e - sl
        return self.min + value


class BsiReader(FileIndexReader):
    """Reads one BSI blob (``source`` holds exactly the blob)."""

    index_type = "bsi"

    def __init__(self, dtype: DataType, source: ByteSource, options: dict[str, str] | None = None):
        check_type(dtype)
        self.dtype, self.source = dtype, source
        data = source.read_all("bsi index")
        name = source.name
        if len(data) < 6:
            raise CorruptFileError(f"bsi index of {len(data)} bytes is truncated", file=name,
                                   structure="bsi header", offset=0)
        self.version = data[0]
        if self.version > VERSION:
            raise UnsupportedError(f"bsi version {self.version} is newer than {VERSION}", file=name,
                                   structure="bsi header", offset=0)
        self.row_count = struct.unpack_from(">i", data, 1)[0]
        if self.row_count < 0:
            raise CorruptFileError(f"negative row count {self.row_count}", file=name, structure="bsi header",
                                   offset=1)
        pos = 5
        parts = []
        for label in ("positive", "negative"):
            if pos >= len(data):
                raise CorruptFileError(f"missing has-{label} flag", file=name, structure="bsi header",
                                       offset=pos)
            has = data[pos] != 0
            pos += 1
            part = BsiPart()
            if has:
                part, pos = self._read_part(data, pos, f"{label} bsi")
            parts.append(part)
        self.positive, self.negative = parts
        if pos != len(data):
            raise CorruptFileError(f"{len(data) - pos} unexpected bytes after the index", file=name,
                                   structure="bsi index", offset=pos)

    @classmethod
    def of_parts(cls, dtype: DataType, row_count: int, positive: BsiPart, negative: BsiPart) -> BsiReader:
        """A reader over a writer's parts, not its bytes (no source)."""
        check_type(dtype)
        self = cls.__new__(cls)
        self.dtype, self.source, self.version, self.row_count = dtype, None, VERSION, row_count
        self.positive, self.negative = positive, negative
        return self

    def _read_part(self, data: bytes, pos: int, structure: str) -> tuple[BsiPart, int]:
        name = self.source.name
        start = pos
        if pos + 17 > len(data):
            raise CorruptFileError("part header is truncated", file=name, structure=structure, offset=pos)
        version, lo, hi = struct.unpack_from(">bqq", data, pos)
        if version > VERSION:
            raise UnsupportedError(f"bsi part version {version} is newer than {VERSION}", file=name,
                                   structure=structure, offset=pos)
        if lo < 0 or lo > hi:
            raise CorruptFileError(f"invalid min {lo} / max {hi}", file=name, structure=structure, offset=pos + 1)
        pos += 17
        if _roaring_rows is not None:
            try:  # rows and values in one pass; anything not well formed is read below, which names it
                rows, values, end, spans, least, greatest = _roaring_rows.bsi_part(data, pos, len(data))
            except ValueError:
                pass
            else:
                return BsiPart(lo, hi, size_bytes=end - start, data=data, spans=spans, name=name, structure=structure,
                               values=(np.frombuffer(rows, np.uint32), np.frombuffer(values, np.int64)),
                               bounds=(least, greatest)), end
        n = roaring.portable_size(data, pos, len(data), name, f"{structure} existence bitmap")
        spans = [(pos, n)]
        pos += n
        if pos + 4 > len(data):
            raise CorruptFileError("slice count is truncated", file=name, structure=structure, offset=pos)
        count = struct.unpack_from(">i", data, pos)[0]
        if not 0 <= count <= 64:
            raise CorruptFileError(f"invalid slice count {count}", file=name, structure=structure, offset=pos)
        pos += 4
        for i in range(count):
            n = roaring.portable_size(data, pos, len(data), name, f"{structure} slice {i}")
            spans.append((pos, n))
            pos += n
        return BsiPart(lo, hi, size_bytes=pos - start, data=data, spans=tuple(spans), name=name,
                       structure=structure), pos

    # -- visits (Paimon's BitSliceIndexBitmapFileIndex.Reader)

    def _key(self, literal: Any) -> int:
        return to_long(self.dtype, literal)

    def _not_null(self) -> BitMap:
        return self.positive.ebm | self.negative.ebm

    def _eq_key(self, value: int) -> BitMap:
        if value == LONG_MIN:
            return BitMap()
        return self.negative.compare(EQUAL, -value) if value < 0 else self.positive.compare(EQUAL, value)

    def _in(self, literals: list) -> BitMap:
        out = BitMap()
        for lit in literals:
            if lit is not None:
                out |= self._eq_key(self._key(lit))
        return out

    def _range(self, function: Comparison, value: int) -> BitMap:
        """Rows whose key compares to ``value`` by a range ``function``; negative keys are stored
        negated, so they answer the reversed comparison."""
        pos, neg = self.positive, self.negative
        if function in (LESS_THAN, LESS_OR_EQUAL):
            if value == LONG_MIN:
                return BitMap()
            if value < 0:
                return neg.compare(function.reverse(), -value)
            return pos.compare(function, value) | neg.ebm
        if value == LONG_MIN:
            return self._not_null()
        if value < 0:
            return pos.ebm | neg.compare(function.reverse(), -value)
        return pos.compare(function, value)

    def visit_is_null(self) -> FileIndexResult:
        return BitmapResult(self._not_null().flip(0, self.row_count))

    def visit_is_not_null(self) -> FileIndexResult:
        return BitmapResult(self._not_null())

    def visit_equal(self, literal: Any) -> FileIndexResult:
        return self.visit_in([literal])

    def visit_not_equal(self, literal: Any) -> FileIndexResult:
        return self.visit_not_in([literal])

    def visit_in(self, literals: list) -> FileIndexResult:
        return REMAIN if all(lit is None for lit in literals) else BitmapResult(self._in(literals))

    def visit_not_in(self, literals: list) -> FileIndexResult:
        if any(lit is None for lit in literals):
            return REMAIN
        return BitmapResult(self._not_null() - self._in(literals))

    def _visit_range(self, function: Comparison, literal: Any) -> FileIndexResult:
        return REMAIN if literal is None else BitmapResult(self._range(function, self._key(literal)))

    def visit_less_than(self, literal: Any) -> FileIndexResult:
        return self._visit_range(LESS_THAN, literal)

    def visit_less_or_equal(self, literal: Any) -> FileIndexResult:
        return self._visit_range(LESS_OR_EQUAL, literal)

    def visit_greater_than(self, literal: Any) -> FileIndexResult:
        return self._visit_range(GREATER_THAN, literal)

    def visit_greater_or_equal(self, literal: Any) -> FileIndexResult:
        return self._visit_range(GREATER_OR_EQUAL, literal)

    def visit_between(self, low: Any, high: Any) -> FileIndexResult:
        if low is None or high is None:
            return REMAIN
        lo, hi = self._key(low), self._key(high)
        neg = self.negative.rows()
        if lo >= 0 and hi >= 0 and neg is not None and not len(neg):  # the positive part alone answers
            got = self.positive.between(lo, hi)
            if got is not None:
                return BitmapResult(got)
        return BitmapResult(self._range(GREATER_OR_EQUAL, lo) & self._range(LESS_OR_EQUAL, hi))

    # -- explorer figures

    def _display(self, key: int | None) -> Any:
        if key is None:
            return None
        r = self.dtype.root
        if r == "DECIMAL":
            value: Any = decimal_from_unscaled(self.dtype, key)
        elif r in ("TIMESTAMP", "TIMESTAMP_LTZ"):
            value = timestamp_from_key(self.dtype, key)
        else:
            value = key
        return to_json_value(self.dtype, value)

    def summary(self) -> dict:
        pos, neg = self.positive, self.negative
        pos_rows, neg_rows = pos.rows(), neg.rows()
        if pos_rows is not None and neg_rows is not None:  # counted on the decoded rows: no bitmap made
            n_pos, n_neg = len(pos_rows), len(neg_rows)
            non_null = n_pos + n_neg if not (n_pos and n_neg) else len(np.union1d(pos_rows, neg_rows))
        else:
            n_pos, n_neg, non_null = len(pos.ebm), len(neg.ebm), len(self._not_null())
        low = -neg.extreme(largest=True) if n_neg else pos.extreme(largest=False)
        high = pos.extreme(largest=True) if n_pos else (-neg.extreme(largest=False) if n_neg else None)
        return {
            "index_type": self.index_type, "version": self.version, "row_count": self.row_count,
            "null_count": self.row_count - non_null, "min": self._display(low), "max": self._display(high),
            "positive": {"rows": n_pos, "min": pos.min, "max": pos.max,
                         "slice_count": pos.slice_count, "size_bytes": pos.size_bytes},
            "negative": {"rows": n_neg, "min": neg.min, "max": neg.max,
                         "slice_count": neg.slice_count, "size_bytes": neg.size_bytes},
            "slice_count": pos.slice_count + neg.slice_count, "size_bytes": self.source.size,
        }


class BsiWriter(FileIndexWriter):
    """Builds BSI bytes the way Paimon's ``BitSliceIndexBitmapFileIndex.Writer`` does.

    Rows are kept as int64 key segments plus validity masks (``write`` buffers single rows),
    so the parts are sliced with array operations however the rows arrived.
    """

    index_type = "bsi"

    def __init__(self, dtype: DataType, options: dict[str, str] | None = None):
        check_type(dtype)
        super().__init__(dtype, options)
        self._pending: list[int | None] = []
        self._keys: list[np.ndarray] = []
        self._valid: list[np.ndarray] = []
        self._count = 0
        self._built: list[tuple | None] | None = None

    def write(self, value: Any) -> None:
        self._built = None
        key = None if value is None else to_long(self.dtype, value)
        if key is not None and key == LONG_MIN:
            raise UnsupportedError("the bsi index cannot store Long.MIN_VALUE")
        self._pending.append(key)
        self._count += 1

    def write_batch(self, values: Sequence[Any]) -> None:
        self._built = None
        dtype = self.dtype
        self._pending.extend(None if v is None else to_long(dtype, v) for v in values)
        self._count += len(values)
        self._flush()

    def accepts_arrow(self, arrow_type: Any) -> bool:
        return bulk.long_key_type(self.dtype, arrow_type)

    def write_arrow(self, array: Any) -> None:
        self._built = None
        if not self.accepts_arrow(array.type):
            super().write_arrow(array)
        array = bulk.as_array(array)
        self._flush()
        self._add(bulk.long_keys(self.dtype, array), bulk.valid_mask(array))

    def _flush(self) -> None:
        if self._pending:
            pending, self._pending = self._pending, []
            self._count -= len(pending)
            self._add(np.array([0 if k is None else k for k in pending], dtype=object),
                      np.array([k is not None for k in pending], dtype=bool))

    def _add(self, keys: np.ndarray, valid: np.ndarray) -> None:
        if keys.dtype == object:
            try:
                keys = keys.astype(np.int64)
            except OverflowError as exc:
                raise UnsupportedError("the bsi index keys must fit in a 64-bit long") from exc
        if np.any(keys[valid] == LONG_MIN):
            raise UnsupportedError("the bsi index cannot store Long.MIN_VALUE")
        self._keys.append(keys)
        self._valid.append(valid)
        self._count += len(keys)

    @property
    def empty(self) -> bool:
        return self._count == 0

    def _parts(self) -> list[tuple | None]:
        """The positive then the negative part as (max, ebm, slices, (rows, values)), None when it holds no row:
        what both the blob and :meth:`reader` are made of, computed once."""
        if self._built is None:
            self._flush()
            keys = np.concatenate(self._keys) if self._keys else np.zeros(0, dtype=np.int64)
            valid = np.concatenate(self._valid) if self._valid else np.zeros(0, dtype=bool)
            self._built = [_part(np.flatnonzero(part), keys) for part in (valid & (keys >= 0), valid & (keys < 0))]
        return self._built

    def serialized_bytes(self) -> bytes:
        out = [struct.pack(">bi", VERSION, self._count)]
        for part in self._parts():
            out.append(struct.pack(">?", part is not None))
            if part is not None:
                high, ebm, slices, _ = part
                # run-optimized in place: the same rows, as the bitmaps a reader of the blob holds
                out += [struct.pack(">bqq", VERSION, 0, high), roaring.serialize_optimized(ebm, copy=False),
                        struct.pack(">i", len(slices))]
                out += [roaring.serialize_optimized(s, copy=False) for s in slices]
        return b"".join(out)

    @classmethod
    def many(cls, dtype: DataType, options: dict[str, str] | None, arrays: Sequence[Any]) -> list[BsiWriter] | None:
        """One writer per Arrow column of ``arrays``, their parts computed together (:func:`_many`)."""
        return _many(dtype, options, arrays)

    def reader(self) -> BsiReader:
        """A reader over what was written, answering every predicate as one over
        :meth:`serialized_bytes` does (tests/test_writer_readers.py), without parsing them."""
        positive, negative = (BsiPart() if p is None else BsiPart(0, p[0], p[1], p[2], values=p[3])
                              for p in self._parts())
        return BsiReader.of_parts(self.dtype, self._count, positive, negative)


def _many(dtype: DataType, options: dict[str, str] | None, arrays: Sequence[Any]) -> list[BsiWriter] | None:
    """:meth:`BsiWriter.many`: one writer per Arrow column of ``arrays`` (e.g. one column of many small
    files), each as if it alone were written with ``write_arrow``, their parts computed together
    (the same bytes, tests/test_writer_many.py). None where they cannot be (a type the writer does
    not take as Arrow, mixed types, Long.MIN_VALUE): write them one by one."""
    writers = [BsiWriter(dtype, options) for _ in arrays]
    arrays = [bulk.as_array(a) for a in arrays]
    if not arrays or len({a.type for a in arrays}) != 1 or not writers[0].accepts_arrow(arrays[0].type):
        return None
    probe = BsiWriter(dtype, options)
    try:
        probe.write_arrow(pa.concat_arrays(arrays))  # each row's key, as each file's writer takes it
    except UnsupportedError:
        return None
    keys, valid = probe._keys[0], probe._valid[0]
    lengths = np.array([len(a) for a in arrays], dtype=np.int64)
    file_of = np.repeat(np.arange(len(arrays), dtype=np.int64), lengths)
    starts = np.cumsum(lengths) - lengths
    parts: list[list] = [[] for _ in arrays]
    for mask in (valid & (keys >= 0), valid & (keys < 0)):
        rows = np.flatnonzero(mask)
        files = file_of[rows]
        values = np.abs(keys[rows])
        local = rows - starts[files]
        bounds = bulk.file_bounds(files, len(arrays))
        highs = [int(values[bounds[f]:bounds[f + 1]].max()) if bounds[f + 1] > bounds[f] else -1
                 for f in range(len(arrays))]
        slices = bulk.bit_slices_by_file(local, files, values, [max(h, 0).bit_length() for h in highs])
        ids = np.ascontiguousarray(local, dtype=np.uint32)
        for f, high in enumerate(highs):
            lo, hi = bounds[f], bounds[f + 1]
            parts[f].append(None if high < 0 else
                            (high, BitMap(array.array("I", ids[lo:hi].tobytes())), slices[f], (ids[lo:hi], values[lo:hi])))
    for w, n, built in zip(writers, lengths.tolist(), parts, strict=True):
        w._count, w._built = n, built
    return writers


def _part(rows: np.ndarray, keys: np.ndarray) -> tuple | None:
    """One part with min 0 (Paimon's collector starts min at 0): its max (the largest absolute
    value), its rows, its slices, and its rows and values as arrays; None without rows."""
    if not len(rows):
        return None
    values = np.abs(keys[rows])
    high = int(values.max())
    return (high, bulk.bitmap_of(rows), bulk.bit_slices(rows, values, high.bit_length()),
            (np.ascontiguousarray(rows, dtype=np.uint32), values))
