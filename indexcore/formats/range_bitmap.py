"""Paimon's ``range-bitmap`` file index: a sorted, chunked dictionary plus a bit-sliced index.

Layout (all integers big-endian, as Java's ``ByteBuffer`` writes them)::

    i32 header length | header: u8 version, i32 row count, i32 cardinality,
                                [min key, max key] (only when cardinality > 0), i32 dictionary length
    dictionary: i32 header length | u8 version, i32 chunk count, i32 offsets length,
                i32 chunks length | chunk offsets (i32 each) | chunk headers | chunk keys
    bit-sliced index: i32 header length | u8 version, i8 slice count, i32 ebm length,
                i32 indexes length, (i32 offset, i32 length) per slice | ebm | slice bitmaps

Every distinct non-null key gets a code (its rank in Paimon's key order); the bit-sliced
index stores each row's code, and its existence bitmap (ebm) holds the non-null rows. The
reader loads the dictionary headers, one chunk's keys and the slices only when a predicate
needs them, each with one ranged read; a chunk's keys are decoded only where its binary
search probes them, and the slice comparisons update one bitmap in place.
"""

from __future__ import annotations

import operator
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import pyarrow as pa
from pyroaring import BitMap

from indexcore.errors import CorruptFileError, UnsupportedError
from indexcore.formats import bulk, roaring
from indexcore.formats.base import (
    REMAIN,
    BitmapResult,
    ByteCursor,
    FileIndexReader,
    FileIndexResult,
    FileIndexWriter,
    parse_memory_size,
)
from indexcore.io import ByteSource
from indexcore.types import (
    INTEGER_ROOTS,
    DataType,
    decimal_from_unscaled,
    float_bits,
    timestamp_from_key,
    to_json_value,
    to_long,
)

VERSION = 1
_I8 = struct.Struct(">b")
_I32 = struct.Struct(">i")
_CHUNK_TAIL = struct.Struct(">iiiii")   # code, keys offset, size, two key lengths
CHUNK_SIZE = "chunk-size"
_NAN32 = 0x7FC00000
_NAN64 = 0x7FF8000000000000


# ---------------------------------------------------------------------------------------
# Keys: how each type is stored and ordered (Paimon's KeyFactory).


def _float_order(bits: int, width: int) -> int:
    """Java ``Float.compare`` / ``Double.compare`` order from raw signed bits.

    -0.0 sorts below 0.0 and every NaN is one key above +Infinity.
    """
    mag_mask = (1 << (width - 1)) - 1
    inf = 0x7F800000 if width == 32 else 0x7FF0000000000000
    if (bits & mag_mask) > inf:
        return _NAN32 if width == 32 else _NAN64
    return bits if bits >= 0 else bits ^ mag_mask


@dataclass(frozen=True)
class KeyCodec:
    """One type's key: ``raw`` is the stored integer (fixed width) or UTF-8 bytes (strings).

    ``order(raw)`` gives a Python value whose ordering is Paimon's comparator.
    """

    fmt: str | None
    to_raw: Callable[[Any], Any]
    order: Callable[[Any], Any]
    to_value: Callable[[Any], Any]
    default_chunk_size: str = "16kb"

    @cached_property
    def packer(self) -> struct.Struct | None:
        """The fixed-width key's big-endian struct (None for variable-length keys)."""
        return struct.Struct(">" + self.fmt) if self.fmt else None

    @property
    def width(self) -> int:
        return self.packer.size if self.fmt else 0

    def encode(self, raw: Any) -> bytes:
        if self.fmt is None:
            return _I32.pack(len(raw)) + raw
        return self.packer.pack(raw)

    def read(self, cur: ByteCursor) -> Any:
        if self.fmt is None:
            n = cur.length("key length")
            return cur.take(n)
        return self.packer.unpack(cur.take(self.packer.size))[0]

    def order_of_value(self, value: Any) -> Any:
        return self.order(self.to_raw(value))


def _identity(x: Any) -> Any:
    return x


