"""The bitmap global index: per distinct value, a 64-bit roaring bitmap of the row ids holding it.

Layout as Paimon's streaming writer writes it (older writers put the null and non-null
bitmaps first; the footer's offsets make both readable)::

    (value bitmap ... dictionary block)+ | null-rows bitmap | non-null-rows bitmap |
    index block | footer

Bitmaps are portable 64-bit roaring bitmaps without a trailer. A dictionary block (with the
5-byte compression/CRC trailer of :mod:`.global_index`) is ``var(n)`` then per value
``var(len key) key var(bitmap offset) var(bitmap length)``; the index block lists per
dictionary block ``var(len first key) first key var(offset) var(length)``. The 48-byte footer
is big-endian: null rows (offset 8, length 4), non-null rows (8, 4), index block (8, 4), value
count (4), version (4) and the magic ``0x42474958`` (``BGIX``).
"""

from __future__ import annotations

import bisect
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import Any, NamedTuple

import numpy as np
from pyroaring import BitMap64

from indexcore.errors import CorruptFileError, UnsupportedError
from indexcore.expr import Leaf
from indexcore.formats import global_index as gi
from indexcore.formats.btree_block import keys_in_order
from indexcore.io import ByteSource
from indexcore.types import DataType

MAGIC = 0x42474958
MAGIC_BYTES = MAGIC.to_bytes(4, "big")
VERSION = 1
DEFAULT_DICTIONARY_BLOCK_SIZE = 16 * 1024
_FOOTER = struct.Struct(">qiqiqiiii")  # the whole footer, magic and version included
FOOTER_LENGTH = _FOOTER.size


@dataclass(frozen=True)
class BitmapFooter:
    null_offset: int
    null_length: int
    non_null_offset: int
    non_null_length: int
    index_offset: int
    index_length: int
    value_count: int
    version: int


class DictionaryBlock(NamedTuple):
    """One dictionary block walked: its bytes, where each entry starts, each value bitmap's offset
    and length, whether its keys are in order, and its offset in the file (for errors)."""

    data: bytes
    starts: list[int]
    offsets: list[int]
    lengths: list[int]
    ordered: bool
    offset: int


def looks_like_bitmap_global(tail: bytes) -> bool:
    """Whether the last 8 bytes of a file are a bitmap global index footer's version and magic."""
    return len(tail) >= 8 and tail[-4:] == MAGIC_BYTES and int.from_bytes(tail[-8:-4], "big") == VERSION


def read_bitmap_footer(source: ByteSource) -> BitmapFooter:
    if source.size < FOOTER_LENGTH:
        raise CorruptFileError(f"{source.size} bytes cannot hold the {FOOTER_LENGTH}-byte footer", file=source.name,
                               structure="bitmap global index footer", offset=0)
    at = source.size - FOOTER_LENGTH
    *fields, magic = _FOOTER.unpack(source.read(at, FOOTER_LENGTH, "bitmap global index footer"))
    if magic != MAGIC:
        raise CorruptFileError(f"bad magic {magic:#x} (expected {MAGIC:#x}): not a bitmap global index",
                               file=source.name, structure="bitmap global index footer", offset=at + 44)
    footer = BitmapFooter(*fields)
    if footer.version != VERSION:
        raise UnsupportedError(f"bitmap global index version {footer.version} is not decoded", file=source.name,
                               structure="bitmap global index footer", offset=at + 40)
    gi.check_regions(source.name, at, "bitmap global index footer", [
        ("null rows", footer.null_offset, footer.null_length),
        ("non-null rows", footer.non_null_offset, footer.non_null_length),
        ("index block", footer.index_offset, footer.index_length + gi.TRAILER_LENGTH)])
    if footer.value_count < 0:
        raise CorruptFileError(f"negative value count {footer.value_count}", file=source.name,
                               structure="bitmap global index footer", offset=at + 36)
    return footer


