"""The primary-key BTree index (``pk-btree.index.columns``): a BTree per bucket over compacted files.

The index file itself is a BTree global index file (:mod:`.btree_index`, footer ``ITBP``). What
differs is where its row ids point: the index manifest entry's ``_SOURCE_META`` lists the data
files the payload was built from, and a row id is a position in those files laid end to end
(file 0's rows first). The source meta is big-endian: a version int (1), one int Paimon keeps
for the group (not interpreted here), the file count, then per file ``u16 name length | UTF-8
name | i64 row count``.
"""

from __future__ import annotations

import bisect
import struct
from dataclasses import dataclass

from pyroaring import BitMap64

from indexcore.errors import CorruptFileError


@dataclass(frozen=True)
class SourceFile:
    file_name: str
    row_count: int
    first_row: int  # the first row id of this file inside the index payload


@dataclass(frozen=True)
class PkBTreeSourceMeta:
    version: int
    group_value: int
    files: tuple[SourceFile, ...]

    @property
    def row_count(self) -> int:
        return sum(f.row_count for f in self.files)

    def locate(self, row_ids: BitMap64 | list[int]) -> dict[str, list[int]]:
        """Row ids of the payload -> ``{data file: [positions in it]}``."""
        starts = [f.first_row for f in self.files]
        out: dict[str, list[int]] = {}
        for rid in row_ids:
            i = bisect.bisect_right(starts, rid) - 1
            if i < 0 or rid >= starts[i] + self.files[i].row_count:
                raise CorruptFileError(f"row id {rid} lies outside the {self.row_count} source rows",
                                       structure="pk-btree source meta")
            out.setdefault(self.files[i].file_name, []).append(rid - starts[i])
        return out


def read_source_meta(data: bytes, name: str = "<manifest>") -> PkBTreeSourceMeta:
    """Decode the ``_SOURCE_META`` bytes of a PK BTree index manifest entry."""
    def need(pos: int, n: int) -> None:
        if pos + n > len(data):
            raise CorruptFileError(f"source meta needs {n} bytes at {pos}, has {len(data) - pos}", file=name,
                                   structure="pk-btree source meta", offset=pos)

    need(0, 12)
    version, group_value, count = struct.unpack_from(">iii", data, 0)
    if count < 0:
        raise CorruptFileError(f"negative file count {count}", file=name, structure="pk-btree source meta", offset=8)
    pos, first, files = 12, 0, []
    for _ in range(count):
        need(pos, 2)
        n = struct.unpack_from(">H", data, pos)[0]
        need(pos + 2, n + 8)
        file_name = data[pos + 2:pos + 2 + n].decode("utf-8", "replace")
        rows = struct.unpack_from(">q", data, pos + 2 + n)[0]
        if rows < 0:
            raise CorruptFileError(f"negative row count for {file_name}", file=name,
                                   structure="pk-btree source meta", offset=pos + 2 + n)
        files.append(SourceFile(file_name, rows, first))
        first += rows
        pos += 2 + n + 8
    if pos != len(data):
        raise CorruptFileError(f"{len(data) - pos} bytes left after {count} source files", file=name,
                               structure="pk-btree source meta", offset=pos)
    return PkBTreeSourceMeta(version, group_value, tuple(files))
