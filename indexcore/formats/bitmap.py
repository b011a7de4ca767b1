"""Paimon's bitmap file index (``bitmap``), format V1 and V2: reader, writer, and layout figures.

Both versions start with a head: version byte, row count, the number of distinct non-null
values, a has-null flag and the null bitmap's offset. V1 then lists every ``value -> offset``
pair; V2 (the default) sorts the pairs into index blocks of at most ``index-block-size`` bytes
and keeps only each block's first value in the head, so a point lookup reads the head, one index
block and one bitmap. An offset below zero, ``-1-row``, stands for a value found in one row only;
such a value has no serialized bitmap. Bitmaps are portable RoaringBitmaps (run-optimized).

Keys are encoded by type: integers by width, FLOAT/DOUBLE by their bits (NaN canonical, so
``-0.0`` and ``0.0`` differ), CHAR/VARCHAR as a length-prefixed UTF-8 string (CHAR not padded),
BOOLEAN as one byte, DATE/TIME as INT, timestamps as BIGINT epoch millis (p <= 3) or micros.
"""

from __future__ import annotations

import bisect
import heapq
import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import BitMap

from indexcore.errors import CorruptFileError, UnsupportedError
from indexcore.formats import bulk, roaring
from indexcore.formats.base import (
    BitmapResult,
    FileIndexReader,
    FileIndexResult,
    FileIndexWriter,
    parse_memory_size,
)
from indexcore.formats.murmur import hash_bytes
from indexcore.io import ByteSource
from indexcore.types import (
    DataType,
    float32,
    timestamp_from_key,
    to_json_value,
    to_long,
)

VERSION_1 = 1
VERSION_2 = 2
DEFAULT_INDEX_BLOCK_SIZE = "16kb"
_INT = struct.Struct(">i")
_TWO_INTS = struct.Struct(">ii")
_UINT = struct.Struct(">I")
_MASK32 = 0xFFFFFFFF
_MASK64 = 0xFFFFFFFFFFFFFFFF


# ---------------------------------------------------------------------------------------
# Keys: how each column type is keyed, written, ordered and hashed (as Java does it).


