"""The BTree global index: an SST file mapping each distinct key to the row ids holding it.

Layout as Paimon writes it (all little-endian)::

    data block | data block | ... | null bitmap + CRC32 | [bloom filter] | index block | footer

A block is ``entries | trailer-of-block``: each entry ``var(len key) key var(len value) value``,
then either ``record size (4) | 0`` (ALIGNED: every entry has the same size) or
``position (4) x n | n (4) | 1`` (UNALIGNED), and the 5-byte compression/CRC trailer
(:mod:`.global_index`). A data entry's value is ``var(count) var(row id) x count``; an index
entry maps a data block's *last* key to ``var(offset) var(size)``. The 52-byte footer holds the
bloom filter handle (offset 8, size 4, expected entries 8), the index block handle (8, 4), the
null bitmap handle (8, 4), the version (4) and the magic ``0x50425449`` (bytes ``ITBP``).

A lookup reads the index block once per reader, then per data block it needs: the entry
starts (the position table, or the aligned record size), a binary search over them decoding
only the keys it compares, and the row ids of every matching entry in one numpy pass; the
result bitmap is built from that array (:func:`.roaring.bitmap64_from_array`).
"""

from __future__ import annotations

import bisect
import struct
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
from pyroaring import BitMap64

from indexcore.errors import CorruptFileError, UnsupportedError
from indexcore.expr import Leaf
from indexcore.formats.btree_block import (
    ALIGNED,
    UNALIGNED,
    DataBlock,
    block_keys_and_counts,
    block_row_ids,
    entry_starts,
    keys_in_order,
    parse_block,
)
from indexcore.formats.global_index import (
    COMPRESSION_NAMES,
    TRAILER_LENGTH,
    SortedIndexFileMeta,
    check_regions,
    close_block,
    decode_key,
    key_codec,
    open_block,
    read_bitmap64,
    read_var,
    write_var,
)
from indexcore.formats.roaring import bitmap64_from_array
from indexcore.io import ByteSource
from indexcore.types import DataType

MAGIC = 0x50425449
MAGIC_BYTES = MAGIC.to_bytes(4, "little")
VERSION = 1
FOOTER_LENGTH = 52
DEFAULT_BLOCK_SIZE = 64 * 1024
_FOOTER = struct.Struct("<QIQQIQI")


@dataclass(frozen=True)
class BTreeFooter:
    bloom_offset: int
    bloom_size: int
    bloom_expected_entries: int
    index_offset: int
    index_size: int
    null_offset: int
    null_size: int
    version: int

    @property
    def has_bloom_filter(self) -> bool:
        return bool(self.bloom_offset or self.bloom_size or self.bloom_expected_entries)

    @property
    def has_nulls(self) -> bool:
        return bool(self.null_offset or self.null_size)


def looks_like_btree(tail: bytes) -> bool:
    """Whether the last 8 bytes of a file are a BTree footer's version and magic."""
    return len(tail) >= 8 and tail[-4:] == MAGIC_BYTES and int.from_bytes(tail[-8:-4], "little") == VERSION


def decode_row_ids(value: bytes, name: str = "<memory>", offset: int = 0) -> list[int]:
    count, pos = read_var(value, 0, name, "btree row ids", offset)
    ids = []
    for _ in range(count):
        rid, pos = read_var(value, pos, name, "btree row ids", offset)
        ids.append(rid)
    return ids


def encode_row_ids(row_ids: list[int]) -> bytes:
    return write_var(len(row_ids)) + b"".join(write_var(r) for r in row_ids)


