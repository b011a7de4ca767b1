"""Deletion-vector index files: read, scan and write them byte-identically to Paimon.

A file is a version byte (1) followed by one serialized deletion vector per data file, back to
back. Each serialized DV is ``len:i32 BE | data[len] | crc32(data):u32 BE``. ``data`` starts with
a magic number that says which bitmap follows:

* 32-bit (``BitmapDeletionVector``): magic 1581511376 as i32 big-endian, then a portable
  RoaringBitmap. The index manifest records ``length = len``.
* 64-bit (``Bitmap64DeletionVector``, Iceberg compatible): magic 1681511377 as i32
  little-endian, then u64 LE bitmap count and, per key, u32 LE key + portable 32-bit bitmap.
  Paimon writes a bitmap (possibly empty) for every key from 0 to the largest one. The index
  manifest records ``length = 4 + len + 4``.

Decoding never iterates positions in Python: the CRC is one ``zlib.crc32`` call and the bitmap
is handed to pyroaring as a zero-copy view; only the bitmap headers are parsed here, to check
that the bitmap fills ``len`` exactly.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
from pyroaring import BitMap, BitMap64

from indexcore.errors import CorruptFileError, UnsupportedError
from indexcore.formats import bulk, roaring
from indexcore.io import ByteSource

VERSION = 1
MAGIC_32 = 1581511376
MAGIC_64 = 1681511377
_MAGIC_32_BYTES = MAGIC_32.to_bytes(4, "big", signed=True)
_MAGIC_64_BYTES = MAGIC_64.to_bytes(4, "little", signed=True)

#: Largest position a 32-bit DV accepts (``RoaringBitmap32.MAX_VALUE``).
MAX_POSITION_32 = 2**31 - 1
#: Largest position a 64-bit DV accepts (``OptimizedRoaringBitmap64.MAX_VALUE``).
MAX_POSITION_64 = ((2**31 - 2) << 32) | 0x80000000
_MAX_KEY_64 = 2**31 - 2



@dataclass(frozen=True)
class DeletionVectorMeta:
    """One DV range as the index manifest records it (``DeletionVectorMeta`` in Paimon).

    ``offset`` is where the DV's length prefix starts. ``length`` is ``len`` for a 32-bit DV
    and ``4 + len + 4`` for a 64-bit DV, exactly as Paimon writes it.
    """

    data_file: str
    offset: int
    length: int
    cardinality: int | None


@dataclass(frozen=True, eq=False)
class DeletionVector:
    """The deleted row positions of one data file."""

    positions: BitMap | BitMap64
    bitmap64: bool
    data_length: int = 0

    @property
    def cardinality(self) -> int:
        return len(self.positions)

    def is_deleted(self, position: int) -> bool:
        limit = MAX_POSITION_64 if self.bitmap64 else MAX_POSITION_32
        return 0 <= position <= limit and position in self.positions

    def to_list(self) -> list[int]:
        """All deleted positions, ascending."""
        return self.positions.to_array().tolist()

    def summary(self) -> dict:
        card = self.cardinality
        return {
            "bitmap": "64" if self.bitmap64 else "32",
            "cardinality": card,
            "min": self.positions.min() if card else None,
            "max": self.positions.max() if card else None,
            "serialized_bytes": self.data_length,
        }


@dataclass(frozen=True)
class DeletionVectorEntry:
    """One serialized DV found by scanning a file: where it is and what it holds.

    ``offset`` is where its length prefix starts, ``size`` the prefix value (magic + bitmap),
    ``length`` what the index manifest records for it (``size``, or ``size + 8`` when 64-bit).
    """

    offset: int
    size: int
    length: int
    cardinality: int
    bitmap64: bool
    crc: int
    dv: DeletionVector = field(compare=False, repr=False)


@dataclass(frozen=True)
class DeletionVectorFile:
    """A whole DV index file: the version byte and every entry in file order."""

    name: str
    size: int
    version: int
    entries: tuple[DeletionVectorEntry, ...]

    @property
    def bitmap(self) -> str | None:
        """``"32"`` or ``"64"``; ``None`` for a file that holds no DV at all."""
        if not self.entries:
            return None
        return "64" if self.entries[0].bitmap64 else "32"

    def summary(self) -> dict:
        return {
            "version": self.version,
            "bitmap": self.bitmap,
            "file_size": self.size,
            "entries": len(self.entries),
            "cardinality": sum(e.cardinality for e in self.entries),
        }


# --------------------------------------------------------------------------- decoding


def _corrupt(message: str, name: str, structure: str, offset: int) -> CorruptFileError:
    return CorruptFileError(message, file=name, structure=structure, offset=offset)


def _deserialize32(buf: memoryview, start: int, end: int, base: int, name: str) -> BitMap:
    size = roaring.portable_size(buf, start, end, name, base=base)
    if start + size != end:
        raise _corrupt(f"bitmap fills {size} bytes of {end - start}", name, roaring.STRUCTURE,
                       base + start + size)
    return roaring.deserialize(buf[start:end], name, offset=base + start)


def _deserialize64(buf: memoryview, start: int, end: int, base: int, name: str) -> BitMap64:
    structure = "64-bit roaring bitmap"
    if end - start < 8:
        raise _corrupt("truncated bitmap count", name, structure, base + start)
    count = int.from_bytes(buf[start:start + 8], "little")
    if count > (end - start - 8) // 12:
        raise _corrupt(f"bitmap count {count} does not fit in {end - start} bytes", name, structure,
                       base + start)
    pos = start + 8
    last_key = -1
    for _ in range(count):
        if pos + 4 > end:
            raise _corrupt("truncated bitmap key", name, structure, base + pos)
        key = int.from_bytes(buf[pos:pos + 4], "little")
        if key > _MAX_KEY_64 or key <= last_key:
            raise _corrupt(f"bitmap key {key} is out of order or too large (previous {last_key})",
                           name, structure, base + pos)
        last_key = key
        pos += 4
        pos += roaring.portable_size(buf, pos, end, name, base=base)
    if pos != end:
        raise _corrupt(f"bitmaps fill {pos - start} bytes of {end - start}", name, structure, base + pos)
    return roaring.deserialize(buf[start:end], name, structure, base + start, kind=BitMap64)


def _decode(buf: memoryview, base: int, name: str, bitmap64: bool | None,
            length: int | None) -> tuple[DeletionVector, int, int]:
    """Decode the serialized DV at ``buf[0:]`` (``base`` = its absolute offset, for errors).

    Returns the DV, the bytes it occupies (4 + len + 4) and its stored CRC.
    """
    if len(buf) < 4:
        raise _corrupt(f"truncated length prefix: {len(buf)} of 4 bytes", name,
                       "deletion vector length", base)
    size = int.from_bytes(buf[0:4], "big", signed=True)
    if size < 4:
        raise _corrupt(f"impossible deletion vector length {size}", name, "deletion vector length", base)
    if 8 + size > len(buf):
        raise _corrupt(f"declared length {size} (+4 CRC bytes) exceeds the {len(buf) - 4} bytes left",
                       name, "deletion vector length", base)
    magic = buf[4:8]
    if magic == _MAGIC_32_BYTES:
        is64 = False
    elif magic == _MAGIC_64_BYTES:
        is64 = True
    else:
        raise _corrupt(f"unknown deletion vector magic {int.from_bytes(magic, 'big', signed=True)}",
                       name, "deletion vector magic", base + 4)
    if bitmap64 is not None and bitmap64 != is64:
        want = "64" if bitmap64 else "32"
        raise _corrupt(f"expected a {want}-bit deletion vector, found the other kind", name,
                       "deletion vector magic", base + 4)
    if length is not None:
        recorded = size + 8 if is64 else size
        if recorded != length:
            raise _corrupt(f"index manifest records length {length}, the file says {recorded}",
                           name, "deletion vector length", base)
    data = buf[4:4 + size]
    stored = int.from_bytes(buf[4 + size:8 + size], "big")
    computed = zlib.crc32(data)
    if stored != computed:
        raise _corrupt(f"CRC mismatch: stored {stored:#010x}, computed {computed:#010x}", name,
                       "deletion vector CRC", base + 4 + size)
    if is64:
        positions = _deserialize64(buf, 8, 4 + size, base, name)
    else:
        positions = _deserialize32(buf, 8, 4 + size, base, name)
    return DeletionVector(positions, is64, size), 8 + size, stored


def _view(source: ByteSource | bytes | bytearray | memoryview) -> tuple[memoryview | None, str, int]:
    if isinstance(source, bytes | bytearray | memoryview):
        view = memoryview(source).cast("B")
        return view, "<memory>", len(view)
    return None, source.name, source.size


def read_deletion_vector(source: ByteSource | bytes | bytearray | memoryview, offset: int,
                         length: int | None = None, bitmap64: bool | None = None) -> DeletionVector:
    """Read the DV whose length prefix starts at ``offset`` (what the index manifest records).

    ``length`` is the manifest's recorded length and is checked when given; ``bitmap64`` is the
    table's ``deletion-vectors.bitmap64`` option, or ``None`` to tell the kind from the magic.
    With ``length`` given a ByteSource is read in one request.
    """
    view, name, total = _view(source)
    if offset < 0 or offset >= total:
        raise _corrupt(f"offset {offset} is outside the file of {total} bytes", name,
                       "deletion vector", offset)
    if view is not None:
        return _decode(view[offset:], offset, name, bitmap64, length)[0]
    if length is not None and length >= 0:
        want = min(length + 8, total - offset)
        buf = memoryview(source.read(offset, want, "deletion vector"))
    else:
        head = source.read(offset, 4, "deletion vector length")
        size = int.from_bytes(head, "big", signed=True)
        if size < 4 or offset + 8 + size > total:
            raise _corrupt(f"declared length {size} does not fit in the {total - offset - 4} bytes left",
                           name, "deletion vector length", offset)
        buf = memoryview(head + source.read(offset + 4, size + 4, "deletion vector"))
    return _decode(buf, offset, name, bitmap64, length)[0]


def scan_deletion_vector_file(source: ByteSource | bytes | bytearray | memoryview) -> DeletionVectorFile:
    """Decode every DV of a file from its version byte to its end (one read)."""
    view, name, total = _view(source)
    if view is None:
        view = memoryview(source.read(0, total, "deletion vector file"))
    if total < 1:
        raise _corrupt("empty file: no version byte", name, "deletion vector file version", 0)
    version = view[0]
    if version != VERSION:
        raise UnsupportedError(f"unsupported deletion vector file version {version}", file=name,
                               structure="deletion vector file version", offset=0)
    entries = []
    pos = 1
    kind: bool | None = None
    while pos < total:
        dv, used, crc = _decode(view[pos:], pos, name, kind, None)
        kind = dv.bitmap64
        size = used - 8
        entries.append(DeletionVectorEntry(pos, size, used if dv.bitmap64 else size, dv.cardinality,
                                           dv.bitmap64, crc, dv))
        pos += used
    return DeletionVectorFile(name, total, version, tuple(entries))


def read_deletion_vectors(source: ByteSource | bytes | bytearray | memoryview,
                          metas: Iterable[DeletionVectorMeta],
                          bitmap64: bool | None = None) -> dict[str, DeletionVector]:
    """The DVs of several data files of one index file, keyed by data file name.

    On a source that reads ahead (an object store), the ranges are fetched in one request.
    """
    metas = list(metas)
    if len(metas) > 1 and getattr(source, "readahead", 0) > 0:
        start = min(m.offset for m in metas)
        source.prefetch(start, max(m.offset + m.length + 8 for m in metas) - start)
    return {m.data_file: read_deletion_vector(source, m.offset, m.length, bitmap64) for m in metas}


# --------------------------------------------------------------------------- writing


def _sorted_positions(positions: BitMap | BitMap64 | Iterable[int], bitmap64: bool) -> np.ndarray:
    if isinstance(positions, BitMap | BitMap64):
        dtype = np.uint32 if isinstance(positions, BitMap) else np.uint64
        arr = np.frombuffer(positions.to_array(), dtype=dtype)
    else:
        values = positions if isinstance(positions, np.ndarray) else np.fromiter(
            (int(p) for p in positions), dtype=np.int64)
        if values.size and (values.min() < 0):
            raise ValueError("deletion vector positions must not be negative")
        arr = np.sort(values.astype(np.uint64))
        if arr.size > 1:
            arr = arr[np.concatenate(([True], arr[1:] != arr[:-1]))]
    limit = MAX_POSITION_64 if bitmap64 else MAX_POSITION_32
    if arr.size and int(arr[-1]) > limit:
        kind = "64" if bitmap64 else "32"
        raise ValueError(f"position {int(arr[-1])} exceeds the {kind}-bit deletion vector limit {limit}")
    return arr


def _encode(positions: BitMap | BitMap64 | Iterable[int], bitmap64: bool) -> tuple[bytes, int]:
    arr = _sorted_positions(positions, bitmap64)
    if not bitmap64:
        data = _MAGIC_32_BYTES + roaring.serialize_optimized(bulk.bitmap_of(arr), copy=False)
    else:
        arr = arr.astype(np.uint64)
        keys = arr >> np.uint64(32)
        count = int(keys[-1]) + 1 if arr.size else 0
        bounds = np.searchsorted(keys, np.arange(count + 1, dtype=np.uint64))
        parts = [_MAGIC_64_BYTES, count.to_bytes(8, "little")]
        for key in range(count):
            low = arr[bounds[key]:bounds[key + 1]] & np.uint64(0xFFFFFFFF)
            parts.append(key.to_bytes(4, "little"))
            parts.append(roaring.serialize_optimized(bulk.bitmap_of(low), copy=False))
        data = b"".join(parts)
    record = len(data).to_bytes(4, "big") + data + zlib.crc32(data).to_bytes(4, "big")
    return record, int(arr.size)


def serialize_deletion_vector(positions: BitMap | BitMap64 | Iterable[int], bitmap64: bool = False) -> bytes:
    """``len | data | crc`` for one DV, byte-identical to Paimon's serializer (run-optimized).

    A 64-bit DV holds a bitmap for every key from 0 to the largest, as Paimon writes it.
    """
    return _encode(positions, bitmap64)[0]


def write_deletion_vector_file(dvs: Iterable[tuple[str, BitMap | BitMap64 | Iterable[int]]],
                               bitmap64: bool = False) -> tuple[bytes, list[DeletionVectorMeta]]:
    """A whole DV index file plus the ``DeletionVectorMeta`` Paimon records for each data file."""
    parts = [bytes([VERSION])]
    metas = []
    pos = 1
    for data_file, positions in dvs:
        record, cardinality = _encode(positions, bitmap64)
        length = len(record) if bitmap64 else len(record) - 8
        metas.append(DeletionVectorMeta(data_file, pos, length, cardinality))
        parts.append(record)
        pos += len(record)
    return b"".join(parts), metas