def key_codec(dtype: DataType) -> KeyCodec:
    """Paimon's ``KeyFactory.create``: the key layout and comparator of a column type."""
    r = dtype.root
    if r in INTEGER_ROOTS:
        fmt = {"TINYINT": "b", "SMALLINT": "h", "INT": "i", "BIGINT": "q"}[r]
        chunk = "0b" if r in ("TINYINT", "SMALLINT") else "16kb"
        return KeyCodec(fmt, int, _identity, _identity, chunk)
    if r in ("DATE", "TIME"):
        return KeyCodec("i", int, _identity, _identity)
    if r in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        if (dtype.precision or 0) > 6:
            raise UnsupportedError("The range-bitmap index only supports TIMESTAMP with a precision in [0, 6].")
        return KeyCodec("q", lambda v: to_long(dtype, v), _identity, lambda k: timestamp_from_key(dtype, k))
    if r == "DECIMAL":
        if (dtype.precision or 0) > 18:
            raise UnsupportedError("The range-bitmap index only supports DECIMAL with a precision in [0, 18].")
        return KeyCodec("q", lambda v: to_long(dtype, v), _identity, lambda k: decimal_from_unscaled(dtype, k))
    if r == "BOOLEAN":
        return KeyCodec("b", lambda v: 1 if v else 0, lambda k: 1 if k == 1 else 0, lambda k: k == 1, "0b")
    if r in ("FLOAT", "DOUBLE"):
        width, fmt, sfmt = (32, "i", ">f") if r == "FLOAT" else (64, "q", ">d")
        sign = 1 << (width - 1)

        def to_raw(v: float) -> int:
            bits = float_bits(dtype, float(v))
            return bits - (1 << width) if bits & sign else bits

        def to_value(raw: int) -> float:
            return struct.unpack(sfmt, struct.pack(">" + fmt, raw))[0]

        return KeyCodec(fmt, to_raw, lambda k: _float_order(k, width), to_value)
    if r in ("CHAR", "VARCHAR"):
        return KeyCodec(None, lambda v: v.encode("utf-8") if isinstance(v, str) else bytes(v), _identity,
                        lambda k: k.decode("utf-8", errors="replace"))
    raise UnsupportedError(f"data type {dtype.sql()} is not supported by the range-bitmap index")


# ---------------------------------------------------------------------------------------
# The chunked dictionary.


@dataclass
class _Chunk:
    head: Any              # order of the chunk's first key (stored in the chunk header)
    head_raw: Any
    code: int              # code of the head key; the others follow as code+1, code+2, ...
    offset: int            # keys offset inside the keys area
    size: int              # keys after the head
    lengths: tuple[int, int]  # fixed: (keys length, fixed length); variable: (offsets, keys)
    keys: bytes | None = None  # the chunk's key bytes, decoded one key at a time when probed
    where: int = 0         # absolute offset of ``keys``


_chunk_head = operator.attrgetter("head")
_chunk_code = operator.attrgetter("code")


