"""A bitmap index's dictionary and summary straight on its bytes, without a reader per blob.

What the Bitmap page's per-file views ask of thousands of blobs: each value's row count, the null
rows, the layout's byte counts and the bytes a lookup of the most frequent value reads. The head is
parsed once with :func:`~indexcore.formats.bitmap.lookup.parse_head`, every entry is unpacked with
``struct`` from the V1 dictionary or the V2 index blocks, and each bitmap is deserialized once to
count it (pyroaring's own check of the bytes, as the reader's; the C decoder's count where it
reads the bitmap whole, which is pyroaring's bitmap). :func:`blob_counts` accepts exactly
what :class:`~indexcore.formats.bitmap.reader.BitmapReader` accepts and gives the same numbers;
anything it does not expect (boolean keys, a count, bound or length off, a bitmap that does not
deserialize) answers None, and the caller reads that blob through the reader, which names the fault.
"""

from __future__ import annotations

import bisect
import heapq
from typing import Any, NamedTuple

from indexcore.errors import IndexCoreError
from indexcore.formats import roaring
from indexcore.formats.bitmap.keys import INT32, TWO_INT32, KeyCodec
from indexcore.formats.bitmap.lookup import Head, parse_head
from indexcore.formats.bitmap.meta import (
    VERSION_1,
    VERSION_2,
    NegativeLength,
    locate_entry,
    v1_length,
    v1_offset,
    walk_strings,
)
from indexcore.types import DataType, to_json_value

try:  # the optional C decoder of portable bitmaps (setup.py): without it, pyroaring counts them
    from indexcore.formats import _roaring_rows
except ImportError:
    _roaring_rows = None


class BlobCounts(NamedTuple):
    """A bitmap blob's dictionary with counts, as the reader's ``dictionary()`` and ``summary()`` see it."""

    head: Head
    size: int  # the blob's bytes
    dictionary_size: int  # the head's non-null bitmap count
    dictionary: list  # (value, rows) for every non-null value, in key order
    null_count: int
    blocks: tuple  # V2: per index block (offset, size, entries in file order, bytes, entry starts)
    first_keys: tuple  # V2: each index block's first key as the head lists it
    lookup_bytes_most_frequent: int | None  # None without a non-null value


def blob_counts(blob: bytes, codec: KeyCodec) -> BlobCounts | None:
    """The dictionary and counts of the whole bitmap blob ``blob``, or None where the reader would
    fail (or might: it then answers, or says why)."""
    if codec.kind == "boolean":
        return None
    head = parse_head(blob, codec)
    if head is None:
        return None
    n = len(blob)
    body_size = n - head.body_start
    try:
        if head.version == VERSION_1:
            entries: list[tuple] = []
            codec.scan(head.dictionary, 0, len(head.starts), 1, entries)
            if len(entries) != len(head.starts):
                return None
            ends = [o for _, o in entries if o >= 0] + [body_size]
            listed, nxt = [], 0
            for k, o in entries:
                if o >= 0:
                    nxt += 1
                    listed.append((k, o, ends[nxt] - o))
                else:
                    listed.append((k, o, -1))
            blocks: tuple = ()
        else:
            listed, kept = [], []
            for i, (off, size) in enumerate(head.blocks):
                got = _block(blob, head, i, codec)
                if got is None:
                    return None
                data, starts = got
                block: list[tuple] = []
                codec.scan(data, 4, len(starts), 2, block)
                if len(block) != len(starts):
                    return None
                listed.extend(block)
                kept.append((off, size, block, data, starts))
            blocks = tuple(kept)
    except ValueError:
        return None
    row_count = head.row_count
    sort_key = codec.sort_key
    listed.sort(key=lambda e: sort_key(e[0]))
    dictionary = []
    for key, offset, length in listed:
        if offset < 0:
            count = 1
        else:
            count = _count(blob, head.body_start + offset, length)
            if count is None:
                return None
        dictionary.append((codec.value(key), count))
    null_count = 0
    if head.has_null:
        if head.null_offset < 0:
            if -1 - head.null_offset >= row_count:
                return None
            null_count = 1
        else:
            null_count = _count(blob, head.body_start + head.null_offset, head.null_length)
            if null_count is None:
                return None
    most = None
    if dictionary:
        cards = [c for _, c in dictionary]
        top = cards.index(max(cards))  # the first of the most frequent
        most = _lookup_bytes(blob, head, codec, blocks, codec.key(dictionary[top][0]))
        if most is None:
            return None
    number = INT32.unpack_from(blob, 5)[0]
    firsts: list[tuple] = []
    if head.version != VERSION_1:  # the head's first keys: parse_head keeps their sort keys
        codec.scan(blob, 14 + (8 if head.has_null else 0), len(head.blocks), 1, firsts)
    return BlobCounts(head, n, number, dictionary, null_count, blocks, tuple(k for k, _ in firsts), most)


# key kinds the C counter reads (bytes per key; 0: a string), where a key is its value (not a timestamp's)
_NATIVE_KEYS = {"string": 0, "byte": 1, "short": 2, "int": 4, "long": 8}