class BTreeIndexReader:
    """Reads one BTree global index file; answers predicate leaves with row-id bitmaps.

    Row ids are local to the row range the index manifest gives the file. A leaf the BTree
    cannot answer (``LIKE``, ``startsWith`` ...) gives ``None``: every row may match.
    """

    index_type = "btree"

    def __init__(self, source: ByteSource, dtype: DataType, meta: SortedIndexFileMeta | None = None):
        self.source = source
        self.dtype = dtype
        self.meta = meta
        self.codec = key_codec(dtype)
        self.footer = read_btree_footer(source)
        raw = source.read(self.footer.index_offset, self.footer.index_size + TRAILER_LENGTH, "btree index block")
        self.index_compression = COMPRESSION_NAMES.get(raw[-TRAILER_LENGTH], str(raw[-TRAILER_LENGTH]))
        block = open_block(raw, source.name, "btree index block", self.footer.index_offset)
        self._handles: list[tuple[int, int]] = []
        last_keys = []
        for key, value in parse_block(block, source.name, "btree index block", self.footer.index_offset):
            off, pos = read_var(value, 0, source.name, "btree block handle")
            size, _ = read_var(value, pos, source.name, "btree block handle")
            if off + size + TRAILER_LENGTH > self.footer.index_offset:
                raise CorruptFileError(f"data block at {off} (+{size}) runs past the index block", file=source.name,
                                       structure="btree block handle", offset=self.footer.index_offset)
            self._handles.append((off, size))
            last_keys.append(self.codec.order(decode_key(self.codec, key, source.name, "btree index block",
                                                         self.footer.index_offset)))
        self._last_orders = last_keys
        self._blocks: dict[int, DataBlock] = {}

    @property
    def block_count(self) -> int:
        return len(self._handles)

    def data_block(self, i: int) -> DataBlock:
        """Data block ``i`` uncompressed, CRC checked, with its entry starts (read once, then kept)."""
        blk = self._blocks.get(i)
        if blk is None:
            off, size = self._handles[i]
            name, structure = self.source.name, "btree data block"
            data = open_block(self.source.read(off, size + TRAILER_LENGTH, structure), name, structure, off)
            starts = entry_starts(data, name, structure, off)
            ordered = keys_in_order(data, starts, self.dtype, self.codec)
            blk = self._blocks[i] = DataBlock(data, starts, off, ordered)
        return blk

    def block(self, i: int) -> list[tuple[Any, bytes]]:
        """The ``(key, encoded row ids)`` entries of data block ``i``.

        Row ids stay encoded until a lookup needs them (:func:`decode_row_ids`)."""
        blk = self.data_block(i)
        name, codec = self.source.name, self.codec
        return [(decode_key(codec, k, name, "btree data block", blk.offset), v)
                for k, v in parse_block(blk.data, name, "btree data block", blk.offset)]

    def entries(self) -> Iterator[tuple[Any, list[int]]]:
        """Every ``(key, row ids)`` in file order."""
        for i in range(self.block_count):
            off = self._handles[i][0]
            for key, value in self.block(i):
                yield key, decode_row_ids(value, self.source.name, off)

    def _decode(self, raw: bytes, blk: DataBlock) -> Any:
        return decode_key(self.codec, raw, self.source.name, "btree data block", blk.offset)

    def _key_order(self, blk: DataBlock, i: int) -> Any:
        """The order of entry ``i``'s key (only the keys a binary search compares are decoded)."""
        data, pos = blk.data, int(blk.starts[i])
        n, pos = read_var(data, pos, self.source.name, "btree data block", blk.offset)
        if pos + n > blk.starts[i + 1]:
            raise CorruptFileError(f"key of entry {i} runs past the entry", file=self.source.name,
                                   structure="btree data block", offset=blk.offset + pos)
        return self.codec.order(decode_key(self.codec, data[pos:pos + n], self.source.name, "btree data block",
                                           blk.offset + pos))

    def _bound(self, blk: DataBlock, target: Any, after: bool) -> int:
        """The first entry whose key is > ``target`` (``after``) or >= it, by binary search."""
        find = bisect.bisect_right if after else bisect.bisect_left
        return find(range(blk.size), target, key=lambda i: self._key_order(blk, i))

    @cached_property
    def null_rows(self) -> BitMap64:
        if not self.footer.has_nulls:
            return BitMap64()
        off, size = self.footer.null_offset, self.footer.null_size
        raw = self.source.read(off, size + 4, "btree null bitmap")
        crc = int.from_bytes(raw[size:], "little")
        if zlib.crc32(raw[:size]) & 0xFFFFFFFF != crc:
            raise CorruptFileError("null bitmap CRC mismatch", file=self.source.name, structure="btree null bitmap",
                                   offset=off + size)
        return read_bitmap64(raw[:size], self.source.name, off)

    # -- lookups ------------------------------------------------------------------------

    def row_ids(self, lo: Any = None, hi: Any = None, lo_inc: bool = True, hi_inc: bool = True) -> np.ndarray:
        """Row ids of keys between ``lo`` and ``hi`` (None = open end), as an array.

        The index block's last keys pick the data blocks; a binary search bounds the entries in
        the first and last of them; blocks in between are taken whole."""
        order = self.codec.order
        lo_o = None if lo is None else order(lo)
        hi_o = None if hi is None else order(hi)
        parts = []
        start = 0 if lo_o is None else bisect.bisect_left(self._last_orders, lo_o)
        for i in range(start, self.block_count):
            blk = self.data_block(i)
            last = self._last_orders[i]
            if not blk.ordered:
                parts.append(self._scan_unordered(blk, lo_o, hi_o, lo_inc, hi_inc))
            else:
                a = 0 if lo_o is None else self._bound(blk, lo_o, not lo_inc)
                whole = hi_o is None or last < hi_o or (last == hi_o and hi_inc)
                b = blk.size if whole else self._bound(blk, hi_o, hi_inc)
                parts.append(block_row_ids(blk, a, b, self.source.name))
            if hi_o is not None and last > hi_o:
                break
        return np.concatenate(parts) if len(parts) > 1 else parts[0] if parts else np.empty(0, np.uint64)

    def _scan_unordered(self, blk: DataBlock, lo_o: Any, hi_o: Any, lo_inc: bool, hi_inc: bool) -> np.ndarray:
        """Row ids of a block whose keys are out of order: every key decoded and compared."""
        order, name = self.codec.order, self.source.name
        keep = []
        for key, _ in parse_block(blk.data, name, "btree data block", blk.offset):
            k = order(decode_key(self.codec, key, name, "btree data block", blk.offset))
            keep.append((lo_o is None or k > lo_o or (k == lo_o and lo_inc))
                        and (hi_o is None or k < hi_o or (k == hi_o and hi_inc)))
        return block_row_ids(blk, 0, blk.size, self.source.name, np.array(keep, np.bool_))

    def _scan(self, lo: Any = None, hi: Any = None, lo_inc: bool = True, hi_inc: bool = True) -> BitMap64:
        """Row ids of keys between ``lo`` and ``hi`` (None = open end), reading only the blocks needed."""
        return bitmap64_from_array(self.row_ids(lo, hi, lo_inc, hi_inc))

    def equal(self, value: Any) -> BitMap64:
        return self._scan(value, value)

    def non_null_rows(self) -> BitMap64:
        return self._scan()

    def visit(self, leaf: Leaf) -> BitMap64 | None:
        """Paimon's ``BTreeIndexReader`` answer for one leaf; None when it cannot answer."""
        op, lits = leaf.function.name, leaf.literals
        if op == "isNull":
            return BitMap64(self.null_rows)
        if op == "isNotNull":
            return self.non_null_rows()
        if any(v is None for v in lits):
            return BitMap64() if op in ("equal", "lessThan", "lessOrEqual", "greaterThan", "greaterOrEqual",
                                        "between") else None
        if op == "equal":
            return self.equal(lits[0])
        if op == "notEqual":
            return self.non_null_rows() - self.equal(lits[0])
        if op == "in":
            out = BitMap64()
            for v in lits:
                out |= self.equal(v)
            return out
        if op == "notIn":
            out = self.non_null_rows()
            for v in lits:
                out -= self.equal(v)
            return out
        if op == "lessThan":
            return self._scan(None, lits[0], True, False)
        if op == "lessOrEqual":
            return self._scan(None, lits[0])
        if op == "greaterThan":
            return self._scan(lits[0], None, False)
        if op == "greaterOrEqual":
            return self._scan(lits[0], None)
        if op == "between":
            return self._scan(lits[0], lits[1])
        return None

    def cardinalities(self) -> list[tuple[Any, int]]:
        """``(key, row count)`` per distinct key, in file (key) order (counts read with numpy)."""
        out, name = [], self.source.name
        for i in range(self.block_count):
            blk = self.data_block(i)
            keys, counts = block_keys_and_counts(blk, name)
            values = [decode_key(self.codec, k, name, "btree data block", blk.offset) for k in keys]
            out.extend(zip(values, counts.tolist(), strict=True))
        return out

    def summary(self) -> dict:
        keys = rows = 0
        first = last = None
        for i in range(self.block_count):
            blk = self.data_block(i)
            raw, counts = block_keys_and_counts(blk, self.source.name)
            if raw:
                first = self._decode(raw[0], blk) if first is None else first
                last = self._decode(raw[-1], blk)
            keys += len(raw)
            rows += int(counts.sum())
        return {"index_type": self.index_type, "version": self.footer.version, "data_blocks": self.block_count,
                "compression": self.index_compression, "distinct_keys": keys, "non_null_rows": rows,
                "null_rows": len(self.null_rows), "first_key": first, "last_key": last,
                "bloom_filter": self.footer.has_bloom_filter, "file_size": self.source.size}


