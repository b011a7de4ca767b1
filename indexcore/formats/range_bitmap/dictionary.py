"""The range-bitmap dictionary (Paimon's ``ChunkedDictionary``): sorted keys in chunks, read one chunk at a
time and binary-searched; and how the writer appends keys to it."""

from __future__ import annotations

import bisect
import operator
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from indexcore.errors import CorruptFileError, UnsupportedError
from indexcore.formats.base import ByteCursor
from indexcore.formats.range_bitmap.keys import I8, I32, VERSION, KeyCodec, identity, read_header
from indexcore.io import ByteSource

_CHUNK_TAIL = struct.Struct(">iiiii")   # code, keys offset, size, two key lengths


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
        cur, body = read_header(source, offset, "dictionary header", 13)
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
        start = I32.unpack_from(area, 4 * index)[0]
        end = I32.unpack_from(area, 4 * index + 4)[0] if index + 1 < self.size else self.chunks_length
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
        off = I32.unpack_from(data, 4 * i)[0]
        if not 0 <= off < chunk.lengths[1]:
            raise CorruptFileError(f"key offset {off} outside {chunk.lengths[1]} key bytes", file=self.source.name,
                                   structure=f"dictionary chunk {index} keys", offset=chunk.where + 4 * i)
        start = chunk.lengths[0] + off
        n = I32.unpack_from(data, start)[0] if start + 4 <= len(data) else -1
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
        order = None if self.codec.order is identity else self.codec.order
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


class SortedKeys:
    """A dictionary held as its order keys (a writer's, never serialized): ``find`` answers as
    :meth:`ChunkedDictionary.find` does over the same keys chunked."""

    def __init__(self, orders: list):
        self.orders = orders

    def find(self, key: Any) -> int:
        """The code of ``key`` (an order value), or ``-(insertion code) - 1`` when absent."""
        at = bisect.bisect_left(self.orders, key)
        return at if at < len(self.orders) and self.orders[at] == key else -at - 1


def serialize_dictionary(codec: KeyCodec, raws: list, limit: int) -> bytes:
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


def serialize_fixed_dictionary(codec: KeyCodec, raws: np.ndarray, limit: int) -> bytes:
    """:func:`serialize_dictionary` for fixed-width keys: every chunk holds ``limit // width``
    keys after its head, so the chunks are cut by arithmetic and the keys packed by numpy."""
    width = codec.width
    per = limit // width + 1
    packed = raws.astype(">i" + str(width))
    offsets, chunks, keys = [], [], []
    chunk_size = 1 + width + _CHUNK_TAIL.size
    keys_offset = 0
    for index, start in enumerate(range(0, len(raws), per)):
        members = min(per, len(raws) - start) - 1
        offsets.append(I32.pack(index * chunk_size))
        chunks.append(I8.pack(VERSION) + packed[start:start + 1].tobytes()
                      + _CHUNK_TAIL.pack(start, keys_offset, members, members * width, width))
        keys.append(packed[start + 1:start + 1 + members].tobytes())
        keys_offset += members * width
    off, ch = b"".join(offsets), b"".join(chunks)
    header = struct.pack(">biii", VERSION, len(offsets), len(off), len(ch))
    return struct.pack(">i", len(header)) + header + off + ch + b"".join(keys)
