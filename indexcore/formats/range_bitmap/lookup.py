"""Range-bitmap answers straight on a blob's bytes where the header and the dictionary alone give
them: an empty bitmap, without a reader, cursor or dictionary object per blob.

What explain's index stage asks of thousands of blobs of one column under ``c = v``, ``c IN``,
``c < v`` ...: most files do not hold the value (it lies outside the file's [min, max], or the
dictionary has no such key), and then the answer is an empty bitmap that reading the header, and
perhaps the dictionary's headers and one chunk's keys, decides. :class:`RangeBitmapLookup` parses
those with ``struct`` as :class:`~indexcore.formats.range_bitmap.reader.RangeBitmapReader` and
:class:`~indexcore.formats.range_bitmap.dictionary.ChunkedDictionary` read them, with their checks,
and counts the bytes they would read (each header with its length, the chunk headers' area once,
each chunk's keys once). Where the answer needs the bit-sliced index (a key found, every row
non-null) or anything is off (a version, a length, a bound, a key that does not fit) it answers
None: the caller asks the reader, which reads the blob again from its start and says what is wrong.
"""

from __future__ import annotations

import struct
from typing import Any

from indexcore.formats.range_bitmap.keys import VERSION, KeyCodec

_I32 = struct.Struct(">i")
_FIXED = struct.Struct(">bii")  # version, row count, cardinality (the header's first fields, after its length)
_DICT = struct.Struct(">biii")  # version, chunk count, offsets length, chunks length
_TAIL = struct.Struct(">iiiii")  # code, keys offset, size, two key lengths
_HEADER_MIN, _DICT_MIN = 13, 13  # the readers' least header lengths

#: leaf functions answered on the bytes, and when each is empty (Paimon's ``RangeBitmap``):
#: equal / in by the dictionary; a comparison only when the key lies beyond the bounds
_METHODS = ("visit_equal", "visit_in", "visit_less_than", "visit_less_or_equal", "visit_greater_than",
            "visit_greater_or_equal")


class _Unanswered(Exception):
    """The bytes do not decide the answer here: the reader is asked (internal to this module)."""


class RangeBitmapLookup:
    """One leaf's question to every range-bitmap blob of a column type: the literals' order keys
    made once. :meth:`empty` answers a blob on its bytes."""

    def __init__(self, codec: KeyCodec, method: str, args: tuple):
        if method not in _METHODS:
            raise ValueError(f"{method} is asked of the reader")
        literals = list(args[0]) if method == "visit_in" else [args[0]]
        if method != "visit_in" and literals[0] is None:
            raise ValueError("a NULL literal is answered by the reader (REMAIN)")
        self.codec = codec
        self.method = method
        # order keys of the non-null literals (IN skips a NULL, as the reader does), each once
        self.keys = list(dict.fromkeys(codec.order_of_value(v) for v in literals if v is not None))

    def empty(self, blob: bytes) -> int | None:
        """The bytes the reader reads to answer an empty bitmap for the whole blob ``blob``, or None
        where the answer is not (or may not be) empty, or the bytes are not as the reader expects."""
        try:
            return self._empty(blob)
        except (_Unanswered, struct.error, IndexError, ValueError, TypeError, OverflowError):
            return None

    def _empty(self, blob: bytes) -> int:
        codec, n = self.codec, len(blob)
        head_len = _I32.unpack_from(blob, 0)[0] if n >= 4 else -1
        if head_len < _HEADER_MIN or 4 + head_len > n:
            raise _Unanswered
        end = 4 + head_len
        version, row_count, cardinality = _FIXED.unpack_from(blob, 4)
        if version > VERSION or row_count < 0:
            raise _Unanswered
        pos = 13
        used = end
        if cardinality > 0:
            low_raw, pos = _key_at(codec, blob, pos, end)
            high_raw, pos = _key_at(codec, blob, pos, end)
            low, high = codec.order(low_raw), codec.order(high_raw)
            if low > high:
                raise _Unanswered
        if pos + 4 > end:
            raise _Unanswered
        dictionary_length = _I32.unpack_from(blob, pos)[0]
        if dictionary_length < 0 or end + dictionary_length > n:
            raise _Unanswered
        if cardinality <= 0:
            return used  # every answer of these functions is empty
        method = self.method
        if method in ("visit_equal", "visit_in"):
            dictionary = None
            for key in self.keys:
                if key == low and key == high:
                    raise _Unanswered  # every non-null row: the existence bitmap
                if key < low or key > high:
                    continue
                if dictionary is None:
                    dictionary = _Dictionary(codec, blob, end)
                    used += dictionary.head_bytes
                if dictionary.find(key) >= 0:
                    raise _Unanswered
            return used + (dictionary.used if dictionary is not None else 0)
        key = self.keys[0]
        if (method == "visit_less_than" and key <= low) or (method == "visit_less_or_equal" and key < low) or \
                (method == "visit_greater_than" and key >= high) or \
                (method == "visit_greater_or_equal" and key > high):
            return used
        raise _Unanswered


