"""Reads a bitmap index (Paimon's ``BitmapFileIndex.Reader``): head first, then one block and one bitmap."""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Iterator, Sequence
from typing import Any

from pyroaring import BitMap

from indexcore.errors import CorruptFileError
from indexcore.formats import roaring
from indexcore.formats.base import BitmapResult, FileIndexReader, FileIndexResult
from indexcore.formats.bitmap.keys import INT32, TWO_INT32, KeyCodec
from indexcore.formats.bitmap.meta import (
    VERSION_1,
    VERSION_2,
    BitmapEntry,
    BitmapFileIndexMeta,
    NegativeLength,
    known_starts,
    locate_entry,
    read_meta,
    remember_starts,
    v1_length,
    v1_offset,
    walk_strings,
)
from indexcore.io import ByteSource
from indexcore.types import DataType, to_json_value

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
        self.codec = KeyCodec(dtype)
        self._meta: BitmapFileIndexMeta | None = None
        self._v1_entries: list[tuple[Any, int]] | None = None
        self._block_data: dict[int, tuple[bytes, Sequence[int]]] = {}
        self._block_entries: dict[int, list[tuple[Any, int, int]]] = {}
        self._bitmaps: dict[Any, BitMap] = {}
        self._dictionary: list[tuple[Any, int]] | None = None
        self._written: tuple[int, dict[Any, list[int]], list[int]] | None = None

    @classmethod
    def of_rows(cls, dtype: DataType, row_count: int, rows: dict[Any, list[int]], nulls: list[int],
                options: dict[str, str] | None = None) -> BitmapReader:
        """A reader over a writer's rows per key (no bytes, no source) answering the predicates as
        a reader of the serialized index does: ``rows`` maps each key (``KeyCodec.key``) to its
        rows, ``nulls`` the null rows. Only the predicates (``visit_*``) are answered."""
        self = cls(dtype, None, options)  # type: ignore[arg-type] - no source: nothing is read
        self._written = (row_count, rows, nulls)
        return self

    # -- metadata

    @property
    def meta(self) -> BitmapFileIndexMeta:
        if self._meta is None:
            self._meta = read_meta(self.source, self.codec)
        return self._meta

    @property
    def version(self) -> int:
        return self.meta.version

    @property
    def row_count(self) -> int:
        return self._written[0] if self._written is not None else self.meta.row_count

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

    def _block_bytes(self, i: int, data: bytes | None = None) -> tuple[bytes, Sequence[int]]:
        """A V2 index block's bytes (checked to hold its entries) and where each entry starts."""
        cached = self._block_data.get(i)
        if cached is not None:
            return cached
        meta = self.meta
        block = meta.blocks[i]
        at = meta.index_block_start + block.offset
        if data is None:
            data = self.source.read(at, block.size, "bitmap index block")
        count = INT32.unpack_from(data)[0] if block.size >= 4 else None
        if count is None or count < 0 or 4 + count * (self.codec.min_size + 8) > block.size:
            raise self._corrupt(f"index block entry count {count} does not fit {block.size} bytes",
                                "bitmap index block", at)
        if self.codec.kind == "string":
            starts = known_starts(data, count, 12)
            if starts is None:
                walked: list[int] = []
                try:
                    walk_strings(data, 4, count, 12, walked)
                except NegativeLength as exc:
                    raise self._corrupt(str(exc), "bitmap index block", at + exc.pos) from None
                if len(walked) < count:
                    raise self._corrupt("index block entries run past the block", "bitmap index block", at)
                starts = remember_starts(data, count, 12, walked)
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
                j = locate_entry(meta.dictionary, codec.encode(key), meta.entry_starts, 0, last=True)
            if j < 0:
                return None
            starts = meta.entry_starts
            offset = v1_offset(codec, meta.dictionary, starts[j])
            return BitmapEntry(key, offset, v1_length(codec, meta.dictionary, starts, j + 1, offset,
                                                       self.source.size - meta.body_start))
        i = self._block_index(key)
        if i < 0:
            return None
        if codec.kind != "boolean":
            data, starts = self._block_bytes(i)
            encoded = codec.encode(key)
            j = locate_entry(data, encoded, starts, 4, last=False)
            if j < 0:
                return None
            return BitmapEntry(key, *TWO_INT32.unpack_from(data, starts[j] + len(encoded)))
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
            if self._written is not None:
                _, rows, nulls = self._written
                found = nulls if key is None else rows.get(key)
                self._bitmaps[key] = BitMap(found) if found else BitMap()
            else:
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
        bitmap.flip_inplace(0, self.row_count)
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


