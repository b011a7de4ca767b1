"""Point lookups straight on a bitmap index's bytes: the head parsed with ``struct`` and the key
found by its serialized bytes, without a reader, cursor or meta object per blob.

What explain's index stage asks of 50,000 blobs of one column: :class:`BitmapLookup` holds what
is the same for all of them (the key codec, the literals' keys, their encodings and sort keys),
:func:`parse_head` and :meth:`BitmapLookup.rows` work on one blob held in memory; a lookup also
remembers the few V2 head and index block layouts its blobs share (one writer's files differ in
row counts and bitmaps, not in those), so each is parsed once, not once per file. They accept
exactly what :class:`~indexcore.formats.bitmap.reader.BitmapReader` accepts and answer the same
rows; anything they do not expect (a version, bound, count or length off, string keys of a head listed
twice, a bitmap that does not deserialize) answers None, and the caller reads that blob through ``BitmapReader``, which names
the fault. Bytes are counted as the reader counts them on bytes in memory: the head, each index
block and each bitmap it reads, once per blob.
"""

from __future__ import annotations

import bisect
import struct
from typing import Any, NamedTuple

from pyroaring import BitMap

from indexcore.errors import IndexCoreError
from indexcore.formats import roaring
from indexcore.formats.bitmap.keys import INT32, TWO_INT32, KeyCodec
from indexcore.formats.bitmap.meta import (
    VERSION_1,
    VERSION_2,
    NegativeLength,
    locate_entry,
    v1_length,
    v1_offset,
    walk_strings,
)

_FIXED_HEAD = struct.Struct(">BiiB")  # version, row count, non-null bitmap count, has null
HEADS_KEPT = 8  # V2 head layouts a lookup remembers (the last parsed)
WALKS_KEPT = 64  # index block layouts of string keys a lookup remembers (the first seen)


class Head(NamedTuple):
    """A bitmap blob's head as the lookups need it (offsets within the blob)."""

    version: int
    row_count: int
    has_null: bool
    null_offset: int
    null_length: int
    body_start: int
    head_size: int  # bytes the reader reads for the head (to the index blocks / the body)
    index_block_start: int  # V2: where the index blocks begin
    firsts: tuple  # V2: each index block's first key's sort key
    blocks: tuple  # V2: each index block's (offset from index_block_start, size)
    dictionary: bytes  # V1: the (key, offset) entries
    starts: Any  # V1: where each entry starts within ``dictionary``


def parse_head(blob: bytes, codec: KeyCodec) -> Head | None:
    """The head of the bitmap index ``blob`` (a whole blob), or None where ``read_meta`` would not
    read it as it is (it then says why)."""
    n = len(blob)
    if n < 10:
        return None
    version, row_count, number, has_null = _FIXED_HEAD.unpack_from(blob)
    if version not in (VERSION_1, VERSION_2) or row_count < 0 or number < 0 or number > row_count:
        return None
    has_null = has_null != 0
    pos = 10
    null_offset, null_length = 0, -1
    string = codec.kind == "string"
    if version == VERSION_1:
        if has_null:
            if pos + 4 > n:
                return None
            null_offset = INT32.unpack_from(blob, pos)[0]
            pos += 4
        if pos + number * (codec.min_size + 4) > n:
            return None
        if string:
            starts: Any = []
            try:
                rel = walk_strings(blob, pos, number, 8, starts) - pos
            except NegativeLength:
                return None
            if len(starts) < number or not _distinct(blob, starts):
                return None  # the reader reads past repeated keys' lower bound: its bytes differ
            starts = [s - pos for s in starts]
        else:
            item = codec.struct.size + 4
            rel = number * item
            starts = range(0, rel, item)
        dictionary = blob[pos:pos + rel]
        body_start = pos + rel
        if has_null and null_offset >= 0:
            null_length = v1_length(codec, dictionary, starts, 0, null_offset, n - body_start)
        head = Head(VERSION_1, row_count, has_null, null_offset, null_length, body_start, body_start, body_start,
                    (), (), dictionary, starts)
    else:
        if has_null:
            if pos + 8 > n:
                return None
            null_offset, null_length = TWO_INT32.unpack_from(blob, pos)
            pos += 8
            if null_offset >= 0 and null_length < 0:
                return None
        if pos + 4 > n:
            return None
        block_count = INT32.unpack_from(blob, pos)[0]
        pos += 4
        if block_count < 0 or pos + block_count * (codec.min_size + 4) + 4 > n:
            return None
        firsts: list[tuple] = []
        try:
            pos = codec.scan(blob, pos, block_count, 1, firsts)
        except ValueError:
            return None
        if len(firsts) < block_count or pos + 4 > n or (string and len({k for k, _ in firsts}) < block_count):
            return None
        body_offset = INT32.unpack_from(blob, pos)[0]
        index_block_start = pos + 4
        if body_offset < 0 or index_block_start + body_offset > n:
            return None
        blocks = []
        for i, (_key, off) in enumerate(firsts):
            end = firsts[i + 1][1] if i + 1 < block_count else body_offset
            if off < 0 or end < off or end > body_offset:
                return None
            blocks.append((off, end - off))
        sort_key = codec.sort_key
        head = Head(VERSION_2, row_count, has_null, null_offset, null_length, index_block_start + body_offset,
                    index_block_start, index_block_start, tuple(sort_key(k) for k, _ in firsts), tuple(blocks),
                    b"", ())
    if has_null and null_offset < 0 and -1 - null_offset >= max(row_count, 1):
        return None
    return head