class ChunkedDictionary:
    """Paimon's ``ChunkedDictionary``: chunk heads searched first, then one chunk's keys."""

    def __init__(self, source: ByteSource, offset: int, codec: KeyCodec):
        self.source, self.codec = source, codec
        cur, body = _read_header(source, offset, "dictionary header", 13)
        version = cur.i8()
        if version > VERSION:
            raise UnsupportedError(f"range-bitmap dictionary version {version} is newer than {VERSION}",
                                   file=source.name, structure="dictionary header", offset=offset + 4)
        self.size = cur.length("chunk count")
        self.offsets_length = cur.length("offsets length")
        self.chunks_length = cur.length("chunks length")
        if self.offsets_length != 4 * self.size:
            cur.fail(f"offsets length {self.offsets_length} does not match {self.size} chunks", -8)
        self.body = body
        self.keys_base = self.body + self.offsets_length + self.chunks_length
        if self.keys_base > source.size:
            raise CorruptFileError("dictionary body is larger than the file", file=source.name,
                                   structure="dictionary header", offset=offset)
        self._chunks: list[_Chunk | None] = [None] * self.size
        self._area: bytes | None = None   # chunk offsets and chunk headers, read once

    def _chunk(self, index: int) -> _Chunk:
        chunk = self._chunks[index]
        if chunk is not None:
            return chunk
        src = self.source
        if self._area is None:
            self._area = src.read(self.body, self.offsets_length + self.chunks_length, "dictionary chunk headers")
        area = self._area
        start = _I32.unpack_from(area, 4 * index)[0]
        end = _I32.unpack_from(area, 4 * index + 4)[0] if index + 1 < self.size else self.chunks_length
        if not 0 <= start <= end <= self.chunks_length:
            raise CorruptFileError(f"chunk {index} spans [{start}, {end}) outside {self.chunks_length} bytes",
                                   file=src.name, structure="dictionary offsets", offset=self.body + 4 * index)
        base = self.body + self.offsets_length
        cur = ByteCursor(area[self.offsets_length + start:self.offsets_length + end], base + start, src.name,
                      f"dictionary chunk {index}")
        version = cur.i8()
        if version > VERSION:
            raise UnsupportedError(f"chunk version {version} is newer than {VERSION}", file=src.name,
                                   structure=f"dictionary chunk {index}", offset=base + start)
        head_raw = self.codec.read(cur)
        code = koff = size = a = b = -1
        if cur.fits(_CHUNK_TAIL.size):
            code, koff, size, a, b = _CHUNK_TAIL.unpack_from(cur.data, cur.pos)
        if koff >= 0 and size >= 0 and a >= 0 and b >= 0:
            cur.pos += _CHUNK_TAIL.size
        else:
            # short or negative: read field by field so the error names the exact offset
            code, koff, size = cur.i32(), cur.length("keys offset"), cur.length("chunk size")
            a, b = cur.length("keys length"), cur.length("keys length")
        if self.codec.fmt is not None and (b != self.codec.width or a != size * b):
            cur.fail(f"fixed-length chunk of {size} keys of {b} bytes declares {a} key bytes", -8)
        if self.codec.fmt is None and a != 4 * size:
            cur.fail(f"variable-length chunk of {size} keys declares {a} offset bytes", -8)
        chunk = _Chunk(self.codec.order(head_raw), head_raw, code, koff, size, (a, b))
        self._chunks[index] = chunk
        return chunk

    def _load_keys(self, index: int, chunk: _Chunk) -> None:
        """One read of the chunk's keys; keys are decoded only when a search probes them."""
        if chunk.keys is not None:
            return
        codec = self.codec
        total = chunk.lengths[0] + (chunk.lengths[1] if codec.fmt is None else 0)
        chunk.where = self.keys_base + chunk.offset
        chunk.keys = self.source.read(chunk.where, total, f"dictionary chunk {index} keys")

    def _raw_at(self, index: int, chunk: _Chunk, i: int) -> Any:
        """The stored key ``i`` of a chunk whose keys are loaded (0 is the key after the head)."""
        codec, data = self.codec, chunk.keys
        if codec.fmt is not None:
            packer = codec.packer
            return packer.unpack_from(data, i * packer.size)[0]
        off = _I32.unpack_from(data, 4 * i)[0]
        if not 0 <= off < chunk.lengths[1]:
            raise CorruptFileError(f"key offset {off} outside {chunk.lengths[1]} key bytes", file=self.source.name,
                                   structure=f"dictionary chunk {index} keys", offset=chunk.where + 4 * i)
        start = chunk.lengths[0] + off
        n = _I32.unpack_from(data, start)[0] if start + 4 <= len(data) else -1
        if n < 0 or start + 4 + n > len(data):
            raise CorruptFileError(f"key of {n} bytes at {start} does not fit in {len(data)} key bytes",
                                   file=self.source.name, structure=f"dictionary chunk {index} keys",
                                   offset=chunk.where + start)
        return data[start + 4:start + 4 + n]

    def _search_chunks(self, target: Any, value: Callable[[Any], Any]) -> tuple[int, int]:
        """Binary search of the chunks ordered by ``value(chunk)``: the index of the chunk equal
        to ``target`` (-1 when none is) and the insertion point."""
        low, high = 0, self.size - 1
        while low <= high:
            mid = (low + high) >> 1
            v = value(self._chunk(mid))
            if v > target:
                high = mid - 1
            elif v < target:
                low = mid + 1
            else:
                return mid, low
        return -1, low

    def find(self, key: Any) -> int:
        """The code of ``key`` (an order value), or ``-(insertion code) - 1`` when absent."""
        found, low = self._search_chunks(key, _chunk_head)
        if found >= 0:
            return self._chunk(found).code
        if low == 0:
            return -1
        index = low - 1
        chunk = self._chunk(index)
        if chunk.size == 0:
            return -(chunk.code + 2)
        self._load_keys(index, chunk)
        order = None if self.codec.order is _identity else self.codec.order
        raw_at = self._raw_at
        lo, hi = 0, chunk.size - 1
        while lo <= hi:
            mid = (lo + hi) >> 1
            k = raw_at(index, chunk, mid)
            if order is not None:
                k = order(k)
            if k > key:
                hi = mid - 1
            elif k < key:
                lo = mid + 1
            else:
                return chunk.code + 1 + mid
        return -(chunk.code + 1 + lo + 1)

    def raw_key(self, code: int) -> Any:
        """The stored key of ``code`` (reads the one chunk that holds it)."""
        found, low = self._search_chunks(code, _chunk_code)
        if found >= 0:
            return self._chunk(found).head_raw
        chunk = self._chunk(low - 1) if low > 0 else None
        if chunk is None or not 0 <= code - chunk.code - 1 < chunk.size:
            raise CorruptFileError(f"code {code} is not in the dictionary", file=self.source.name,
                                   structure="dictionary", offset=self.body)
        self._load_keys(low - 1, chunk)
        return self._raw_at(low - 1, chunk, code - chunk.code - 1)

    def chunk_key_counts(self) -> list[int]:
        return [self._chunk(i).size + 1 for i in range(self.size)]