def view_counts(blob: bytes, codec: KeyCodec) -> tuple[dict, list, list[int], int] | None:
    """``(summary_of_counts(counts, dtype, detail=False), values, their rows, null rows)`` of
    :func:`blob_counts` (None where that is None), what the Bitmap page's per-file views take of
    thousands of blobs. A V2 blob of string or integer keys is parsed and counted in one C call
    (``_roaring_rows.bitmap_v2``: about 2 us where the Python path takes 30 us), which answers only
    where it finds what :func:`blob_counts` would (else the Python path decides)."""
    size = _NATIVE_KEYS.get(codec.kind) if _roaring_rows is not None and not codec.dtype.is_timestamp else None
    if size is not None and blob[:1] == _V2:
        got = _roaring_rows.bitmap_v2(blob, size)
        if got is not None:
            row_count, number, nulls, index_block_start, body_start, block_count, values, cards, most = got
            n = len(blob)
            out = {"index_type": "bitmap", "version": VERSION_2, "row_count": row_count, "null_count": nulls,
                   "dictionary_size": number, "single_row_values": cards.count(1), "file_size": n,
                   "head_bytes": index_block_start, "index_block_bytes": body_start - index_block_start,
                   "bitmap_bytes": n - body_start, "block_count": block_count}
            if most is not None:
                out["lookup_bytes_most_frequent"] = most
            return out, values, cards, nulls
    counts = blob_counts(blob, codec)
    if counts is None:
        return None
    return (summary_of_counts(counts, codec.dtype, detail=False), [v for v, _ in counts.dictionary],
            [c for _, c in counts.dictionary], counts.null_count)


_V2 = bytes([VERSION_2])


def _count(blob: bytes, at: int, length: int) -> int | None:
    """Rows of the bitmap at ``at`` (``length`` < 0: to the end), or None where the reader fails."""
    if length < 0:
        length = len(blob) - at
    if length < 0 or at + length > len(blob):
        return None
    if _roaring_rows is not None:  # a bitmap it decodes whole is the one pyroaring reads (test_bsi_native)
        try:
            rows, size = _roaring_rows.rows(blob, at, at + length)
        except ValueError:  # pyroaring's check below decides, as without the decoder
            pass
        else:
            if size == length:
                return len(rows) >> 2
    try:
        return len(roaring.deserialize(memoryview(blob)[at:at + length], "", "bitmap", at))
    except IndexCoreError:
        return None


def _block(blob: bytes, head: Head, i: int, codec: KeyCodec) -> tuple[bytes, Any] | None:
    """A V2 index block's bytes and where its entries start, or None where the reader fails."""
    off, size = head.blocks[i]
    at = head.index_block_start + off
    data = blob[at:at + size]
    count = INT32.unpack_from(data)[0] if size >= 4 else None
    if count is None or count < 0 or 4 + count * (codec.min_size + 8) > size:
        return None
    if codec.kind == "string":
        starts: list[int] = []
        try:
            walk_strings(data, 4, count, 12, starts)
        except NegativeLength:
            return None
        return (data, starts) if len(starts) == count else None
    item = codec.struct.size + 8
    return data, range(4, 4 + count * item, item)


def _lookup_bytes(blob: bytes, head: Head, codec: KeyCodec, blocks: tuple, key: Any) -> int | None:
    """The reader's ``lookup_bytes`` of ``key``: the head, V2's one index block, and one bitmap."""
    total = head.head_size
    encoded = codec.encode(key)
    if head.version == VERSION_1:
        j = locate_entry(head.dictionary, encoded, head.starts, 0, last=True)
        if j < 0:
            return total
        offset = v1_offset(codec, head.dictionary, head.starts[j])
        length = v1_length(codec, head.dictionary, head.starts, j + 1, offset, len(blob) - head.body_start)
    else:
        i = bisect.bisect_right(head.firsts, codec.sort_key(key)) - 1
        if i < 0:
            return total
        _off, size, _entries, data, starts = blocks[i]
        total += size
        j = locate_entry(data, encoded, starts, 4, last=False)
        if j < 0:
            return total
        offset, length = TWO_INT32.unpack_from(data, starts[j] + len(encoded))
    if offset >= 0:
        total += length if length >= 0 else len(blob) - (head.body_start + offset)
    return total


def summary_of_counts(counts: BlobCounts, dtype: DataType, detail: bool = True) -> dict:
    """``BitmapReader.summary()`` of the blob ``counts`` was made from (``detail=False``: without its
    ``top_values`` and ``blocks``, which the per-file views do not show)."""
    head, dictionary = counts.head, counts.dictionary
    out: dict[str, Any] = {
        "index_type": "bitmap",
        "version": head.version,
        "row_count": head.row_count,
        "null_count": counts.null_count,
        "dictionary_size": counts.dictionary_size,
        "single_row_values": sum(1 for _, c in dictionary if c == 1),
        "file_size": counts.size,
        "head_bytes": head.head_size,
        "index_block_bytes": head.body_start - head.index_block_start,
        "bitmap_bytes": counts.size - head.body_start,
    }
    if detail:
        top = heapq.nsmallest(20, range(len(dictionary)), key=lambda i: (-dictionary[i][1], i))
        out["top_values"] = [(to_json_value(dtype, dictionary[i][0]), dictionary[i][1]) for i in top]
    if head.version != VERSION_1:
        out["block_count"] = len(head.blocks)
        if detail:
            codec = KeyCodec(dtype)
            out["blocks"] = [{
                "offset": off, "size": size, "entries": len(entries),
                "first_key": to_json_value(dtype, codec.value(first)),
                "last_key": to_json_value(dtype, codec.value(entries[-1][0])) if entries else None,
            } for first, (off, size, entries, _data, _starts) in zip(counts.first_keys, counts.blocks, strict=True)]
    if counts.lookup_bytes_most_frequent is not None:
        out["lookup_bytes_most_frequent"] = counts.lookup_bytes_most_frequent
    return out