class BitmapGlobalIndexReader:
    """Reads one bitmap global index file; answers predicate leaves with row-id bitmaps."""

    index_type = "bitmap"

    def __init__(self, source: ByteSource, dtype: DataType, meta: gi.SortedIndexFileMeta | None = None):
        self.source = source
        self.dtype = dtype
        self.meta = meta
        self.codec = gi.key_codec(dtype)
        self.footer = read_bitmap_footer(source)
        self._walked: dict[int, DictionaryBlock] = {}

    def _bitmap(self, offset: int, length: int, what: str) -> BitMap64:
        return gi.read_bitmap64(self.source.read(offset, length, what), self.source.name, offset)

    def _block(self, offset: int, length: int, what: str) -> bytes:
        return gi.open_block(self.source.read(offset, length + gi.TRAILER_LENGTH, what), self.source.name, what, offset)

    @cached_property
    def null_rows(self) -> BitMap64:
        return self._bitmap(self.footer.null_offset, self.footer.null_length, "null rows bitmap")

    @cached_property
    def non_null_rows(self) -> BitMap64:
        return self._bitmap(self.footer.non_null_offset, self.footer.non_null_length, "non-null rows bitmap")

    @cached_property
    def blocks(self) -> list[tuple[Any, int, int]]:
        """``(first key's order, offset, length)`` per dictionary block, from the index block."""
        name = self.source.name
        index = self._block(self.footer.index_offset, self.footer.index_length, "bitmap index block")
        n, pos = gi.read_var(index, 0, name, "bitmap index block")
        out = []
        for _ in range(n):
            klen, pos = gi.read_var(index, pos, name, "bitmap index block")
            key = index[pos:pos + klen]
            pos += klen
            off, pos = gi.read_var(index, pos, name, "bitmap index block")
            length, pos = gi.read_var(index, pos, name, "bitmap index block")
            out.append((self.codec.order(gi.decode_key(self.codec, key, name, "bitmap index block",
                                                       self.footer.index_offset)), off, length))
        return out

    def _walk(self, i: int) -> DictionaryBlock:
        """Dictionary block ``i`` read and walked once (the block has no entry positions): where each
        entry starts, its bitmap's offset and length, and whether its keys are in order (checked on
        the key bytes); keys are decoded only when compared or listed."""
        walked = self._walked.get(i)
        if walked is not None:
            return walked
        name, structure = self.source.name, "bitmap dictionary block"
        _, off, length = self.blocks[i]
        block = self._block(off, length, structure)
        read_var = gi.read_var
        m, pos = read_var(block, 0, name, structure, off)
        starts, offsets, lengths = [], [], []
        limit = self.footer.index_offset
        try:
            for _ in range(m):
                starts.append(pos)
                klen = block[pos]  # one-byte var ints inline: the walk is most of a lookup
                pos = pos + 1 + klen if klen < 0x80 else sum(read_var(block, pos, name, structure, off))
                b = block[pos]
                boff, pos = (b, pos + 1) if b < 0x80 else read_var(block, pos, name, structure, off)
                b = block[pos]
                blen, pos = (b, pos + 1) if b < 0x80 else read_var(block, pos, name, structure, off)
                if boff + blen > limit:
                    raise CorruptFileError(f"value bitmap at {boff} (+{blen}) runs past the dictionary", file=name,
                                           structure=structure, offset=off)
                offsets.append(boff)
                lengths.append(blen)
        except IndexError:
            raise CorruptFileError(f"entry {len(offsets)} of {m} runs past the block", file=name, structure=structure,
                                   offset=off + starts[-1]) from None
        edges = np.array([*starts, pos], np.int64)
        ordered = keys_in_order(block, edges, self.dtype, self.codec)
        walked = self._walked[i] = DictionaryBlock(block, starts, offsets, lengths, ordered, off)
        return walked

    def _key(self, blk: DictionaryBlock, j: int) -> Any:
        pos = blk.starts[j]
        klen, pos = gi.read_var(blk.data, pos, self.source.name, "bitmap dictionary block", blk.offset)
        return gi.decode_key(self.codec, blk.data[pos:pos + klen], self.source.name, "bitmap dictionary block",
                             blk.offset + pos)

    def _entries(self, i: int) -> list[tuple[Any, Any, int, int]]:
        """``(order, value, bitmap offset, bitmap length)`` per entry of dictionary block ``i``."""
        blk = self._walk(i)
        order = self.codec.order
        return [(order(v), v, o, n) for v, o, n in zip((self._key(blk, j) for j in range(len(blk.starts))),
                                                       blk.offsets, blk.lengths, strict=True)]

    @cached_property
    def sorted(self) -> bool:
        """Whether the index block lists its dictionary blocks in key order (then a lookup reads only
        the block that may hold a key); the keys inside a block are checked as it is read."""
        firsts = [b[0] for b in self.blocks]
        return all(a <= b for a, b in zip(firsts, firsts[1:], strict=False))

    @cached_property
    def dictionary(self) -> list[tuple[Any, int, int]]:
        """``(value, bitmap offset, bitmap length)`` per distinct value, as the dictionary lists them."""
        out = [(value, boff, blen) for i in range(len(self.blocks)) for _, value, boff, blen in self._entries(i)]
        if len(out) != self.footer.value_count:
            raise CorruptFileError(f"footer says {self.footer.value_count} values, dictionary holds {len(out)}",
                                   file=self.source.name, structure="bitmap dictionary",
                                   offset=self.footer.index_offset)
        return out

    def _range(self, lo: Any = None, hi: Any = None, lo_inc: bool = True, hi_inc: bool = True) -> BitMap64 | None:
        """Rows of the values between the orders ``lo`` and ``hi`` (None = open end), reading only
        the dictionary blocks that may hold them and bisecting inside (decoding only the keys it
        compares); None when the dictionary is not in order (the caller then tests every value)."""
        if not self.sorted:
            return None
        blocks = self.blocks
        firsts = [b[0] for b in blocks]
        start = 0 if lo is None else max(bisect.bisect_right(firsts, lo) - 1, 0)
        order = self.codec.order
        spans = []
        for i in range(start, len(blocks)):
            if hi is not None and firsts[i] > hi:
                break
            blk = self._walk(i)
            if not blk.ordered:
                return None
            n = len(blk.starts)
            key = lambda j, blk=blk: order(self._key(blk, j))  # noqa: E731 - bisect's key
            a = 0 if lo is None else (bisect.bisect_left if lo_inc else bisect.bisect_right)(range(n), lo, key=key)
            b = n if hi is None else (bisect.bisect_right if hi_inc else bisect.bisect_left)(range(n), hi, key=key)
            spans.extend(zip(blk.offsets[a:b], blk.lengths[a:b], strict=True))
        return self._union(spans)

    def _union(self, spans: list[tuple[int, int]]) -> BitMap64:
        """The union of the value bitmaps at ``(offset, length)``: bitmaps of neighbouring values lie
        side by side, so their whole byte range is read at once."""
        if not spans:
            return BitMap64()
        if len(spans) == 1:
            return self._bitmap(*spans[0], "value bitmap")
        lo, hi = min(o for o, _ in spans), max(o + n for o, n in spans)
        data = memoryview(self.source.read(lo, hi - lo, "value bitmaps"))
        name = self.source.name
        return BitMap64.union(*(gi.read_bitmap64(data[o - lo:o - lo + n], name, o) for o, n in spans))

    def rows_of(self, value: Any) -> BitMap64:
        o = self.codec.order(value)
        found = self._range(o, o)
        if found is not None:
            return found
        for key, off, length in self.dictionary:
            if self.codec.order(key) == o:
                return self._bitmap(off, length, "value bitmap")
        return BitMap64()

    def _where(self, keep) -> BitMap64:
        return self._union([(off, length) for key, off, length in self.dictionary if keep(self.codec.order(key))])

    def visit(self, leaf: Leaf) -> BitMap64 | None:
        """Rows that may match one leaf; None when a bitmap index cannot answer it."""
        op, lits = leaf.function.name, leaf.literals
        if op == "isNull":
            return BitMap64(self.null_rows)
        if op == "isNotNull":
            return BitMap64(self.non_null_rows)
        if any(v is None for v in lits):
            return None
        o = [self.codec.order(v) for v in lits]
        bounds = {"equal": (o[0], o[0], True, True), "lessThan": (None, o[0], True, False),
                  "lessOrEqual": (None, o[0], True, True), "greaterThan": (o[0], None, False, True),
                  "greaterOrEqual": (o[0], None, True, True), "between": (o[0], o[-1], True, True)}
        if op in bounds:
            found = self._range(*bounds[op])
            if found is not None:
                return found
        elif op == "in" and self.sorted:
            return BitMap64.union(BitMap64(), *(self.rows_of(v) for v in lits))
        tests = {
            "equal": lambda k: k == o[0], "notEqual": lambda k: k != o[0], "in": lambda k: k in o,
            "notIn": lambda k: k not in o, "lessThan": lambda k: k < o[0], "lessOrEqual": lambda k: k <= o[0],
            "greaterThan": lambda k: k > o[0], "greaterOrEqual": lambda k: k >= o[0],
            "between": lambda k: o[0] <= k <= o[-1],
        }
        return self._where(tests[op]) if op in tests else None

    def cardinalities(self) -> list[tuple[Any, int]]:
        """``(value, row count)`` per distinct value, in value order."""
        rows = [(k, len(self._bitmap(off, n, "value bitmap"))) for k, off, n in self.dictionary]
        return sorted(rows, key=lambda r: self.codec.order(r[0]))

    def summary(self) -> dict:
        values = [k for k, _, _ in self.dictionary]
        ordered = sorted(values, key=self.codec.order)
        return {"index_type": self.index_type, "version": self.footer.version, "distinct_values": len(values),
                "non_null_rows": len(self.non_null_rows), "null_rows": len(self.null_rows),
                "first_key": ordered[0] if ordered else None, "last_key": ordered[-1] if ordered else None,
                "file_size": self.source.size}