# ---------------------------------------------------------------------------------------
# The bit-sliced index over codes.


class BitSliceIndexBitmap:
    """Paimon's range-bitmap ``BitSliceIndexBitmap``: codes of rows, one bitmap per bit."""

    def __init__(self, source: ByteSource, offset: int):
        self.source = source
        cur, body = _read_header(source, offset, "bsi header", 10)
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
        self._ebm: BitMap | None = None
        self._slices: list[BitMap | None] = [None] * count

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


def _read_i32(source: ByteSource, offset: int, structure: str) -> int:
    return struct.unpack(">i", source.read(offset, 4, structure))[0]


def _read_header(source: ByteSource, offset: int, structure: str, min_length: int) -> tuple[ByteCursor, int]:
    """A header stored as its int32 length then its bytes: a cursor over it and where it ends."""
    source.read_ahead(offset)
    head_len = _read_i32(source, offset, f"{structure} length")
    source.read_ahead(offset, 4 + max(head_len, 0))
    if head_len < min_length:
        raise CorruptFileError(f"{structure} length {head_len} is too small", file=source.name,
                               structure=structure, offset=offset)
    cur = ByteCursor(source.read(offset + 4, head_len, structure), offset + 4, source.name, structure)
    return cur, offset + 4 + head_len


# ---------------------------------------------------------------------------------------
# Reader and writer.


