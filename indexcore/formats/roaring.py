"""Portable 32-bit RoaringBitmaps as Paimon stores them, once for every format.

Bitmap, range-bitmap, BSI and deletion-vector files embed bitmaps in the portable format
(shared by CRoaring, pyroaring and Java's RoaringBitmap). :func:`portable_size` reads only a
bitmap's header to find where it ends (formats that store bitmaps back to back need that);
:func:`deserialize` turns a malformed bitmap into our own error; :func:`serialize_optimized`
writes as Paimon's ``RoaringBitmap32.serialize()`` does (run-optimized first);
:func:`bitmap64_from_array` builds a row-id bitmap from a numpy array in one pass.
"""

from __future__ import annotations

import array
import struct

import numpy as np
from pyroaring import BitMap, BitMap64

from indexcore.errors import CorruptFileError

COOKIE_NO_RUN = 12346
COOKIE_RUN = 12347
#: With run containers, the offset table is present only from this many containers on.
NO_OFFSET_THRESHOLD = 4
ARRAY_MAX = 4096
BITMAP_CONTAINER_BYTES = 8192
MAX_CONTAINERS = 65536
STRUCTURE = "32-bit roaring bitmap"


_U16 = struct.Struct("<H")
_U32 = struct.Struct("<I")


def _u16(buf, pos: int) -> int:
    return _U16.unpack_from(buf, pos)[0]


def _u32(buf, pos: int) -> int:
    return _U32.unpack_from(buf, pos)[0]


def _truncated(what: str, nbytes: int, pos: int, end: int, file: str, structure: str, base: int) -> CorruptFileError:
    return CorruptFileError(f"truncated {what}: needs {nbytes} bytes, {max(end - pos, 0)} left",
                            file=file, structure=structure, offset=base + pos)


def portable_size(buf: bytes | memoryview, start: int, end: int, file: str, structure: str = STRUCTURE,
                  base: int = 0) -> int:
    """Byte size of the portable roaring bitmap at ``buf[start:]``, which must end by ``end``.

    Only the header is read: with the offset table present the size is the last offset plus
    the last container's size (O(1) in the containers). ``base`` is ``buf``'s absolute offset
    in the file, for errors. (Called once per bitmap of every BSI and range-bitmap blob a reader
    opens, so it is written with ``struct`` and plain comparisons.)
    """
    if start + 4 > end:
        raise _truncated("cookie", 4, start, end, file, structure, base)
    cookie = _U32.unpack_from(buf, start)[0]
    if cookie & 0xFFFF == COOKIE_RUN:
        count = (cookie >> 16) + 1
        flags_at = start + 4
        flags_len = (count + 7) // 8
        if flags_at + flags_len > end:
            raise _truncated("run-container flags", flags_len, flags_at, end, file, structure, base)
        pos = flags_at + flags_len
        has_offsets = count >= NO_OFFSET_THRESHOLD
    elif cookie == COOKIE_NO_RUN:
        if start + 8 > end:
            raise _truncated("container count", 4, start + 4, end, file, structure, base)
        count = _U32.unpack_from(buf, start + 4)[0]
        if count > MAX_CONTAINERS:
            raise CorruptFileError(f"impossible container count {count}", file=file, structure=structure,
                                   offset=base + start + 4)
        flags_at = -1
        pos = start + 8
        has_offsets = True
    else:
        raise CorruptFileError(f"not a portable roaring bitmap (cookie {cookie})", file=file,
                               structure=structure, offset=base + start)
    keys_at = pos
    if keys_at + 4 * count > end:
        raise _truncated("container keys", 4 * count, keys_at, end, file, structure, base)
    pos += 4 * count
    offsets_at = pos
    if has_offsets:
        if offsets_at + 4 * count > end:
            raise _truncated("container offsets", 4 * count, offsets_at, end, file, structure, base)
        pos += 4 * count
    if count == 0:
        return pos - start
    if has_offsets:
        first = _U32.unpack_from(buf, offsets_at)[0]
        if first != pos - start:
            raise CorruptFileError(f"first container offset {first} does not follow the header ({pos - start})",
                                   file=file, structure=structure, offset=base + offsets_at)
        last = _U32.unpack_from(buf, offsets_at + 4 * (count - 1))[0]
        size = last + _container_size(buf, keys_at, flags_at, count - 1, start + last, end, file, structure, base)
    else:
        at = pos
        for i in range(count):
            at += _container_size(buf, keys_at, flags_at, i, at, end, file, structure, base)
        size = at - start
    if start + size > end:
        raise _truncated("containers", size, start, end, file, structure, base)
    return size


