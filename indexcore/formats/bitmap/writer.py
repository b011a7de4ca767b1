"""Writes a bitmap index byte for byte as Paimon's ``BitmapFileIndex.Writer`` does, in Java ``HashMap`` order."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import BitMap

from indexcore.errors import UnsupportedError
from indexcore.formats import bulk
from indexcore.formats.base import FileIndexWriter, parse_memory_size
from indexcore.formats.bitmap.keys import INT32, KeyCodec
from indexcore.formats.bitmap.meta import VERSION_1, VERSION_2, BitmapEntry
from indexcore.formats.bitmap.reader import BitmapReader
from indexcore.types import DataType

DEFAULT_INDEX_BLOCK_SIZE = "16kb"


# ---------------------------------------------------------------------------------------
# Writer


class BitmapWriter(FileIndexWriter):
    """Builds the bytes Paimon's ``BitmapFileIndex.Writer`` writes for the same rows."""

    index_type = "bitmap"

    def __init__(self, dtype: DataType, options: dict[str, str] | None = None):
        super().__init__(dtype, options)
        self.codec = KeyCodec(dtype)
        self.version = int(self.options.get("version", VERSION_2))
        if self.version not in (VERSION_1, VERSION_2):
            raise UnsupportedError(f"invalid bitmap index version: {self.version}")
        self.block_size_limit = parse_memory_size(self.options.get("index-block-size", DEFAULT_INDEX_BLOCK_SIZE))
        self._rows: dict[Any, list[int]] = {}
        self._nulls: list[int] = []
        self._row_count = 0
        self._called_after_last_new = False
        # hashCode of each key of _rows in its order, when :meth:`many` hashed them for every file
        self._key_hashes: list[int] | None = None

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

    @classmethod
    def many(cls, dtype: DataType, options: dict[str, str] | None, arrays: Sequence[Any]) -> list[BitmapWriter] | None:
        """One writer per string column of ``arrays`` (one column of many small files), each holding
        what :meth:`write_arrow` of that column alone holds (its keys in first-seen order, their
        rows, the null rows), grouped for all files at once: one dictionary encoding and one sort
        instead of a dozen calls per file (the same bytes, tests/test_writer_many.py). None for
        other key kinds (their ``write_arrow`` is array work already) or mixed types."""
        writers = [cls(dtype, options) for _ in arrays]
        arrays = [bulk.as_array(a) for a in arrays]
        if (not arrays or writers[0].codec.kind != "string" or len({a.type for a in arrays}) != 1
                or not writers[0].accepts_arrow(arrays[0].type)):
            return None
        big = pa.concat_arrays(arrays)
        encoded = pc.dictionary_encode(big)
        distinct = bulk.utf8_values(encoded.dictionary)
        lengths = np.array([len(a) for a in arrays], dtype=np.int64)
        starts = np.cumsum(lengths) - lengths
        file_of = np.repeat(np.arange(len(arrays), dtype=np.int64), lengths)
        valid = bulk.valid_mask(big)
        indices = encoded.indices
        codes = (indices.fill_null(0) if indices.null_count else indices).to_numpy(zero_copy_only=False)
        rows = np.flatnonzero(valid)
        files, codes = file_of[rows], codes[rows].astype(np.int64)
        local = rows - starts[files]
        nulls = np.flatnonzero(~valid)
        null_bounds = bulk.file_bounds(file_of[nulls], len(arrays))
        null_local = (nulls - starts[file_of[nulls]]).tolist()
        # rows grouped by (file, key), in row order within a group; a file's groups in first-seen order
        order = np.lexsort((codes, files))
        f_sorted, c_sorted = files[order], codes[order]
        new = np.ones(len(order), dtype=bool)
        new[1:] = (f_sorted[1:] != f_sorted[:-1]) | (c_sorted[1:] != c_sorted[:-1])
        group_at = np.flatnonzero(new)
        sorted_rows = local[order]
        first_row, group_file, group_code = sorted_rows[group_at], f_sorted[group_at], c_sorted[group_at]
        seen = np.lexsort((first_row, group_file))
        group_bounds = bulk.file_bounds(group_file[seen], len(arrays))
        row_list, ends = sorted_rows.tolist(), group_at.tolist() + [len(order)]
        keys, firsts = group_code.tolist(), first_row.tolist()
        last_valid = bulk.file_bounds(files, len(arrays))
        hashes = writers[0].codec.java_hashes(distinct)  # each distinct key once, not once per file
        for f, w in enumerate(writers):
            table = w._rows
            last_new = -1
            w._key_hashes = own = []
            for g in seen[group_bounds[f]:group_bounds[f + 1]].tolist():
                table[distinct[keys[g]]] = row_list[ends[g]:ends[g + 1]]
                own.append(hashes[keys[g]])
                last_new = firsts[g]
            w._nulls = null_local[null_bounds[f]:null_bounds[f + 1]]
            if last_valid[f + 1] > last_valid[f]:
                w._called_after_last_new = int(local[last_valid[f + 1] - 1]) != last_new
            w._row_count = int(lengths[f])
        return writers

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

    def reader(self) -> BitmapReader:
        """A reader over the rows written so far (write no more while it is used), answering
        every predicate as one over :meth:`serialized_bytes` does (tests/test_writer_readers.py)."""
        return BitmapReader.of_rows(self.dtype, self._row_count, self._rows, self._nulls, self.options)

    def serialized_bytes(self) -> bytes:
        codec = self.codec
        keys = list(self._rows)
        hashes = self._key_hashes
        if hashes is None or len(hashes) != len(keys):  # keys written since many(): hashed here
            hashes = codec.java_hashes(keys)
        order = java_hashmap_order(hashes, self._called_after_last_new)
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
        out = [bytes([self.version]), INT32.pack(self._row_count), INT32.pack(len(keys)),
               b"\x01" if has_null else b"\x00"]
        if self.version == VERSION_1:
            if has_null:
                out.append(INT32.pack(null_offset))
            for e in entries:
                out += [codec.encode(e.key), INT32.pack(e.offset)]
        else:
            if has_null:
                out += [INT32.pack(null_offset), INT32.pack(len(null_bytes))]
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
        head = [INT32.pack(len(blocks))]
        offset = 0
        for k, size in zip(first_keys, sizes, strict=True):
            head += [codec.encode(k), INT32.pack(offset)]
            offset += size
        head.append(INT32.pack(offset))
        for block in blocks:
            head.append(INT32.pack(len(block)))
            for e in block:
                head += [codec.encode(e.key), INT32.pack(e.offset), INT32.pack(e.length)]
        return b"".join(head)
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