class RangeBitmapReader(FileIndexReader):
    """Reads one range-bitmap blob (``source`` holds exactly the blob, starting at byte 0)."""

    index_type = "range-bitmap"

    def __init__(self, dtype: DataType, source: ByteSource, options: dict[str, str] | None = None):
        self.dtype, self.source = dtype, source
        self.codec = key_codec(dtype)
        cur, self.dictionary_offset = _read_header(source, 0, "range-bitmap header", 13)
        self.version = cur.i8()
        if self.version > VERSION:
            raise UnsupportedError(f"range-bitmap version {self.version} is newer than {VERSION}",
                                   file=source.name, structure="range-bitmap header", offset=4)
        self.row_count = cur.length("row count")
        self.cardinality = cur.i32()
        self.min_raw = self.max_raw = None
        if self.cardinality > 0:
            self.min_raw, self.max_raw = self.codec.read(cur), self.codec.read(cur)
            self._min, self._max = self.codec.order(self.min_raw), self.codec.order(self.max_raw)
            if self._min > self._max:
                cur.fail("min key is greater than max key")
        self.dictionary_length = cur.length("dictionary length")
        self.bsi_offset = self.dictionary_offset + self.dictionary_length
        if self.bsi_offset > source.size:
            raise CorruptFileError(f"dictionary of {self.dictionary_length} bytes does not fit",
                                   file=source.name, structure="range-bitmap header", offset=4 + cur.pos - 4)
        self._dictionary: ChunkedDictionary | None = None
        self._bsi: BitSliceIndexBitmap | None = None

    # -- lazily opened parts

    @property
    def dictionary(self) -> ChunkedDictionary:
        if self._dictionary is None:
            self._dictionary = ChunkedDictionary(self.source, self.dictionary_offset, self.codec)
        return self._dictionary

    @property
    def bsi(self) -> BitSliceIndexBitmap:
        if self._bsi is None:
            self._bsi = BitSliceIndexBitmap(self.source, self.bsi_offset)
        return self._bsi

    # -- Paimon's RangeBitmap operations, on order keys

    def _not_null(self) -> BitMap:
        return BitMap() if self.cardinality <= 0 else BitMap(self.bsi.ebm())

    def _null(self, found: BitMap | None = None) -> BitMap:
        if self.cardinality <= 0:
            return BitMap(range(self.row_count))
        if found is not None and not found:
            return found
        nulls = self.bsi.ebm().flip(0, self.row_count)
        if found is not None:
            nulls &= found
        return nulls

    def _not(self, bitmap: BitMap) -> BitMap:
        return BitMap() if self.cardinality <= 0 else self.bsi.ebm() - bitmap

    def _eq(self, key: Any) -> BitMap:
        if self.cardinality <= 0:
            return BitMap()
        if key == self._min and key == self._max:
            return self._not_null()
        if key < self._min or key > self._max:
            return BitMap()
        code = self.dictionary.find(key)
        return BitMap() if code < 0 else self.bsi.eq(code)

    def _gte(self, key: Any) -> BitMap:
        if self.cardinality <= 0:
            return BitMap()
        if key <= self._min:
            return self._not_null()
        if key > self._max:
            return BitMap()
        code = self.dictionary.find(key)
        return self.bsi.gte(-code - 1 if code < 0 else code)

    def _gt(self, key: Any) -> BitMap:
        if self.cardinality <= 0:
            return BitMap()
        if key < self._min:
            return self._not_null()
        if key >= self._max:
            return BitMap()
        code = self.dictionary.find(key)
        return self.bsi.gte(-code - 1) if code < 0 else self.bsi.gt(code)

    def _lte(self, key: Any) -> BitMap:
        if self.cardinality <= 0:
            return BitMap()
        if key >= self._max:
            return self._not_null()
        if key < self._min:
            return BitMap()
        return self._not(self._gt(key))

    def _lt(self, key: Any) -> BitMap:
        if self.cardinality <= 0:
            return BitMap()
        if key > self._max:
            return self._not_null()
        if key <= self._min:
            return BitMap()
        return self._not(self._gte(key))

    def _key(self, literal: Any) -> Any:
        return self.codec.order_of_value(literal)

    def _in(self, literals: list) -> BitMap:
        out = BitMap()
        if self.cardinality > 0:
            for lit in literals:
                if lit is not None:
                    out |= self._eq(self._key(lit))
        return out

    # -- FileIndexReader visits

    def visit_is_null(self) -> FileIndexResult:
        return BitmapResult(self._null())

    def visit_is_not_null(self) -> FileIndexResult:
        return BitmapResult(self._not_null())

    def visit_equal(self, literal: Any) -> FileIndexResult:
        return REMAIN if literal is None else BitmapResult(self._eq(self._key(literal)))

    def visit_not_equal(self, literal: Any) -> FileIndexResult:
        if literal is None:
            return REMAIN
        if self.cardinality <= 0:
            return BitmapResult(BitMap())
        return BitmapResult(self._not(self._eq(self._key(literal))))

    def visit_in(self, literals: list) -> FileIndexResult:
        return BitmapResult(self._in(literals))

    def visit_not_in(self, literals: list) -> FileIndexResult:
        if self.cardinality <= 0:
            return BitmapResult(BitMap())
        return BitmapResult(self._not(self._in(literals)))

    def visit_less_than(self, literal: Any) -> FileIndexResult:
        return REMAIN if literal is None else BitmapResult(self._lt(self._key(literal)))

    def visit_less_or_equal(self, literal: Any) -> FileIndexResult:
        return REMAIN if literal is None else BitmapResult(self._lte(self._key(literal)))

    def visit_greater_than(self, literal: Any) -> FileIndexResult:
        return REMAIN if literal is None else BitmapResult(self._gt(self._key(literal)))

    def visit_greater_or_equal(self, literal: Any) -> FileIndexResult:
        return REMAIN if literal is None else BitmapResult(self._gte(self._key(literal)))

    def visit_between(self, low: Any, high: Any) -> FileIndexResult:
        if low is None or high is None:
            return REMAIN
        found = self._gte(self._key(low))
        found &= self._lte(self._key(high))
        return BitmapResult(found)

    def visit_top_n(self, k: int, ascending: bool, nulls_first: bool, strict: bool = True,
                    incoming: FileIndexResult = REMAIN) -> FileIndexResult:
        """Paimon's ``FileIndexPredicate.evaluateTopN`` + ``RangeBitmap.topK/bottomK``.

        ``strict=False`` (more than one sort key) keeps every row tied with the k-th.
        """
        if not incoming.remain():
            return incoming
        found = incoming.bitmap if isinstance(incoming, BitmapResult) else None
        if found is not None and len(found) <= k:
            return incoming
        if self.cardinality <= 0:
            return BitmapResult(BitMap(range(self.row_count)))
        if not nulls_first:
            bitmap = self.bsi.top_k(k, found, strict, largest=not ascending)
            n = len(bitmap)
            if n >= k:
                return BitmapResult(bitmap)
            nulls = self._null(found)
            return BitmapResult(bitmap | (nulls[0:k - n] if strict else nulls))
        bitmap = self._null(found)
        n = len(bitmap)
        if n >= k:
            return BitmapResult(bitmap[0:k] if strict else bitmap)
        return BitmapResult(bitmap | self.bsi.top_k(k - n, found, strict, largest=not ascending))

    # -- explorer figures

    def _display(self, raw: Any) -> Any:
        return to_json_value(self.dtype, self.codec.to_value(raw)) if raw is not None else None

    def summary(self, top_values: bool = True) -> dict:
        """Header facts, nulls, chunks and slices; with ``top_values`` also the most frequent keys
        (every slice decoded: the costly part, which a per-file census leaves out)."""
        out: dict[str, Any] = {
            "index_type": self.index_type, "version": self.version, "row_count": self.row_count,
            "dictionary_size": max(self.cardinality, 0), "min": self._display(self.min_raw),
            "max": self._display(self.max_raw), "size_bytes": self.source.size,
            "dictionary_bytes": self.dictionary_length,
        }
        non_null = self._not_null()
        out["null_count"] = self.row_count - len(non_null)
        dictionary = self.dictionary
        out["chunk_count"] = dictionary.size
        out["chunk_key_counts"] = dictionary.chunk_key_counts()
        out["slice_count"] = self.bsi.slice_count
        out["bsi_bytes"] = self.bsi.end - self.bsi_offset
        if top_values:
            out["top_values"] = self._top_values(non_null) if self.cardinality > 0 else []
        return out

    def _top_values(self, non_null: BitMap, limit: int = 20) -> list[dict]:
        """The most frequent keys, from every row's code rebuilt out of the slices."""
        import numpy as np

        rows = np.frombuffer(non_null.to_array(), dtype=np.uint32)
        rows = rows[rows < self.row_count]
        # Sized by rows that really exist, never by a length declared in the file.
        codes = np.zeros(int(rows.max()) + 1 if len(rows) else 0, dtype=np.int64)
        for i, sl in enumerate(self.bsi.load_all()):
            idx = np.frombuffer(sl.to_array(), dtype=np.uint32)
            codes[idx[idx < len(codes)]] |= 1 << i
        counts = np.bincount(codes[rows], minlength=0)
        top = np.argsort(-counts, kind="stable")[:limit]
        return [{"value": self._display(self.dictionary.raw_key(int(c))), "cardinality": int(counts[c])}
                for c in top if counts[c] > 0 and c < self.cardinality]


