"""Explain's file index results of many files as columns, not an object per file.

Each file's result (what its file index answered, or what the read decided) is one of Paimon's
``FileIndexResult`` values: none, REMAIN, SKIP, or a bitmap of the rows that may match. Kept as
a :class:`~indexcore.formats.base.BitmapResult` each, 966,800 files that all reach the index
stage held two of them (a pyroaring bitmap and its result object) at about 75 bytes a file
each besides the rows. :class:`IndexResults` keeps a kind code per file and the bitmaps' row
positions in one buffer (2 bytes a row while every position fits, as in a roaring array
container, else 4; 13 bytes a file besides); a result object is made only when one file's is
read, equal to the one explain decided.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Sequence

import numpy as np
import pyarrow as pa
from pyroaring import BitMap

from indexcore.formats.base import REMAIN, SKIP, BitmapResult, FileIndexResult
from indexcore.scan.records import frame_text

#: a result's kind code: none, REMAIN, SKIP, a bitmap of rows
NONE, REMAINS, SKIPS, BITMAP = 0, 1, 2, 3
_CONSTANTS = (None, REMAIN, SKIP)


def result_kind(result: FileIndexResult | None) -> int:
    """The kind code of one result (:data:`NONE`, :data:`REMAINS`, :data:`SKIPS`, :data:`BITMAP`)."""
    if result is None:
        return NONE
    if isinstance(result, BitmapResult):
        return BITMAP
    return REMAINS if result.remain() else SKIPS


class IndexResults(Sequence):
    """``n`` files' index results by position (see the module); ``results[i] = r`` sets one."""

    __slots__ = ("kinds", "_starts", "_sizes", "_rows")

    def __init__(self, n: int):
        self.kinds = np.zeros(n, np.int8)
        self._starts = np.zeros(n, np.int64)  # each bitmap's first position in _rows
        self._sizes = np.zeros(n, np.uint32)  # each bitmap's row count (0: none)
        self._rows = array("H")  # the bitmaps' rows, one after another ("I" once one needs it)

    @classmethod
    def of(cls, results: Sequence[FileIndexResult | None]) -> IndexResults:
        """``results`` as columns (themselves when they are already)."""
        if isinstance(results, IndexResults):
            return results
        out = cls(len(results))
        for i, r in enumerate(results):
            if r is not None:
                out[i] = r
        return out

    @classmethod
    def concat(cls, parts: Iterable[IndexResults]) -> IndexResults:
        """The files of ``parts``, one after another."""
        parts = list(parts)
        out = cls(0)
        out.kinds = np.concatenate([p.kinds for p in parts]) if parts else out.kinds
        out._sizes = np.concatenate([p._sizes for p in parts]) if parts else out._sizes
        starts, used = [], 0
        if any(p._rows.typecode == "I" for p in parts):
            out._rows = array("I")
        for p in parts:
            starts.append(p._starts + used)
            out._rows.extend(p._rows if p._rows.typecode == out._rows.typecode else array("I", p._rows))
            used += len(p._rows)
        out._starts = np.concatenate(starts) if parts else out._starts
        return out

    def __len__(self) -> int:
        return len(self.kinds)

    def __setitem__(self, at: int, result: FileIndexResult | None) -> None:
        kind = result_kind(result)
        self.kinds[at] = kind
        if kind == BITMAP:
            bitmap = result.bitmap
            if bitmap and bitmap.max() > 0xFFFF and self._rows.typecode == "H":
                self._rows = array("I", self._rows)
            self._starts[at], self._sizes[at] = len(self._rows), len(bitmap)
            rows = bitmap.to_array()
            if self._rows.typecode == "I":
                self._rows.extend(rows)
            elif rows:  # narrowed in numpy: a third of the time of array("H", rows)
                self._rows.frombytes(np.frombuffer(rows, np.uint32).astype(np.uint16).tobytes())
        else:
            self._sizes[at] = 0

    def __getitem__(self, at):
        if isinstance(at, slice):
            return [self[i] for i in range(len(self))[at]]
        kind = self.kinds[at]
        if kind != BITMAP:
            return _CONSTANTS[kind]
        start = int(self._starts[at])
        rows = self._rows[start:start + int(self._sizes[at])]
        return BitmapResult(BitMap(rows if rows.typecode == "I" else array("I", rows)))

    def sizes(self) -> np.ndarray:
        """Each file's bitmap row count (0 where its result is not a bitmap)."""
        return self._sizes.astype(np.int64)

    def skips(self) -> np.ndarray:
        """Whether each file's result rules it out (SKIP, or a bitmap of no row): ``not remain()``."""
        return (self.kinds == SKIPS) | ((self.kinds == BITMAP) & (self._sizes == 0))

    def texts(self) -> np.ndarray:
        """Each file's result as :func:`~indexcore.scan.records.frame_text` shows it, one text per
        distinct bitmap size and kind (not a text per file)."""
        out = np.empty(len(self), object)
        for kind in (REMAINS, SKIPS):
            out[self.kinds == kind] = frame_text(_CONSTANTS[kind])
        bitmaps = np.flatnonzero(self.kinds == BITMAP)
        if len(bitmaps):
            sizes, at = np.unique(self._sizes[bitmaps], return_inverse=True)
            texts = np.array([f"{s} rows" for s in sizes.tolist()], object)
            out[bitmaps] = texts[at]
        return out

    def to_arrow(self) -> tuple[pa.Array, pa.Array]:
        """The kind codes (``int8``) and each bitmap's rows (``list<uint32>``, null where none): a
        Spark task's shipped results, read back by :meth:`of_arrow`."""
        is_bitmap = self.kinds == BITMAP
        sizes = np.where(is_bitmap, self._sizes, 0).astype(np.int32)
        offsets = np.zeros(len(self) + 1, np.int32)
        np.cumsum(sizes, out=offsets[1:])
        rows = np.frombuffer(self._rows, np.dtype(self._rows.typecode)) if len(self._rows) else np.zeros(0, np.uint32)
        take = np.repeat(self._starts - offsets[:-1], sizes) + np.arange(offsets[-1], dtype=np.int64)
        values = pa.array(rows[take].astype(np.uint32), pa.uint32())
        lists = pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), values,
                                         mask=pa.array(~is_bitmap, pa.bool_()))
        return pa.array(self.kinds, pa.int8()), lists

    @classmethod
    def of_arrow(cls, kinds: pa.Array, rows: pa.Array) -> IndexResults:
        """What :meth:`to_arrow` made (one chunk each), as columns again."""
        out = cls(0)
        out.kinds = kinds.to_numpy(zero_copy_only=False).astype(np.int8)
        offsets = rows.offsets.to_numpy().astype(np.int64)
        out._starts = offsets[:-1] - offsets[0]
        out._sizes = np.diff(offsets).astype(np.uint32)
        values = rows.flatten().to_numpy(zero_copy_only=False)
        small = not len(values) or int(values.max()) <= 0xFFFF
        out._rows = array("H" if small else "I", values.astype(np.uint16 if small else np.uint32).tobytes())
        out._sizes[out.kinds != BITMAP] = 0
        return out

    def __eq__(self, other: object) -> bool:
        return isinstance(other, IndexResults) and len(self) == len(other) and all(
            a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # mutable

    def __reduce__(self):
        return _rebuilt, (self.kinds, self._starts, self._sizes, self._rows)


def _rebuilt(kinds, starts, sizes, rows) -> IndexResults:
    out = IndexResults(0)
    out.kinds, out._starts, out._sizes, out._rows = kinds, starts, sizes, rows
    return out