class _KeyCodec:
    """One column type's bitmap key: internal value <-> key, bytes, order and Java hashCode."""

    def __init__(self, dtype: DataType):
        r = dtype.root
        self.dtype = dtype
        if r in ("CHAR", "VARCHAR"):
            kind = "string"
        elif r == "TINYINT":
            kind = "byte"
        elif r == "SMALLINT":
            kind = "short"
        elif r in ("INT", "DATE", "TIME"):
            kind = "int"
        elif r in ("BIGINT", "TIMESTAMP", "TIMESTAMP_LTZ"):
            kind = "long"
        elif r in ("FLOAT", "DOUBLE", "BOOLEAN"):
            kind = r.lower()
        elif r == "DECIMAL":
            raise UnsupportedError("the bitmap index does not support decimal (as Paimon refuses it)")
        else:
            raise UnsupportedError(f"the bitmap index does not support type {dtype.sql()}")
        self.kind = kind
        self.fixed = {"byte": ">b", "short": ">h", "int": ">i", "long": ">q", "float": ">I",
                      "double": ">Q", "boolean": ">B"}.get(kind)
        self.struct = struct.Struct(self.fixed) if self.fixed else None
        # the smallest number of bytes a key takes (a string's 4-byte length alone)
        self.min_size = self.struct.size if self.struct else 4

    # -- internal value <-> key

    def key(self, value: Any) -> Any:
        """The key Paimon's ``valueMapper`` gives a (non-null) internal value."""
        k = self.kind
        if k == "string":
            return value if isinstance(value, bytes) else str(value).encode("utf-8", "surrogateescape")
        if k == "float":
            f = float32(float(value))
            return 0x7FC00000 if f != f else struct.unpack(">I", struct.pack(">f", f))[0]
        if k == "double":
            f = float(value)
            return 0x7FF8000000000000 if f != f else struct.unpack(">Q", struct.pack(">d", f))[0]
        if k == "boolean":
            return bool(value)
        if self.dtype.is_timestamp:
            return to_long(self.dtype, value)
        return int(value)

    def value(self, key: Any) -> Any:
        """The internal value a key stands for (for listing the dictionary)."""
        k = self.kind
        if k == "string":
            return key.decode("utf-8", "surrogateescape")
        if k == "float":
            return struct.unpack(">f", struct.pack(">I", key))[0]
        if k == "double":
            return struct.unpack(">d", struct.pack(">Q", key))[0]
        if self.dtype.is_timestamp:
            return timestamp_from_key(self.dtype, key)
        return key

    # -- bytes

    def size(self, key: Any) -> int:
        return 4 + len(key) if self.kind == "string" else self.struct.size

    def encode(self, key: Any) -> bytes:
        if self.kind == "string":
            return _INT.pack(len(key)) + key
        if self.kind == "boolean":
            return b"\x01" if key else b"\x00"
        return self.struct.pack(key)

    def scan(self, buf: bytes, pos: int, count: int, ints: int, out: list) -> int:
        """Append up to ``count`` complete ``(key, int * ints)`` tuples found at ``buf[pos:]``.

        Stops before an entry that is not wholly in ``buf``; returns the position after the last
        entry taken. A negative string length raises ValueError (the caller reports where).
        """
        end = len(buf)
        if self.kind != "string":
            fmt = self.fixed + "i" * ints
            item = struct.calcsize(fmt)
            m = min(count, (end - pos) // item)
            if self.kind == "boolean":
                out.extend((k != 0, *rest) for k, *rest in struct.iter_unpack(fmt, buf[pos:pos + m * item]))
            else:
                out.extend(struct.iter_unpack(fmt, buf[pos:pos + m * item]))
            return pos + m * item
        tail = struct.Struct(">" + "i" * ints)
        tsize = tail.size
        length_at, tail_at, append = _INT.unpack_from, tail.unpack_from, out.append
        for _ in range(count):
            if pos + 4 > end:
                break
            n = length_at(buf, pos)[0]
            if n < 0:
                raise ValueError(f"negative string length {n}")
            e = pos + 4 + n
            if e + tsize > end:
                break
            append((buf[pos + 4:e], *tail_at(buf, e)))
            pos = e + tsize
        return pos

    # -- order (Paimon's comparator) and Java hashCode (for the writer's HashMap order)

    def sort_key(self, key: Any) -> Any:
        if self.kind == "float":
            return -(key & 0x7FFFFFFF) - 1 if key & 0x80000000 else key
        if self.kind == "double":
            return -(key & 0x7FFFFFFFFFFFFFFF) - 1 if key >> 63 else key
        return key

    def java_hash(self, key: Any) -> int:
        k = self.kind
        if k == "string":
            return hash_bytes(key)
        if k in ("byte", "short", "int", "float"):
            return key & _MASK32
        if k in ("long", "double"):
            u = key & _MASK64
            return (u ^ (u >> 32)) & _MASK32
        return 1231 if key else 1237


def java_hashmap_order(hashes: list[int], called_after_last: bool = True) -> list[int]:
    """Positions of keys (given by hashCode, in first-seen order) in Java ``HashMap`` iteration order.

    Paimon's writer fills its map with ``computeIfAbsent``, which puts a new key at the head of
    its bucket, resizes at the start of a call once the size has passed 3/4 of the table (so only
    if another call follows), and doubles the table when a bucket already holds 8+ keys while it
    is below 64 buckets. Resizes keep each bucket's order, so iteration is by final bucket, then
    newest first. ``called_after_last``: whether any non-null row followed the last new key.
    (A bucket of 9+ keys in a table of 64+ becomes a tree whose order differs; it is not modelled.)
    """
    spread = [h ^ (h >> 16) for h in hashes]
    n, threshold = 16, 12
    counts: dict[int, int] = {}
    for size, h in enumerate(spread):
        if size > threshold:
            n, threshold = n * 2, threshold * 2
            counts = _bucket_counts(spread[:size], n)
        idx = h & (n - 1)
        existing = counts.get(idx, 0)
        counts[idx] = existing + 1
        if existing >= 7 and n < 64:
            n, threshold = n * 2, threshold * 2
            counts = _bucket_counts(spread[:size + 1], n)
    if called_after_last and len(spread) > threshold:
        n *= 2
    mask = n - 1
    return sorted(range(len(spread)), key=lambda i: (spread[i] & mask, -i))


def _bucket_counts(spread: list[int], n: int) -> dict[int, int]:
    counts: dict[int, int] = {}
    for h in spread:
        counts[h & (n - 1)] = counts.get(h & (n - 1), 0) + 1
    return counts


# ---------------------------------------------------------------------------------------
# Reading the head with exact byte ranges.


def _min_distinct_bytes(count: int) -> int:
    """The fewest bytes ``count`` distinct byte strings take together (one empty, 256 of one byte...)."""
    total, length = 0, 0
    while count > 0:
        take = min(count, 256 ** length)
        total += take * length
        count -= take
        length += 1
    return total


class _NegativeLength(ValueError):
    def __init__(self, length: int, pos: int):
        super().__init__(f"negative string length {length}")
        self.pos = pos


def _walk_strings(buf: bytes | bytearray, pos: int, count: int, step: int, starts: list[int]) -> int:
    """Append the starts of up to ``count`` whole string-keyed entries at ``buf[pos:]``.

    An entry is a 4-byte length, the key bytes and ``step - 4`` more bytes. Only lengths are
    decoded (no key objects), so a dictionary of many thousands of entries is walked quickly.
    Lengths are read unsigned, so a negative one jumps past the buffer and ends the walk, where
    it is reported. Returns the position after the last whole entry.
    """
    unpack, append = _UINT.unpack_from, starts.append
    taken = len(starts)
    try:
        for _ in range(count):
            append(pos)
            pos += unpack(buf, pos)[0] + step
    except struct.error:
        pos = starts.pop()
    if pos > len(buf) and len(starts) > taken:
        pos = starts.pop()
    if len(starts) - taken < count and pos + 4 <= len(buf):
        n = _INT.unpack_from(buf, pos)[0]
        if n < 0:
            raise _NegativeLength(n, pos)
    return pos


class _Cursor:
    """Sequential decoding over a ByteSource that reads only the bytes the structure spans.

    ``min_end`` is a lower bound of where the structure being decoded ends; each fetch reads up to
    it, so a head is read in a few requests without reading past its end.
    """

    def __init__(self, source: ByteSource, offset: int, structure: str, buf: bytes = b""):
        self.source = source
        self.structure = structure
        self.start = offset
        self.buf = buf
        self.pos = offset
        self.min_end = offset

    def corrupt(self, message: str, offset: int) -> CorruptFileError:
        return CorruptFileError(message, file=self.source.name, structure=self.structure, offset=offset)

    def _fill(self, want_end: int) -> None:
        """Hold the bytes up to ``want_end`` (dropping those before ``pos``)."""
        end = self.start + len(self.buf)
        if want_end > end:
            self.buf = self.buf[self.pos - self.start:] + self.source.read(end, want_end - end, self.structure)
            self.start = self.pos

    def take(self, n: int) -> memoryview:
        if self.pos + n > self.start + len(self.buf):
            if self.pos + n > self.source.size:
                raise self.corrupt(f"needs {n} bytes but the file has {max(self.source.size - self.pos, 0)} "
                                   "left", self.pos)
            self._fill(max(self.pos + n, min(self.min_end, self.source.size)))
        i = self.pos - self.start
        self.pos += n
        return memoryview(self.buf)[i:i + n]

    def int(self) -> int:
        return _INT.unpack(self.take(4))[0]

    def entries(self, codec: _KeyCodec, count: int, ints: int, tail: int = 0) -> list[tuple]:
        """``count`` entries of a distinct key and ``ints`` 4-byte ints; ``tail``: bytes known to follow."""
        out: list[tuple] = []
        size = self.source.size
        at_first = self.pos
        while True:
            at = self.pos
            try:
                i = codec.scan(self.buf, self.pos - self.start, count - len(out), ints, out)
            except ValueError as exc:
                raise self.corrupt(str(exc), at) from None
            self.pos = self.start + i
            if len(out) == count:
                return out
            left = count - len(out)
            need = self.pos + left * (codec.min_size + 4 * ints) + tail
            spare = 0
            if codec.kind == "string":
                known = self.start + len(self.buf) >= self.pos + 4
                if known:
                    n = _INT.unpack_from(self.buf, i)[0]
                    if n < 0 or self.pos + 4 + n > size:
                        raise self.corrupt(f"string length {n} does not fit in the file", self.pos)
                    need += n
                # distinct keys take at least as many bytes as the shortest distinct strings
                spare = _min_distinct_bytes(left - 1 if known else left)
            if need > size:
                raise self.corrupt(f"{left} more entries do not fit in the file", self.pos)
            target = min(need + spare, size)
            if out and self.source.readahead:  # extend once: the rest at the mean size seen so far
                target = max(target, min(self.pos + (self.pos - at_first) * left * 5 // (4 * len(out)) + tail, size))
            self.min_end = max(self.min_end, target)
            self._fill(target)

    def byte(self) -> int:
        return self.take(1)[0]

    def dictionary(self, codec: _KeyCodec, count: int) -> tuple[bytes, range | list[int]]:
        """The bytes of ``count`` V1 entries (key, offset) and each entry's start within them."""
        if codec.kind != "string":
            item = codec.struct.size + 4
            return bytes(self.take(count * item)), range(0, count * item, item)
        base = self.pos
        data = bytearray(self.buf[base - self.start:])
        starts: list[int] = []
        size = self.source.size
        rel = 0
        while True:
            try:
                rel = _walk_strings(data, rel, count - len(starts), 8, starts)
            except _NegativeLength as exc:
                raise self.corrupt(str(exc), base + exc.pos) from None
            left = count - len(starts)
            if not left:
                break
            need = base + rel + left * 8
            if rel + 4 <= len(data):
                n = _INT.unpack_from(data, rel)[0]
                if base + rel + 4 + n > size:
                    raise self.corrupt(f"string length {n} does not fit in the file", base + rel)
                need += n
            if need > size:
                raise self.corrupt(f"{left} more entries do not fit in the file", base + rel)
            # the keys are distinct, so the rest take at least as many bytes as the shortest such
            known = rel + 4 <= len(data)
            spare = _min_distinct_bytes(left - 1 if known else left)
            have = base + len(data)
            want = max(min(need + spare, size), min(self.min_end, size))
            ahead = min(self.source.readahead, size)
            if have < ahead:  # what was read ahead is free: walk it before extending
                want = ahead
            elif ahead and starts:  # then extend once, at the mean entry size seen so far
                want = max(want, min(base + rel + rel * left * 5 // (4 * len(starts)), size))
            data += self.source.read(have, want - have, self.structure)
        self.buf, self.start, self.pos = bytes(data), base, base + rel
        return self.buf[:rel], starts


# ---------------------------------------------------------------------------------------
# Metadata


class BitmapEntry(NamedTuple):
    """One dictionary entry: a key and where its bitmap is (``offset < 0``: the single row ``-1-offset``).

    A named tuple rather than a dataclass: V1 dictionaries hold many thousands of them.
    """

    key: Any
    offset: int
    length: int  # -1 for single-row values


@dataclass(frozen=True)
class BitmapIndexBlock:
    """A V2 index block: its first key, offset from the first block, and size in bytes."""

    first_key: Any
    offset: int
    size: int


@dataclass(frozen=True)
class BitmapFileIndexMeta:
    """The head of a bitmap index (V1 holds the whole dictionary, V2 the block list)."""

    version: int
    row_count: int
    non_null_bitmap_number: int
    has_null: bool
    null_offset: int
    null_length: int
    head_size: int              # bytes from the version byte to the end of the head
    index_block_start: int      # V2: where the index blocks begin (== head_size); V1: body start
    body_start: int             # where serialized bitmaps begin
    blocks: tuple[BitmapIndexBlock, ...] = ()     # V2 only
    # V1 only: the serialized (key, offset) entries in file order, and where each one starts
    dictionary: bytes = field(default=b"", repr=False, compare=False)
    entry_starts: range | list[int] = field(default=range(0), repr=False, compare=False)


def _read_meta(source: ByteSource, codec: _KeyCodec) -> BitmapFileIndexMeta:
    source.read_ahead(0)
    cur = _Cursor(source, 0, "bitmap index head")
    cur.min_end = 10
    version = cur.byte()
    if version == 0:
        raise cur.corrupt("bitmap index version 0 is not a valid version", 0)
    if version > VERSION_2:
        raise UnsupportedError(f"bitmap index version {version} is newer than this reader (1 or 2)",
                               file=source.name, structure="bitmap index head", offset=0)
    row_count_at = cur.pos
    row_count = cur.int()
    number_at = cur.pos
    number = cur.int()
    if row_count < 0:
        raise cur.corrupt(f"negative row count {row_count}", row_count_at)
    if number < 0 or number > row_count:
        raise cur.corrupt(f"bitmap count {number} does not fit {row_count} rows", number_at)
    has_null = cur.byte() != 0
    null_offset, null_length = 0, -1
    null_at = cur.pos
    if version == VERSION_1:
        if has_null:
            # a source that reads ahead extends once, from the dictionary's mean entry size
            cur.min_end = cur.pos + 4 + (0 if source.readahead else number * (codec.min_size + 4))
            null_offset = cur.int()
        if cur.pos + number * (codec.min_size + 4) > source.size:
            raise cur.corrupt(f"{number} dictionary entries do not fit in {source.size} bytes", number_at)
        dictionary, starts = cur.dictionary(codec, number)
        body_start = cur.pos
        if has_null and null_offset >= 0:
            null_length = _v1_length(codec, dictionary, starts, 0, null_offset, source.size - body_start)
        meta = BitmapFileIndexMeta(
            VERSION_1, row_count, number, has_null, null_offset, null_length, body_start, body_start,
            body_start, dictionary=dictionary, entry_starts=starts)
    else:
        if has_null:
            cur.min_end = cur.pos + 12
            null_offset = cur.int()
            null_length = cur.int()
            if null_offset >= 0 and null_length < 0:
                raise cur.corrupt(f"negative null bitmap length {null_length}", null_at + 4)
        block_count_at = cur.pos
        cur.min_end = cur.pos + 4
        block_count = cur.int()
        if block_count < 0 or cur.pos + block_count * (codec.min_size + 4) + 4 > source.size:
            raise cur.corrupt(f"{block_count} index blocks do not fit in {source.size} bytes", block_count_at)
        firsts = cur.entries(codec, block_count, 1, tail=4)
        body_offset_at = cur.pos
        body_offset = cur.int()
        index_block_start = cur.pos
        if body_offset < 0 or index_block_start + body_offset > source.size:
            raise cur.corrupt(f"bitmap body offset {body_offset} is outside the file", body_offset_at)
        blocks = []
        for i, (key, off) in enumerate(firsts):
            end = firsts[i + 1][1] if i + 1 < len(firsts) else body_offset
            if off < 0 or end < off or end > body_offset:
                raise cur.corrupt(f"index block {i} offset {off} is out of order or outside the blocks",
                                  block_count_at)
            blocks.append(BitmapIndexBlock(key, off, end - off))
        meta = BitmapFileIndexMeta(
            VERSION_2, row_count, number, has_null, null_offset, null_length, index_block_start,
            index_block_start, index_block_start + body_offset, blocks=tuple(blocks))
    if has_null and null_offset < 0 and -1 - null_offset >= max(row_count, 1):
        raise cur.corrupt(f"null row {-1 - null_offset} is beyond {row_count} rows", null_at)
    return meta


def _v1_offset(codec: _KeyCodec, dictionary: bytes, start: int) -> int:
    """The bitmap offset of the V1 entry starting at ``start``."""
    key_size = 4 + _INT.unpack_from(dictionary, start)[0] if codec.kind == "string" else codec.struct.size
    return _INT.unpack_from(dictionary, start + key_size)[0]


def _v1_length(codec: _KeyCodec, dictionary: bytes, starts: range | list[int], j: int, offset: int,
               body_size: int) -> int:
    """A V1 bitmap runs to the next bitmap's offset in file order, the last one to the end.

    ``j`` is the position of the first entry after it (0 for the null bitmap, which comes first).
    """
    if offset < 0:
        return -1
    for k in range(j, len(starts)):
        nxt = _v1_offset(codec, dictionary, starts[k])
        if nxt >= 0:
            return nxt - offset
    return body_size - offset


# ---------------------------------------------------------------------------------------
# Reader


class BitmapReader(FileIndexReader):
    """Answers equal / notEqual / in / notIn / isNull / isNotNull exactly; everything else REMAIN.

    The head is read on first use; V2 then reads only the index block holding a value, and both
    versions read a bitmap only when a predicate needs it (then keep it).
    """

    index_type = "bitmap"

    def __init__(self, dtype: DataType, source: ByteSource, options: dict[str, str] | None = None):
        self.dtype = dtype
        self.source = source
        self.options = dict(options or {})
        self.codec = _KeyCodec(dtype)
        self._meta: BitmapFileIndexMeta | None = None
        self._v1_entries: list[tuple[Any, int]] | None = None
        self._block_data: dict[int, tuple[bytes, range | list[int]]] = {}
        self._block_entries: dict[int, list[tuple[Any, int, int]]] = {}
        self._bitmaps: dict[Any, BitMap] = {}
        self._dictionary: list[tuple[Any, int]] | None = None

    # -- metadata

    @property
    def meta(self) -> BitmapFileIndexMeta:
        if self._meta is None:
            self._meta = _read_meta(self.source, self.codec)
        return self._meta

    @property
    def version(self) -> int:
        return self.meta.version

    @property
    def row_count(self) -> int:
        return self.meta.row_count

    def _corrupt(self, message: str, structure: str, offset: int) -> CorruptFileError:
        return CorruptFileError(message, file=self.source.name, structure=structure, offset=offset)

    def _block_index(self, key: Any) -> int:
        """The last V2 block whose first key is <= key, or -1."""
        blocks = self.meta.blocks
        sk = self.codec.sort_key(key)
        lo, hi = 0, len(blocks)
        while lo < hi:
            mid = (lo + hi) // 2
            if self.codec.sort_key(blocks[mid].first_key) <= sk:
                lo = mid + 1
            else:
                hi = mid
        return lo - 1

    def _v1_entry_list(self) -> list[tuple[Any, int]]:
        """Every V1 ``(key, offset)`` in file order (decoded only when all of them are wanted)."""
        if self._v1_entries is None:
            meta = self.meta
            out: list[tuple[Any, int]] = []
            self.codec.scan(meta.dictionary, 0, meta.non_null_bitmap_number, 1, out)
            self._v1_entries = out
        return self._v1_entries

    @staticmethod
    def _locate(data: bytes, encoded: bytes, starts: range | list[int], lo: int, last: bool) -> int:
        """Where ``encoded`` begins an entry of ``data`` (the first or last such), or -1.

        Comparing serialized key bytes is key equality: each type has one encoding per key.
        """
        i = data.rfind(encoded, lo) if last else data.find(encoded, lo)
        while i >= 0:
            j = bisect.bisect_left(starts, i)
            if j < len(starts) and starts[j] == i:
                return j
            i = data.rfind(encoded, lo, i + len(encoded) - 1) if last else data.find(encoded, i + 1)
        return -1

    def _block_bytes(self, i: int, data: bytes | None = None) -> tuple[bytes, range | list[int]]:
        """A V2 index block's bytes (checked to hold its entries) and where each entry starts."""
        cached = self._block_data.get(i)
        if cached is not None:
            return cached
        meta = self.meta
        block = meta.blocks[i]
        at = meta.index_block_start + block.offset
        if data is None:
            data = self.source.read(at, block.size, "bitmap index block")
        count = _INT.unpack_from(data)[0] if block.size >= 4 else None
        if count is None or count < 0 or 4 + count * (self.codec.min_size + 8) > block.size:
            raise self._corrupt(f"index block entry count {count} does not fit {block.size} bytes",
                                "bitmap index block", at)
        if self.codec.kind == "string":
            starts: range | list[int] = []
            try:
                _walk_strings(data, 4, count, 12, starts)
            except _NegativeLength as exc:
                raise self._corrupt(str(exc), "bitmap index block", at + exc.pos) from None
            if len(starts) < count:
                raise self._corrupt("index block entries run past the block", "bitmap index block", at)
        else:
            item = self.codec.struct.size + 8
            starts = range(4, 4 + count * item, item)
        self._block_data[i] = data, starts
        return data, starts

    def _read_block(self, i: int, data: bytes | None = None) -> list[tuple[Any, int, int]]:
        if i in self._block_entries:
            return self._block_entries[i]
        raw, starts = self._block_bytes(i, data)
        entries: list[tuple[Any, int, int]] = []
        self.codec.scan(raw, 4, len(starts), 2, entries)
        self._block_entries[i] = entries
        return entries

    def find_entry(self, key: Any) -> BitmapEntry | None:
        """The dictionary entry of a key (``None`` for the null bitmap), or None when absent."""
        meta = self.meta
        if key is None:
            return BitmapEntry(None, meta.null_offset, meta.null_length) if meta.has_null else None
        codec = self.codec
        if meta.version == VERSION_1:
            # as Paimon's map of the dictionary, a key listed twice maps to its last entry
            if codec.kind == "boolean":
                found = [j for j, (k, _) in enumerate(self._v1_entry_list()) if k == key]
                j = found[-1] if found else -1
            else:
                j = self._locate(meta.dictionary, codec.encode(key), meta.entry_starts, 0, last=True)
            if j < 0:
                return None
            starts = meta.entry_starts
            offset = _v1_offset(codec, meta.dictionary, starts[j])
            return BitmapEntry(key, offset, _v1_length(codec, meta.dictionary, starts, j + 1, offset,
                                                       self.source.size - meta.body_start))
        i = self._block_index(key)
        if i < 0:
            return None
        if codec.kind != "boolean":
            data, starts = self._block_bytes(i)
            encoded = codec.encode(key)
            j = self._locate(data, encoded, starts, 4, last=False)
            if j < 0:
                return None
            return BitmapEntry(key, *_TWO_INTS.unpack_from(data, starts[j] + len(encoded)))
        entries = self._read_block(i)
        sort_key = self.codec.sort_key
        sk = sort_key(key)
        j = bisect.bisect_left(entries, sk, key=lambda t: sort_key(t[0]))
        if j < len(entries) and sort_key(entries[j][0]) == sk:
            return BitmapEntry(*entries[j])
        return None

    def _bitmap_of_entry(self, entry: BitmapEntry | None, body: bytes | None = None) -> BitMap:
        if entry is None:
            return BitMap()
        meta = self.meta
        if entry.offset < 0:
            row = -1 - entry.offset
            if row >= meta.row_count:
                raise self._corrupt(f"single-value row {row} is beyond {meta.row_count} rows",
                                    "bitmap dictionary", meta.body_start)
            return BitMap([row])
        at = meta.body_start + entry.offset
        length = entry.length if entry.length >= 0 else self.source.size - at
        if length < 0 or at + length > self.source.size:
            raise self._corrupt(f"bitmap of {length} bytes at body offset {entry.offset} is outside the file",
                                "bitmap", at)
        if body is not None:
            data = body[entry.offset:entry.offset + length]
        else:
            data = self.source.read(at, length, "bitmap")
        return roaring.deserialize(data, self.source.name, "bitmap", at)

    def _bitmap_for_key(self, key: Any) -> BitMap:
        if key not in self._bitmaps:
            self._bitmaps[key] = self._bitmap_of_entry(self.find_entry(key))
        return self._bitmaps[key]

    def bitmap_for(self, value: Any) -> BitMap:
        """The rows holding ``value`` (an internal value; None means the null rows)."""
        return BitMap(self._bitmap_for_key(None if value is None else self.codec.key(value)))

    def null_bitmap(self) -> BitMap:
        return self.bitmap_for(None)

    # -- predicates (Paimon's BitmapFileIndex.Reader)

    def _in(self, literals: list[Any]) -> BitMap:
        out = BitMap()
        for lit in literals:
            out |= self._bitmap_for_key(None if lit is None else self.codec.key(lit))
        return out

    def visit_equal(self, literal: Any) -> FileIndexResult:
        return BitmapResult(self._in([literal]))

    def visit_not_equal(self, literal: Any) -> FileIndexResult:
        return self.visit_not_in([literal])

    def visit_in(self, literals: list[Any]) -> FileIndexResult:
        return BitmapResult(self._in(literals))

    def visit_not_in(self, literals: list[Any]) -> FileIndexResult:
        # flipped over all rows, so null rows are included (as Paimon does)
        bitmap = self._in(literals)
        bitmap.flip_inplace(0, self.meta.row_count)
        return BitmapResult(bitmap)

    def visit_is_null(self) -> FileIndexResult:
        return BitmapResult(self._in([None]))

    def visit_is_not_null(self) -> FileIndexResult:
        return self.visit_not_in([None])

    # -- dictionary and layout

    def entries(self) -> list[BitmapEntry]:
        """Every non-null dictionary entry in key order (reads every V2 index block, in one request)."""
        meta = self.meta
        if meta.version == VERSION_1:
            v1 = self._v1_entry_list()
            ends = [o for _, o in v1 if o >= 0] + [self.source.size - meta.body_start]
            out, nxt = [], 0
            for k, o in v1:
                if o >= 0:
                    nxt += 1
                    out.append(BitmapEntry(k, o, ends[nxt] - o))
                else:
                    out.append(BitmapEntry(k, o, -1))
        else:
            missing = [i for i in range(len(meta.blocks)) if i not in self._block_entries]
            if missing:
                region = self.source.read(meta.index_block_start, meta.body_start - meta.index_block_start,
                                          "bitmap index blocks")
                for i in missing:
                    b = meta.blocks[i]
                    self._read_block(i, region[b.offset:b.offset + b.size])
            out = [BitmapEntry(*e) for i in range(len(meta.blocks)) for e in self._block_entries[i]]
        out.sort(key=lambda e: self.codec.sort_key(e.key))
        return out

    def _body(self) -> bytes:
        meta = self.meta
        return self.source.read(meta.body_start, self.source.size - meta.body_start, "bitmap body")

    def dictionary(self) -> Iterator[tuple[Any, int]]:
        """``(value, cardinality)`` for every distinct non-null value, in key order (worked out
        once: it deserializes every bitmap, and a summary and a values view both ask for it)."""
        if self._dictionary is None:
            entries = self.entries()
            body = self._body() if any(e.offset >= 0 for e in entries) else b""
            self._dictionary = [
                (self.codec.value(e.key),
                 1 if e.offset < 0 else len(self._bitmaps.get(e.key) or self._bitmap_of_entry(e, body)))
                for e in entries]
        return iter(self._dictionary)

    def lookup_bytes(self, value: Any) -> int:
        """Bytes a point lookup of ``value`` reads: the head, V2's one index block, and one bitmap."""
        meta = self.meta
        key = None if value is None else self.codec.key(value)
        total = meta.head_size
        if key is not None and meta.version == VERSION_2:
            i = self._block_index(key)
            total += meta.blocks[i].size if i >= 0 else 0
        entry = self.find_entry(key)
        if entry is not None and entry.offset >= 0:
            at = meta.body_start + entry.offset
            total += entry.length if entry.length >= 0 else self.source.size - at
        return total

    def summary(self) -> dict:
        meta = self.meta
        dictionary = list(self.dictionary())
        null_count = len(self.null_bitmap()) if meta.has_null else 0
        top = heapq.nsmallest(20, range(len(dictionary)), key=lambda i: (-dictionary[i][1], i))
        out: dict[str, Any] = {
            "index_type": self.index_type,
            "version": meta.version,
            "row_count": meta.row_count,
            "null_count": null_count,
            "dictionary_size": meta.non_null_bitmap_number,
            "single_row_values": sum(1 for _, c in dictionary if c == 1),
            "top_values": [(to_json_value(self.dtype, dictionary[i][0]), dictionary[i][1]) for i in top],
            "file_size": self.source.size,
            "head_bytes": meta.head_size,
            "index_block_bytes": meta.body_start - meta.index_block_start,
            "bitmap_bytes": self.source.size - meta.body_start,
        }
        if meta.version == VERSION_2:
            blocks = []
            for i, b in enumerate(meta.blocks):
                entries = self._read_block(i)
                blocks.append({
                    "offset": b.offset, "size": b.size, "entries": len(entries),
                    "first_key": to_json_value(self.dtype, self.codec.value(b.first_key)),
                    "last_key": to_json_value(self.dtype, self.codec.value(entries[-1][0])) if entries else None,
                })
            out["block_count"] = len(meta.blocks)
            out["blocks"] = blocks
        if dictionary:
            freq = dictionary[top[0]][0]
            out["lookup_bytes_most_frequent"] = self.lookup_bytes(freq)
        return out


# ---------------------------------------------------------------------------------------
# Writer


class BitmapWriter(FileIndexWriter):
    """Builds the bytes Paimon's ``BitmapFileIndex.Writer`` writes for the same rows."""

    index_type = "bitmap"

    def __init__(self, dtype: DataType, options: dict[str, str] | None = None):
        super().__init__(dtype, options)
        self.codec = _KeyCodec(dtype)
        self.version = int(self.options.get("version", VERSION_2))
        if self.version not in (VERSION_1, VERSION_2):
            raise UnsupportedError(f"invalid bitmap index version: {self.version}")
        self.block_size_limit = parse_memory_size(self.options.get("index-block-size", DEFAULT_INDEX_BLOCK_SIZE))
        self._rows: dict[Any, list[int]] = {}
        self._nulls: list[int] = []
        self._row_count = 0
        self._called_after_last_new = False

    def write(self, value: Any) -> None:
        if value is None:
            self._nulls.append(self._row_count)
        else:
            key = self.codec.key(value)
            rows = self._rows.get(key)
            if rows is None:
                self._rows[key] = [self._row_count]
                self._called_after_last_new = False
            else:
                rows.append(self._row_count)
                self._called_after_last_new = True
        self._row_count += 1

    def write_batch(self, values: Sequence[Any]) -> None:
        """``write`` for many rows in one tight loop."""
        key, table, nulls = self.codec.key, self._rows, self._nulls
        after_new = self._called_after_last_new
        for rid, value in enumerate(values, self._row_count):
            if value is None:
                nulls.append(rid)
                continue
            k = key(value)
            rows = table.get(k)
            if rows is None:
                table[k] = [rid]
                after_new = False
            else:
                rows.append(rid)
                after_new = True
        self._called_after_last_new = after_new
        self._row_count += len(values)

    def accepts_arrow(self, arrow_type: Any) -> bool:
        kind = self.codec.kind
        if kind == "string":
            return bulk.is_string_type(arrow_type)
        if kind in ("float", "double"):
            return bulk.is_float_type(self.dtype, arrow_type)
        if kind == "boolean":
            return pa.types.is_boolean(arrow_type)
        return bulk.long_key_type(self.dtype, arrow_type)

    def write_arrow(self, array: Any) -> None:
        """Group a whole Arrow column's rows by key with Arrow/numpy (strings by dictionary encoding)."""
        if not self.accepts_arrow(array.type):
            super().write_arrow(array)
        array = bulk.as_array(array)
        valid = bulk.valid_mask(array)
        rows = np.flatnonzero(valid)
        kind = self.codec.kind
        if kind == "string":
            encoded = pc.dictionary_encode(array)
            distinct = bulk.utf8_values(encoded.dictionary)
            codes = encoded.indices.to_numpy(zero_copy_only=False)[valid].astype(np.int64)
        else:
            if kind == "boolean":
                keys = array.fill_null(False).to_numpy(zero_copy_only=False).astype(np.int64)
            elif kind in ("float", "double"):
                keys = bulk.float_bit_keys(array, 32 if kind == "float" else 64)
                keys = keys & 0xFFFFFFFF if kind == "float" else keys.view(np.uint64)
            else:
                keys = bulk.long_keys(self.dtype, array)
            found, codes = bulk.first_seen_codes(keys[valid])
            distinct = [bool(k) for k in found.tolist()] if kind == "boolean" else found.tolist()
        self._add_groups(distinct, codes, rows, len(array))

    def _add_groups(self, distinct: list, codes: np.ndarray, rows: np.ndarray, count: int) -> None:
        """Merge a batch: ``distinct`` keys in first-seen order, each non-null row's code and offset."""
        base = self._row_count
        null_rows = np.setdiff1d(np.arange(count, dtype=np.int64), rows, assume_unique=True)
        self._nulls.extend((null_rows + base).tolist())
        if len(rows):
            groups = bulk.group_rows(codes, rows + base, len(distinct))
            table = self._rows
            last_new = -1
            for key, group in zip(distinct, groups, strict=True):
                found = table.get(key)
                if found is None:
                    table[key] = group.tolist()
                    last_new = int(group[0])
                else:
                    found.extend(group.tolist())
            self._called_after_last_new = int(rows[-1]) + base != last_new
        self._row_count += count

    @property
    def empty(self) -> bool:
        return self._row_count == 0

    def serialized_bytes(self) -> bytes:
        codec = self.codec
        keys = list(self._rows)
        order = java_hashmap_order([codec.java_hash(k) for k in keys], self._called_after_last_new)
        keys = [keys[i] for i in order]
        null_bytes = BitMap(self._nulls).serialize()
        has_null = bool(self._nulls)
        single_null = len(self._nulls) == 1
        null_offset = -1 - self._nulls[0] if single_null else 0
        offset = len(null_bytes) if has_null and not single_null else 0
        bodies = [null_bytes] if has_null and not single_null else []
        entries: list[BitmapEntry] = []
        for k in keys:
            rows = self._rows[k]
            if len(rows) == 1:
                entries.append(BitmapEntry(k, -1 - rows[0], -1))
            else:
                data = BitMap(rows).serialize()
                bodies.append(data)
                entries.append(BitmapEntry(k, offset, len(data)))
                offset += len(data)
        out = [bytes([self.version]), _INT.pack(self._row_count), _INT.pack(len(keys)),
               b"\x01" if has_null else b"\x00"]
        if self.version == VERSION_1:
            if has_null:
                out.append(_INT.pack(null_offset))
            for e in entries:
                out += [codec.encode(e.key), _INT.pack(e.offset)]
        else:
            if has_null:
                out += [_INT.pack(null_offset), _INT.pack(len(null_bytes))]
            out.append(self._v2_index(entries))
        return b"".join(out + bodies)

    def _v2_index(self, entries: list[BitmapEntry]) -> bytes:
        """Block count, block first keys and offsets, body offset, then the index blocks."""
        codec = self.codec
        blocks: list[list[BitmapEntry]] = [[]] if entries else []
        first_keys: list[Any] = [None] if entries else []
        sizes: list[int] = [4] if entries else []
        for e in sorted(entries, key=lambda e: codec.sort_key(e.key)):
            need = 8 + codec.size(e.key)
            if sizes[-1] + need > self.block_size_limit:
                if 4 + need > self.block_size_limit:
                    raise UnsupportedError("index fail: a key does not fit in one index block "
                                           f"of {self.block_size_limit} bytes (as Paimon's writer fails)")
                blocks.append([])
                first_keys.append(e.key)
                sizes.append(4)
            if not blocks[-1]:
                first_keys[-1] = e.key
            blocks[-1].append(e)
            sizes[-1] += need
        head = [_INT.pack(len(blocks))]
        offset = 0
        for k, size in zip(first_keys, sizes, strict=True):
            head += [codec.encode(k), _INT.pack(offset)]
            offset += size
        head.append(_INT.pack(offset))
        for block in blocks:
            head.append(_INT.pack(len(block)))
            for e in block:
                head += [codec.encode(e.key), _INT.pack(e.offset), _INT.pack(e.length)]
        return b"".join(head)