class RangeBitmapWriter(FileIndexWriter):
    """Builds range-bitmap bytes the way Paimon's ``RangeBitmap.Appender`` lays them out.

    Fixed-width keys are kept as int64 raw-key segments with validity masks (``write``
    buffers single rows) and coded with numpy; string keys go to a dictionary of row lists.
    """

    index_type = "range-bitmap"

    def __init__(self, dtype: DataType, options: dict[str, str] | None = None):
        super().__init__(dtype, options)
        self.codec = key_codec(dtype)
        self.chunk_size = parse_memory_size(self.options.get(CHUNK_SIZE, self.codec.default_chunk_size))
        if self.chunk_size >= 1 << 31:  # Paimon casts it to a Java int: it would wrap
            raise UnsupportedError(f"range-bitmap option chunk-size={self.options[CHUNK_SIZE]!r} must be "
                                   "below 2 GiB")
        self._keys: dict[Any, tuple[Any, list[int]]] = {}
        self._pending: list[Any] = []
        self._raws: list[np.ndarray] = []
        self._valid: list[np.ndarray] = []
        self._rid = 0

    def write(self, value: Any) -> None:
        if self.codec.fmt is not None:
            self._pending.append(None if value is None else self.codec.to_raw(value))
        elif value is not None:
            raw = self.codec.to_raw(value)
            entry = self._keys.get(raw)
            if entry is None:
                self._keys[raw] = (raw, [self._rid])
            else:
                entry[1].append(self._rid)
        self._rid += 1

    def write_batch(self, values: Sequence[Any]) -> None:
        if self.codec.fmt is None:
            super().write_batch(values)
            return
        to_raw = self.codec.to_raw
        self._pending.extend(None if v is None else to_raw(v) for v in values)
        self._rid += len(values)

    def accepts_arrow(self, arrow_type: Any) -> bool:
        r = self.dtype.root
        if self.codec.fmt is None:
            return bulk.is_string_type(arrow_type)
        if r == "BOOLEAN":
            return pa.types.is_boolean(arrow_type)
        return bulk.long_key_type(self.dtype, arrow_type) or bulk.is_float_type(self.dtype, arrow_type)

    def write_arrow(self, array: Any) -> None:
        if not self.accepts_arrow(array.type):
            super().write_arrow(array)
        array = bulk.as_array(array)
        if self.codec.fmt is None:
            self.write_batch(bulk.utf8_values(array))
            return
        self._flush()
        r = self.dtype.root
        valid = bulk.valid_mask(array)
        filled = array.fill_null(False if r == "BOOLEAN" else 0) if array.null_count else array
        if r == "BOOLEAN":
            raws = filled.to_numpy(zero_copy_only=False).astype(np.int64)
        elif r == "FLOAT":
            raws = filled.to_numpy(zero_copy_only=False).astype(np.float32).view(np.int32).astype(np.int64)
        elif r == "DOUBLE":
            raws = filled.to_numpy(zero_copy_only=False).astype(np.float64).view(np.int64)
        else:
            raws = bulk.long_keys(self.dtype, array)
        self._raws.append(raws)
        self._valid.append(valid)
        self._rid += len(array)

    def _flush(self) -> None:
        if self._pending:
            pending, self._pending = self._pending, []
            try:
                raws = np.array([0 if v is None else v for v in pending], dtype=object).astype(np.int64)
            except OverflowError as exc:
                raise UnsupportedError("range-bitmap key out of range for its type") from exc
            self._raws.append(raws)
            self._valid.append(np.array([v is not None for v in pending], dtype=bool))

    @property
    def empty(self) -> bool:
        return self._rid == 0

    def _fixed_entries(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(distinct raw keys in Paimon's order, non-null rows, each such row's code)."""
        self._flush()
        raws = np.concatenate(self._raws) if self._raws else np.zeros(0, dtype=np.int64)
        valid = np.concatenate(self._valid) if self._valid else np.zeros(0, dtype=bool)
        rows = np.flatnonzero(valid)
        raws = raws[rows]
        width = self.codec.width * 8
        bulk.check_long_range(raws, -(1 << (width - 1)), (1 << (width - 1)) - 1,
                              f"range-bitmap {self.dtype.sql()}")
        order = raws
        if self.dtype.root in ("FLOAT", "DOUBLE"):
            mag = np.int64((1 << (width - 1)) - 1)
            inf, nan = (0x7F800000, _NAN32) if width == 32 else (0x7FF0000000000000, _NAN64)
            order = np.where((raws & mag) > inf, np.int64(nan), np.where(raws >= 0, raws, raws ^ mag))
        _, first, codes = np.unique(order, return_index=True, return_inverse=True)
        return raws[first], rows, codes.reshape(-1).astype(np.int64)

    def _string_entries(self) -> tuple[list, np.ndarray, np.ndarray]:
        entries = [self._keys[o] for o in sorted(self._keys)]
        rows = [r for _, rs in entries for r in rs]
        codes = [c for c, (_, rs) in enumerate(entries) for _ in rs]
        order = np.argsort(np.array(rows, dtype=np.int64), kind="stable")
        return ([raw for raw, _ in entries], np.array(rows, dtype=np.int64)[order],
                np.array(codes, dtype=np.int64)[order])

    def serialized_bytes(self) -> bytes:
        codec = self.codec
        if codec.fmt is None:
            distinct, rows, codes = self._string_entries()
            dictionary = _serialize_dictionary(codec, distinct, self.chunk_size)
        else:
            distinct, rows, codes = self._fixed_entries()
            dictionary = _serialize_fixed_dictionary(codec, distinct, self.chunk_size)
        cardinality = len(distinct)
        n_slices = max((cardinality - 1).bit_length(), 1) if cardinality else 64
        slices = [bulk.bitmap_of(rows[(codes >> i) & 1 == 1]) for i in range(n_slices)]
        bsi = _serialize_bsi(bulk.bitmap_of(rows), slices)
        head = [struct.pack(">bii", VERSION, self._rid, cardinality)]
        if cardinality:
            head += [codec.encode(distinct[0]), codec.encode(distinct[-1])]
        head.append(struct.pack(">i", len(dictionary)))
        header = b"".join(head)
        return struct.pack(">i", len(header)) + header + dictionary + bsi


def _serialize_bsi(ebm: BitMap, slices: list[BitMap]) -> bytes:
    ebm_bytes = roaring.serialize_optimized(ebm)
    slice_bytes = [roaring.serialize_optimized(s) for s in slices]
    indexes, offset = [], 0
    for b in slice_bytes:
        indexes.append(struct.pack(">ii", offset, len(b)))
        offset += len(b)
    header = struct.pack(">bbii", VERSION, len(slices), len(ebm_bytes), 8 * len(slices)) + b"".join(indexes)
    return struct.pack(">i", len(header)) + header + ebm_bytes + b"".join(slice_bytes)


def _serialize_dictionary(codec: KeyCodec, raws: list, limit: int) -> bytes:
    """Paimon's ``ChunkedDictionary.Appender``: a chunk takes keys until ``limit`` bytes are full."""
    offsets, chunks, keys = [], [], []
    chunks_offset = keys_offset = 0
    fixed = codec.fmt is not None
    i = 0
    while i < len(raws):
        head = raws[i]
        members: list[bytes] = []
        used = 0
        i += 1
        while i < len(raws):
            enc = codec.encode(raws[i])
            if fixed and len(enc) > limit - used:
                break
            if not fixed and (len(enc) > limit - used or limit - 4 * len(members) < 4):
                break
            members.append(enc)
            used += len(enc)
            i += 1
        code = i - len(members) - 1
        if fixed:
            key_bytes = b"".join(members)
            tail = struct.pack(">iiiii", code, keys_offset, len(members), len(key_bytes), codec.width)
        else:
            pos, rel = 0, []
            for enc in members:
                rel.append(pos)
                pos += len(enc)
            key_bytes = struct.pack(f">{len(rel)}i", *rel) + b"".join(members)
            tail = struct.pack(">iiiii", code, keys_offset, len(members), 4 * len(members), pos)
        chunk = struct.pack(">b", VERSION) + codec.encode(head) + tail
        offsets.append(struct.pack(">i", chunks_offset))
        chunks_offset += len(chunk)
        keys_offset += len(key_bytes)
        chunks.append(chunk)
        keys.append(key_bytes)
    off, ch = b"".join(offsets), b"".join(chunks)
    header = struct.pack(">biii", VERSION, len(offsets), len(off), len(ch))
    return struct.pack(">i", len(header)) + header + off + ch + b"".join(keys)


def _serialize_fixed_dictionary(codec: KeyCodec, raws: np.ndarray, limit: int) -> bytes:
    """:func:`_serialize_dictionary` for fixed-width keys: every chunk holds ``limit // width``
    keys after its head, so the chunks are cut by arithmetic and the keys packed by numpy."""
    width = codec.width
    per = limit // width + 1
    packed = raws.astype(">i" + str(width))
    offsets, chunks, keys = [], [], []
    chunk_size = 1 + width + _CHUNK_TAIL.size
    keys_offset = 0
    for index, start in enumerate(range(0, len(raws), per)):
        members = min(per, len(raws) - start) - 1
        offsets.append(_I32.pack(index * chunk_size))
        chunks.append(_I8.pack(VERSION) + packed[start:start + 1].tobytes()
                      + _CHUNK_TAIL.pack(start, keys_offset, members, members * width, width))
        keys.append(packed[start + 1:start + 1 + members].tobytes())
        keys_offset += members * width
    off, ch = b"".join(offsets), b"".join(chunks)
    header = struct.pack(">biii", VERSION, len(offsets), len(off), len(ch))
    return struct.pack(">i", len(header)) + header + off + ch + b"".join(keys)
