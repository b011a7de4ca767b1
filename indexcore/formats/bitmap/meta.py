"""The bitmap index head (Paimon's ``BitmapFileIndexMeta`` V1 and ``BitmapFileIndexMetaV2``), read with
exact byte ranges: V1 holds the whole dictionary, V2 the index block list."""

from __future__ import annotations

import bisect
import struct
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import xxhash

from indexcore.cache import LRU
from indexcore.errors import CorruptFileError, UnsupportedError
from indexcore.formats.bitmap.keys import INT32, UINT32, KeyCodec
from indexcore.io import ByteSource

VERSION_1 = 1
VERSION_2 = 2


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


#: String-keyed entry starts already walked, by content: readers opened one per lookup (per data
#: file, per page run) on the same blob walk its V1 dictionary or V2 index block once. Weighed in
#: bytes of the walked region (the bytes are kept to prove a hit, the starts 4 bytes each, in an
#: ``array``: a head is at most 2 GiB, its lengths being Java ints).
_STARTS = LRU(64 << 20)
#: Bytes of a V1 dictionary hashed to find it in ``_STARTS`` (the whole region is compared on a hit).
_PROBE = 4096


def known_starts(data: bytes | memoryview, count: int, step: int) -> Sequence[int] | None:
    """The entry starts walked before over exactly these bytes (``count`` entries from byte 4, each
    ``step`` bytes after its key), or None."""
    hit = _STARTS.get(("block", len(data), count, step, xxhash.xxh3_64_intdigest(data)))
    return hit[1] if hit is not None and hit[0] == data else None


def remember_starts(data: bytes, count: int, step: int, starts: list[int]) -> Sequence[int]:
    kept = array("I", starts)
    _STARTS.put(("block", len(data), count, step, xxhash.xxh3_64_intdigest(data)), (bytes(data), kept),
                len(data) + 4 * len(kept))
    return kept


class NegativeLength(ValueError):
    def __init__(self, length: int, pos: int):
        super().__init__(f"negative string length {length}")
        self.pos = pos


def walk_strings(buf: bytes | bytearray, pos: int, count: int, step: int, starts: list[int]) -> int:
    """Append the starts of up to ``count`` whole string-keyed entries at ``buf[pos:]``.

    An entry is a 4-byte length, the key bytes and ``step - 4`` more bytes. Only lengths are
    decoded (no key objects), so a dictionary of many thousands of entries is walked quickly.
    Lengths are read unsigned, so a negative one jumps past the buffer and ends the walk, where
    it is reported. Returns the position after the last whole entry.
    """
    unpack, append = UINT32.unpack_from, starts.append
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
        n = INT32.unpack_from(buf, pos)[0]
        if n < 0:
            raise NegativeLength(n, pos)
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
        return INT32.unpack(self.take(4))[0]

    def entries(self, codec: KeyCodec, count: int, ints: int, tail: int = 0) -> list[tuple]:
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
                    n = INT32.unpack_from(self.buf, i)[0]
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

    def dictionary(self, codec: KeyCodec, count: int) -> tuple[bytes, Sequence[int]]:
        """The bytes of ``count`` V1 entries (key, offset) and each entry's start within them."""
        if codec.kind != "string":
            item = codec.struct.size + 4
            return bytes(self.take(count * item)), range(0, count * item, item)
        base = self.pos
        size = self.source.size
        # a dictionary walked before: found by its first bytes, proved by all of them
        probe = min(_PROBE, count * 8 + _min_distinct_bytes(count), size - base)
        self._fill(base + probe)
        key = ("v1", count, probe, xxhash.xxh3_64_intdigest(memoryview(self.buf)[base - self.start:][:probe]))
        hit = _STARTS.get(key)
        if hit is not None and base + len(hit[0]) <= size:
            known, known_starts = hit
            # as far as the walk's own read would reach: the dictionary and one read-ahead past it,
            # so a remembered dictionary costs no more requests than a walked one
            self._fill(min(size, base + len(known) + self.source.readahead))
            at = base - self.start
            if self.buf[at:at + len(known)] == known:  # bytes compare with memcmp (a memoryview would not)
                self.pos = base + len(known)
                return known, known_starts
        data = bytearray(self.buf[base - self.start:])
        starts: list[int] = []
        rel = 0
        while True:
            try:
                rel = walk_strings(data, rel, count - len(starts), 8, starts)
            except NegativeLength as exc:
                raise self.corrupt(str(exc), base + exc.pos) from None
            left = count - len(starts)
            if not left:
                break
            need = base + rel + left * 8
            if rel + 4 <= len(data):
                n = INT32.unpack_from(data, rel)[0]
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
        dictionary, kept = self.buf[:rel], array("I", starts)
        _STARTS.put(key, (dictionary, kept), rel + 4 * count)
        return dictionary, kept


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
    entry_starts: Sequence[int] = field(default=range(0), repr=False, compare=False)


def read_meta(source: ByteSource, codec: KeyCodec) -> BitmapFileIndexMeta:
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
            null_length = v1_length(codec, dictionary, starts, 0, null_offset, source.size - body_start)
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


def v1_offset(codec: KeyCodec, dictionary: bytes, start: int) -> int:
    """The bitmap offset of the V1 entry starting at ``start``."""
    key_size = 4 + INT32.unpack_from(dictionary, start)[0] if codec.kind == "string" else codec.struct.size
    return INT32.unpack_from(dictionary, start + key_size)[0]


def v1_length(codec: KeyCodec, dictionary: bytes, starts: range | list[int], j: int, offset: int,
               body_size: int) -> int:
    """A V1 bitmap runs to the next bitmap's offset in file order, the last one to the end.

    ``j`` is the position of the first entry after it (0 for the null bitmap, which comes first).
    """
    if offset < 0:
        return -1
    for k in range(j, len(starts)):
        nxt = v1_offset(codec, dictionary, starts[k])
        if nxt >= 0:
            return nxt - offset
    return body_size - offset


def locate_entry(data: bytes, encoded: bytes, starts: Sequence[int], lo: int, last: bool) -> int:
    """Which entry of ``data`` (entries beginning at ``starts``) begins with ``encoded``: the first
    or last such, or -1. Comparing serialized key bytes is key equality: each type has one
    encoding per key."""
    i = data.rfind(encoded, lo) if last else data.find(encoded, lo)
    while i >= 0:
        j = bisect.bisect_left(starts, i)
        if j < len(starts) and starts[j] == i:
            return j
        i = data.rfind(encoded, lo, i + len(encoded) - 1) if last else data.find(encoded, i + 1)
    return -1