def _container_size(buf, keys_at: int, flags_at: int, i: int, at: int, end: int, file: str, structure: str,
                    base: int) -> int:
    """Bytes of container ``i`` (at ``at``) of the portable bitmap whose keys start at ``keys_at``
    (``flags_at`` < 0: no run-container flags)."""
    if flags_at >= 0 and (buf[flags_at + i // 8] >> (i % 8)) & 1:
        if at + 2 > end:
            raise _truncated("run container", 2, at, end, file, structure, base)
        return 2 + 4 * _U16.unpack_from(buf, at)[0]
    cardinality = _U16.unpack_from(buf, keys_at + 4 * i + 2)[0] + 1
    return 2 * cardinality if cardinality <= ARRAY_MAX else BITMAP_CONTAINER_BYTES


def deserialize(data: bytes | memoryview, file: str, structure: str = STRUCTURE, offset: int = 0,
                kind: type = BitMap):
    """A portable bitmap (``kind``: pyroaring's ``BitMap`` or ``BitMap64``); a malformed one is a
    :class:`CorruptFileError` at ``offset``."""
    try:
        return kind.deserialize(data)
    except Exception as exc:  # noqa: BLE001 - pyroaring's errors for bad input are not a documented set
        raise CorruptFileError(f"invalid roaring bitmap: {exc} (not a valid portable RoaringBitmap)",
                               file=file, structure=structure, offset=offset) from exc


def serialize_optimized(bitmap: BitMap, copy: bool = True) -> bytes:
    """Paimon's ``RoaringBitmap32.serialize()``: run-optimized, then the portable format
    (``copy=False`` optimizes ``bitmap`` itself)."""
    if copy:
        bitmap = BitMap(bitmap)
    bitmap.run_optimize()
    return bitmap.serialize()


# ------------------------------------------------------------------------------------------
# Bitmaps built from arrays of row ids

#: Below this many ids a plain list is the quickest way in.
_SMALL = 64
#: The dense build allocates at most this many mask bytes per id (else pyroaring's own path).
_DENSE_BYTES_PER_ID = 64
_PORTABLE_HEAD = struct.Struct("<II")


def _portable_from_mask(rows: np.ndarray, first_key: int) -> bytes:
    """The portable serialization of a bitmap given as a bool mask, 65,536 values per row."""
    cards = np.count_nonzero(rows, axis=1)
    present = np.flatnonzero(cards)
    used = cards[present]
    bodies = [np.flatnonzero(rows[c]).astype("<u2").tobytes() if card <= ARRAY_MAX
              else np.packbits(rows[c], bitorder="little").tobytes()
              for c, card in zip(present.tolist(), used.tolist(), strict=True)]
    n = len(present)
    desc = np.empty(2 * n, "<u2")
    desc[0::2] = present + first_key
    desc[1::2] = used - 1
    sizes = np.where(used <= ARRAY_MAX, 2 * used, BITMAP_CONTAINER_BYTES)
    offsets = (8 + 8 * n + np.concatenate(([0], np.cumsum(sizes)[:-1]))).astype("<u4")
    return _PORTABLE_HEAD.pack(COOKIE_NO_RUN, n) + desc.tobytes() + offsets.tobytes() + b"".join(bodies)


def bitmap64_from_array(ids: np.ndarray) -> BitMap64:
    """A ``BitMap64`` of the (non-negative, any order, repeats allowed) ids of an integer array.

    Clustered ids (a row-id range: at most 64 possible values per id) are set in a bool mask and
    written straight to the portable format, which pyroaring then deserializes: 4-10x quicker
    than pyroaring adding them one by one. Sparse or huge ids go through pyroaring's own path.
    """
    n = len(ids)
    if n < _SMALL:
        return BitMap64(ids.tolist())
    lo, hi = int(ids.min()), int(ids.max())
    if lo < 0:
        raise ValueError(f"row id {lo} is negative")
    first_key = lo >> 16
    if (hi >> 32) != (lo >> 32) or hi - lo > _DENSE_BYTES_PER_ID * n:
        return BitMap64(array.array("Q", ids.astype(np.uint64).tobytes()))
    rel = ids.astype(np.int64) - (first_key << 16)
    containers = (int(rel.max()) >> 16) + 1
    mask = np.zeros(containers << 16, np.bool_)
    mask[rel] = True
    bucket = (lo >> 32).to_bytes(4, "little")
    body = _portable_from_mask(mask.reshape(containers, 65536), first_key & 0xFFFF)
    return BitMap64.deserialize((1).to_bytes(8, "little") + bucket + body)