def read_btree_footer(source: ByteSource) -> BTreeFooter:
    if source.size < FOOTER_LENGTH:
        raise CorruptFileError(f"{source.size} bytes cannot hold the {FOOTER_LENGTH}-byte footer", file=source.name,
                               structure="btree footer", offset=0)
    at = source.size - FOOTER_LENGTH
    raw = source.read(at, FOOTER_LENGTH, "btree footer")
    fields = _FOOTER.unpack(raw[:44])
    version, magic = struct.unpack("<II", raw[44:])
    if magic != MAGIC:
        raise CorruptFileError(f"bad magic {magic:#x} (expected {MAGIC:#x}): not a btree global index",
                               file=source.name, structure="btree footer", offset=at + 48)
    if version != VERSION:
        raise UnsupportedError(f"btree global index version {version} is not decoded", file=source.name,
                               structure="btree footer", offset=at + 44)
    footer = BTreeFooter(*fields, version)
    check_regions(source.name, at, "btree footer", [
        ("index block", footer.index_offset, footer.index_size + TRAILER_LENGTH),
        ("null bitmap", footer.null_offset, footer.null_size + 4 if footer.has_nulls else 0),
        ("bloom filter", footer.bloom_offset, footer.bloom_size)])
    return footer


class _BlockBuilder:
    def __init__(self) -> None:
        self.data = bytearray()
        self.positions: list[int] = []
        self.record_size = 0
        self.aligned = True

    def add(self, key: bytes, value: bytes) -> None:
        start = len(self.data)
        self.data += write_var(len(key)) + key + write_var(len(value)) + value
        self.positions.append(start)
        size = len(self.data) - start
        if self.aligned:
            if not self.record_size:
                self.record_size = size
            else:
                self.aligned = size == self.record_size

    def memory(self) -> int:
        return len(self.data) + 5 + (0 if self.aligned else 4 * len(self.positions))

    def finish(self) -> bytes:
        if self.positions and self.aligned:
            return bytes(self.data) + struct.pack("<I", self.record_size) + bytes([ALIGNED])
        return (bytes(self.data) + b"".join(struct.pack("<I", p) for p in self.positions)
                + struct.pack("<I", len(self.positions)) + bytes([UNALIGNED]))