def write_bitmap_global_index(dtype: DataType, rows: Iterable[tuple[Any, int]],
                              dictionary_block_size: int = DEFAULT_DICTIONARY_BLOCK_SIZE,
                              compression: str = "none") -> tuple[bytes, gi.SortedIndexFileMeta]:
    """A bitmap global index file over ``(value, row id)`` pairs, and its manifest meta.

    Values go in key order, as Paimon's sorted (streaming) writer lays them out."""
    codec = gi.key_codec(dtype)
    nulls, non_nulls, by_key = BitMap64(), BitMap64(), {}
    first = last = None
    for value, rid in rows:
        if value is None:
            nulls.add(rid)
            continue
        non_nulls.add(rid)
        by_key.setdefault(codec.encode(value), BitMap64()).add(rid)
        if first is None or codec.order(value) < codec.order(first):
            first = value
        if last is None or codec.order(value) > codec.order(last):
            last = value
    out = bytearray()

    def put_bitmap(bm: BitMap64) -> tuple[int, int]:
        bm.run_optimize()
        data = bm.serialize()
        out.extend(data)
        return len(out) - len(data), len(data)

    def put_block(data: bytes) -> tuple[int, int]:
        closed = gi.close_block(data, compression)
        out.extend(closed)
        return len(out) - len(closed), len(closed) - gi.TRAILER_LENGTH

    blocks: list[tuple[bytes, int, int]] = []
    entries: list[bytes] = []
    first_key = b""
    for key in sorted(by_key, key=lambda k: codec.order(codec.decode(k))):
        off, n = put_bitmap(by_key[key])
        entry = gi.write_var(len(key)) + key + gi.write_var(off) + gi.write_var(n)
        if entries and len(gi.write_var(len(entries) + 1)) + sum(map(len, entries)) + len(entry) > dictionary_block_size:
            blocks.append((first_key, *put_block(gi.write_var(len(entries)) + b"".join(entries))))
            entries = []
        if not entries:
            first_key = key
        entries.append(entry)
    if entries:
        blocks.append((first_key, *put_block(gi.write_var(len(entries)) + b"".join(entries))))
    null_block, non_null_block = put_bitmap(nulls), put_bitmap(non_nulls)
    index = gi.write_var(len(blocks)) + b"".join(gi.write_var(len(k)) + k + gi.write_var(o) + gi.write_var(n) for k, o, n in blocks)
    index_off, index_len = put_block(index)
    out += _FOOTER.pack(*null_block, *non_null_block, index_off, index_len, len(by_key), VERSION, MAGIC)
    meta = gi.SortedIndexFileMeta(None if first is None else codec.encode(first),
                               None if last is None else codec.encode(last), bool(nulls))
    return bytes(out), meta
