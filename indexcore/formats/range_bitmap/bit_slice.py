"""The range-bitmap bit-sliced index over codes (Paimon's ``BitSliceIndexBitmap``): read, compared, written."""

from __future__ import annotations

import array
import struct

import numpy as np
from pyroaring import BitMap

from indexcore.errors import CorruptFileError, UnsupportedError
from indexcore.formats import roaring
from indexcore.formats.range_bitmap.keys import VERSION, read_header
from indexcore.io import ByteSource

# ---------------------------------------------------------------------------------------
# The bit-sliced index over codes.


class BitSliceIndexBitmap:
    """Paimon's range-bitmap ``BitSliceIndexBitmap``: codes of rows, one bitmap per bit."""

    def __init__(self, source: ByteSource, offset: int):
        self.source = source
        cur, body = read_header(source, offset, "bsi header", 10)
        version = cur.i8()
        if version > VERSION:
            raise UnsupportedError(f"bsi version {version} is newer than {VERSION}", file=source.name,
                                   structure="bsi header", offset=offset + 4)
        count = cur.i8()
        if count < 0:
            cur.fail(f"negative slice count {count}", -1)
        self.ebm_length = cur.length("ebm length")
        indexes_length = cur.length("indexes length")
        if indexes_length != 8 * count:
            cur.fail(f"indexes length {indexes_length} does not match {count} slices", -4)
        pairs = struct.unpack(f">{2 * count}i", cur.take(indexes_length))
        self.body = body
        self.slice_area = self.body + self.ebm_length
        offsets, lengths = pairs[0::2], pairs[1::2]
        self.index = list(zip(offsets, lengths, strict=True))
        end = self.slice_area
        self._span = (0, 0)   # the slices' byte range inside the slice area
        if count:
            ends = [o + n for o, n in self.index]
            lo, hi = min(offsets), max(ends)
            if lo < 0 or min(lengths) < 0 or self.slice_area + hi > source.size:
                for i, (off, length) in enumerate(self.index):
                    if off < 0 or length < 0 or self.slice_area + off + length > source.size:
                        raise CorruptFileError(f"slice {i} [{off}, +{length}) lies outside the file",
                                               file=source.name, structure="bsi indexes", offset=offset + 14 + 8 * i)
            self._span = (lo, hi)
            end = max(end, self.slice_area + hi)
        if end > source.size:
            raise CorruptFileError("bsi body is larger than the file", file=source.name,
                                   structure="bsi header", offset=offset)
        self.end = end
        self._codes: tuple[np.ndarray, np.ndarray] | None = None  # only a writer's (of_bitmaps)
        self._ebm: BitMap | None = None
        self._slices: list[BitMap | None] = [None] * count

    @classmethod
    def of_bitmaps(cls, ebm: BitMap, slices: list[BitMap], rows: np.ndarray | None = None,
                   codes: np.ndarray | None = None) -> BitSliceIndexBitmap:
        """The index over bitmaps already in memory (a writer's): no source to read them from.
        With ``rows`` (uint32, the ebm's) and their ``codes`` (the numbers the slices hold bit by
        bit), ``eq`` and ``gt`` compare the codes directly (the same rows, one array operation)."""
        self = cls.__new__(cls)
        self.source, self.body = None, 0
        self.slice_area = self.end = self.ebm_length = 0
        self.index = [(0, 0)] * len(slices)
        self._span = (0, 0)
        self._ebm, self._slices = ebm, list(slices)
        self._codes = None if rows is None or codes is None else (rows, codes)
        return self

    @property
    def slice_count(self) -> int:
        return len(self.index)

    def ebm(self) -> BitMap:
        if self._ebm is None:
            data = self.source.read(self.body, self.ebm_length, "bsi existence bitmap")
            self._ebm = roaring.deserialize(data, self.source.name, "bsi existence bitmap", self.body)
        return self._ebm

    def slice(self, i: int) -> BitMap:
        bm = self._slices[i]
        if bm is None:
            off, length = self.index[i]
            where = self.slice_area + off
            data = self.source.read(where, length, f"bsi slice {i}")
            bm = self._slices[i] = roaring.deserialize(data, self.source.name, f"bsi slice {i}", where)
        return bm

    def load_all(self) -> list[BitMap]:
        """Every slice, fetched with one read when none is loaded yet."""
        slices = self._slices
        if slices and all(s is None for s in slices):
            lo, hi = self._span
            data = self.source.read(self.slice_area + lo, hi - lo, "bsi slices")
            name, area = self.source.name, self.slice_area
            for i, (off, length) in enumerate(self.index):
                slices[i] = roaring.deserialize(data[off - lo:off - lo + length], name, f"bsi slice {i}", area + off)
        return [s if s is not None else self.slice(i) for i, s in enumerate(slices)]

    def eq(self, code: int) -> BitMap:
        ebm = self.ebm()
        if not ebm:
            return BitMap()
        if self._codes is not None:
            rows, codes = self._codes
            return BitMap(array.array("I", rows[codes == code].tobytes()))
        state = BitMap(ebm)
        for i, sl in enumerate(self.load_all()):
            if (code >> i) & 1:
                state &= sl
            else:
                state -= sl
        return state

    def gt(self, code: int) -> BitMap:
        """O'Neil's greater-than over the slices, updating one bitmap in place."""
        if code < 0:
            return BitMap(self.ebm())
        found = self.ebm()
        if not found:
            return BitMap()
        if self._codes is not None:
            rows, codes = self._codes
            return BitMap(array.array("I", rows[codes > code].tobytes()))
        start = _trailing_ones(code)
        slices = self.load_all()
        if start >= len(slices):
            return BitMap()
        state = BitMap(slices[start])
        for i in range(start + 1, len(slices)):
            if (code >> i) & 1:
                state &= slices[i]
            else:
                state |= slices[i]
        state &= found
        return state

    def gte(self, code: int) -> BitMap:
        return self.gt(code - 1)

    def top_k(self, k: int, found: BitMap | None, strict: bool, largest: bool) -> BitMap:
        """Rows with the k largest (or smallest) codes; algorithm 4.1 of O'Neil's BSI paper."""
        if k == 0 or (found is not None and not found):
            return BitMap()
        g = BitMap()
        e = self.ebm() & found if found is not None else BitMap(self.ebm())
        if len(e) <= k:
            return e
        for sl in reversed(self.load_all()):
            pick, rest = (e & sl, e - sl) if largest else (e - sl, e & sl)
            x = g | pick
            n = len(x)
            if n > k:
                e = pick
            elif n < k:
                g, e = x, rest
            else:
                e = pick
                break
        f = g | e
        extra = len(f) - k
        if strict and extra > 0:
            f -= e[0:extra]
        return f


def _trailing_ones(code: int) -> int:
    return ((code ^ (code + 1)).bit_length() - 1) if code >= 0 else 0




def serialize_bsi(ebm: BitMap, slices: list[BitMap]) -> bytes:
    ebm_bytes = roaring.serialize_optimized(ebm)
    slice_bytes = [roaring.serialize_optimized(s) for s in slices]
    indexes, offset = [], 0
    for b in slice_bytes:
        indexes.append(struct.pack(">ii", offset, len(b)))
        offset += len(b)
    header = struct.pack(">bbii", VERSION, len(slices), len(ebm_bytes), 8 * len(slices)) + b"".join(indexes)
    return struct.pack(">i", len(header)) + header + ebm_bytes + b"".join(slice_bytes)