def _distinct(blob: bytes, starts: list[int]) -> bool:
    """Whether the string keys at ``starts`` are distinct (as Paimon writes them): the reader's
    reads rest on it, each bounded by the fewest bytes distinct keys can take."""
    length = INT32.unpack_from
    return len({blob[s + 4:s + 4 + length(blob, s)[0]] for s in starts}) == len(starts)


class BitmapLookup:
    """The rows of some keys (None: the null rows) in bitmap blobs of one column type: the codec and
    the keys' encodings made once for every blob of the column (boolean keys are not handled)."""

    def __init__(self, codec: KeyCodec, values: list[Any]):
        if codec.kind == "boolean":
            raise ValueError("boolean bitmap keys are looked up through the reader")
        self.codec = codec
        keys = list(dict.fromkeys(None if v is None else codec.key(v) for v in values))  # each key read once
        self.keys = [(None, None, None) if k is None else (k, codec.encode(k), codec.sort_key(k)) for k in keys]
        #: the last V2 heads parsed (up to :data:`HEADS_KEPT`), each with its bytes after the row count
        self._heads: list[tuple[bytes, Head]] = []
        #: V2 string keys, by index block position, entry count and block size (up to
        #: :data:`WALKS_KEPT`): the last walk's entry starts and end, and (made once a second block of
        #: that count and size comes) a ``struct`` of its key lengths at their places and the
        #: lengths. A block whose lengths read at those places are the same is walked the same way
        #: (each length places the next); a layout that changes file to file costs a tuple per
        #: block, not a ``struct``.
        self._walked: dict[tuple[int, int, int], tuple] = {}

    def head(self, blob: bytes) -> tuple[Head, int] | None:
        """``(head, row count)`` of one whole blob, or None as :func:`parse_head`.

        The blobs of one writer's files share a V2 head but for its row count (the index blocks'
        first keys and where the body begins), so a head whose bytes from the non-null bitmap
        count to the index blocks equal the last one parsed is that head: only the checks that
        read the row count or the blob's size are made again (the row count is returned apart, the
        head's own is the first blob's). A column's files have a few such heads (which keys the
        first index block starts with, how many keys): the last :data:`HEADS_KEPT` are tried."""
        for same, head in self._heads:
            if blob[5:head.index_block_start] == same and blob[0] == VERSION_2:  # equal: the blob is that long
                row_count = INT32.unpack_from(blob, 1)[0]
                # the bitmap count as parsed is >= 0, so no bigger than the row count means that is >= 0 too
                if head.body_start <= len(blob) and INT32.unpack_from(blob, 5)[0] <= row_count \
                        and not (head.has_null and head.null_offset < 0 and -1 - head.null_offset >= max(row_count, 1)):
                    return head, row_count
        head = parse_head(blob, self.codec)
        if head is None:
            return None
        if head.version == VERSION_2:
            if len(self._heads) == HEADS_KEPT:
                del self._heads[0]
            self._heads.append((blob[5:head.index_block_start], head))
        return head, head.row_count

    def rows(self, blob: bytes, name: str) -> tuple[int, BitMap, int] | None:
        """``(row count, rows of any of the keys, bytes read)`` of one whole blob, or None where the
        reader would fail (or might: it then answers, and says why)."""
        codec = self.codec
        got = self.head(blob)
        if got is None:
            return None
        head, row_count = got
        n = len(blob)
        used = head.head_size
        out = BitMap()
        blocks: dict[int, tuple[bytes, Any]] = {}
        for key, encoded, sk in self.keys:
            if key is None:
                if not head.has_null:
                    continue
                offset, length = head.null_offset, head.null_length
            elif head.version == VERSION_1:
                j = locate_entry(head.dictionary, encoded, head.starts, 0, last=True)
                if j < 0:
                    continue
                offset = v1_offset(codec, head.dictionary, head.starts[j])
                length = v1_length(codec, head.dictionary, head.starts, j + 1, offset, n - head.body_start)
            else:
                i = bisect.bisect_right(head.firsts, sk) - 1
                if i < 0:
                    continue
                got = blocks.get(i)
                if got is None:
                    got = self._block(blob, head, i)
                    if got is None:
                        return None
                    blocks[i] = got
                    used += head.blocks[i][1]
                data, starts = got
                j = locate_entry(data, encoded, starts, 4, last=False)
                if j < 0:
                    continue
                offset, length = TWO_INT32.unpack_from(data, starts[j] + len(encoded))
            if offset < 0:
                row = -1 - offset
                if row >= row_count:
                    return None
                out.add(row)
                continue
            at = head.body_start + offset
            if length < 0:
                length = n - at
            if length < 0 or at + length > n:
                return None
            try:
                found = roaring.deserialize(blob[at:at + length], name, "bitmap", at)
            except IndexCoreError:
                return None
            if out:
                out |= found
            else:
                out = found  # the first key's rows as they are (one bitmap per blob, not a copy)
            used += length
        return row_count, out, used

    def _block(self, blob: bytes, head: Head, i: int) -> tuple[bytes, Any] | None:
        """A V2 index block's bytes and where its entries start, or None where the reader fails."""
        off, size = head.blocks[i]
        at = head.index_block_start + off
        data = blob[at:at + size]
        count = INT32.unpack_from(data)[0] if size >= 4 else None
        if count is None or count < 0 or 4 + count * (self.codec.min_size + 8) > size:
            return None
        if self.codec.kind == "string":
            layout = (i, count, size)
            walked = self._walked.get(layout)
            if walked is not None:
                starts, end, lengths_at, lengths = walked
                if lengths_at is None:  # a second block of that count and size: worth a struct
                    lengths = tuple(b - a - 12 for a, b in zip(starts, [*starts[1:], end], strict=True))
                    lengths_at = struct.Struct(">" + "".join(f"i{n}x8x" for n in lengths))
                    self._walked[layout] = (starts, end, lengths_at, lengths)
                try:
                    if lengths_at.unpack_from(data, 4) == lengths:
                        return data, starts
                except struct.error:
                    pass  # shorter than that walk: walked below
            starts = []
            try:
                end = walk_strings(data, 4, count, 12, starts)
            except NegativeLength:
                return None
            if len(starts) < count:
                return None
            if layout in self._walked or len(self._walked) < WALKS_KEPT:
                self._walked[layout] = (starts, end, None, None)
            return data, starts
        item = self.codec.struct.size + 8
        return data, range(4, 4 + count * item, item)