def _key_at(codec: KeyCodec, data: bytes, pos: int, end: int) -> tuple[Any, int]:
    """A stored key at ``pos`` that ends by ``end`` and where it ends (as ``KeyCodec.read``)."""
    packer = codec.packer
    if packer is not None:
        if pos + packer.size > end:
            raise _Unanswered
        return packer.unpack_from(data, pos)[0], pos + packer.size
    if pos + 4 > end:
        raise _Unanswered
    length = _I32.unpack_from(data, pos)[0]
    if length < 0 or pos + 4 + length > end:
        raise _Unanswered
    return data[pos + 4:pos + 4 + length], pos + 4 + length


class _Dictionary:
    """``ChunkedDictionary.find`` on a blob's bytes, counting what it reads (its header with its
    length, the chunk headers' area once, each probed chunk's keys once)."""

    __slots__ = ("blob", "codec", "size", "offsets_length", "chunks_length", "body", "keys_base", "head_bytes",
                 "used", "_chunks", "_loaded")

    def __init__(self, codec: KeyCodec, blob: bytes, offset: int):
        n = len(blob)
        head_len = _I32.unpack_from(blob, offset)[0] if offset + 4 <= n else -1
        if head_len < _DICT_MIN or offset + 4 + head_len > n:
            raise _Unanswered
        version, size, offsets_length, chunks_length = _DICT.unpack_from(blob, offset + 4)
        if version > VERSION or size < 0 or offsets_length < 0 or chunks_length < 0 or offsets_length != 4 * size:
            raise _Unanswered
        self.blob, self.codec, self.size = blob, codec, size
        self.offsets_length, self.chunks_length = offsets_length, chunks_length
        self.body = offset + 4 + head_len
        self.keys_base = self.body + offsets_length + chunks_length
        if self.keys_base > n:
            raise _Unanswered
        self.head_bytes = 4 + head_len
        self.used = 0
        self._chunks: dict[int, tuple] = {}
        self._loaded: set[int] = set()

    def _chunk(self, index: int) -> tuple:
        """(head order, code, keys offset, size, (length a, length b)) of chunk ``index``."""
        chunk = self._chunks.get(index)
        if chunk is not None:
            return chunk
        if not self._chunks:
            self.used += self.offsets_length + self.chunks_length  # the area, read once
        blob, body, codec = self.blob, self.body, self.codec
        start = _I32.unpack_from(blob, body + 4 * index)[0]
        stop = _I32.unpack_from(blob, body + 4 * index + 4)[0] if index + 1 < self.size else self.chunks_length
        if not 0 <= start <= stop <= self.chunks_length:
            raise _Unanswered
        base = body + self.offsets_length
        at, end = base + start, base + stop
        if at + 1 > end or struct.unpack_from(">b", blob, at)[0] > VERSION:
            raise _Unanswered
        head_raw, pos = _key_at(codec, blob, at + 1, end)
        if pos + _TAIL.size > end:
            raise _Unanswered
        code, koff, size, a, b = _TAIL.unpack_from(blob, pos)
        if koff < 0 or size < 0 or a < 0 or b < 0:
            raise _Unanswered
        if codec.fmt is not None and (b != codec.width or a != size * b):
            raise _Unanswered
        if codec.fmt is None and a != 4 * size:
            raise _Unanswered
        chunk = self._chunks[index] = (codec.order(head_raw), code, koff, size, (a, b))
        return chunk

    def _keys(self, index: int, chunk: tuple) -> tuple[int, int]:
        """Where chunk ``index``'s keys lie in the blob and how many bytes they take (read once)."""
        a, b = chunk[4]
        total = a + (b if self.codec.fmt is None else 0)
        where = self.keys_base + chunk[2]
        if where + total > len(self.blob):
            raise _Unanswered
        if index not in self._loaded:
            self._loaded.add(index)
            self.used += total
        return where, total

    def _raw_at(self, where: int, chunk: tuple, i: int) -> Any:
        codec, blob = self.codec, self.blob
        packer = codec.packer
        if packer is not None:
            return packer.unpack_from(blob, where + i * packer.size)[0]
        a, b = chunk[4]
        off = _I32.unpack_from(blob, where + 4 * i)[0]
        if not 0 <= off < b:
            raise _Unanswered
        start = a + off
        total = a + b
        length = _I32.unpack_from(blob, where + start)[0] if start + 4 <= total else -1
        if length < 0 or start + 4 + length > total:
            raise _Unanswered
        return blob[where + start + 4:where + start + 4 + length]

    def find(self, key: Any) -> int:
        """``ChunkedDictionary.find``: the key's code, or a negative number when it is absent."""
        low, high = 0, self.size - 1
        while low <= high:
            mid = (low + high) >> 1
            v = self._chunk(mid)[0]
            if v > key:
                high = mid - 1
            elif v < key:
                low = mid + 1
            else:
                return self._chunk(mid)[1]
        if low == 0:
            return -1
        index = low - 1
        chunk = self._chunk(index)
        if chunk[3] == 0:
            return -(chunk[1] + 2)
        where, _total = self._keys(index, chunk)
        order = self.codec.order
        lo, hi = 0, chunk[3] - 1
        while lo <= hi:
            mid = (lo + hi) >> 1
            k = order(self._raw_at(where, chunk, mid))
            if k > key:
                hi = mid - 1
            elif k < key:
                lo = mid + 1
            else:
                return chunk[1] + 1 + mid
        return -(chunk[1] + 1 + lo + 1)