class BTreeIndexWriter:
    """Writes the bytes Paimon's ``BTreeIndexWriter`` writes for the same ``(key, row id)`` stream.

    Keys should arrive sorted (:func:`write_btree_index` sorts); like Paimon's writer it only
    starts a new entry when the key changes. A None key goes to the null bitmap. The bloom
    filter option is not written.
    """

    def __init__(self, dtype: DataType, block_size: int = DEFAULT_BLOCK_SIZE, compression: str = "none"):
        self.codec = key_codec(dtype)
        self.block_size = block_size
        self.compression = compression
        self._out = bytearray()
        self._data = _BlockBuilder()
        self._index = _BlockBuilder()
        self._nulls = BitMap64()
        self._current: Any = None
        self._current_rows: list[int] = []
        self._last_written: bytes | None = None
        self.first_key: Any = None
        self.last_key: Any = None
        self.row_count = 0

    def write(self, value: Any, row_id: int) -> None:
        self.row_count += 1
        if value is None:
            self._nulls.add(row_id)
            return
        if self._current_rows and self.codec.order(value) != self.codec.order(self._current):
            self._put()
        if self.first_key is None:
            self.first_key = value
        self._current = self.last_key = value
        self._current_rows.append(row_id)

    def _put(self) -> None:
        key = self.codec.encode(self._current)
        self._data.add(key, encode_row_ids(self._current_rows))
        self._current_rows = []
        self._last_written = key
        if self._data.memory() > self.block_size:
            self._flush()

    def _write_block(self, builder: _BlockBuilder) -> tuple[int, int]:
        closed = close_block(builder.finish(), self.compression)
        offset = len(self._out)
        self._out += closed
        return offset, len(closed) - TRAILER_LENGTH

    def _flush(self) -> None:
        if not self._data.positions:
            return
        offset, size = self._write_block(self._data)
        self._index.add(self._last_written, write_var(offset) + write_var(size))
        self._data = _BlockBuilder()

    def finish(self) -> bytes:
        """The whole file."""
        if self._current_rows:
            self._put()
        self._flush()
        null_off = null_size = 0
        if self._nulls:
            self._nulls.run_optimize()
            serialized = self._nulls.serialize()
            null_off, null_size = len(self._out), len(serialized)
            self._out += serialized + (zlib.crc32(serialized) & 0xFFFFFFFF).to_bytes(4, "little")
        index_off, index_size = self._write_block(self._index)
        self._out += _FOOTER.pack(0, 0, 0, index_off, index_size, null_off, null_size)
        self._out += struct.pack("<II", VERSION, MAGIC)
        return bytes(self._out)

    def meta(self) -> SortedIndexFileMeta:
        """The index-manifest meta Paimon stores beside the file."""
        enc = self.codec.encode
        return SortedIndexFileMeta(None if self.first_key is None else enc(self.first_key),
                                   None if self.last_key is None else enc(self.last_key), bool(self._nulls))


def write_btree_index(dtype: DataType, rows: Iterable[tuple[Any, int]], block_size: int = DEFAULT_BLOCK_SIZE,
                      compression: str = "none") -> tuple[bytes, SortedIndexFileMeta]:
    """A BTree index file over ``(value, row id)`` pairs in any order, and its manifest meta."""
    writer = BTreeIndexWriter(dtype, block_size, compression)
    codec = writer.codec
    pairs = list(rows)
    for value, rid in sorted((p for p in pairs if p[0] is not None), key=lambda p: (codec.order(p[0]), p[1])):
        writer.write(value, rid)
    for value, rid in pairs:
        if value is None:
            writer.write(None, rid)
    return writer.finish(), writer.meta()
