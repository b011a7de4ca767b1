"""Dynamic-bucket hash index files: the primary-key hashes of one bucket.

The file is nothing but 4-byte big-endian int hashes back to back (``HASH_VALUE | HASH_VALUE |
...``); Paimon uses it to find which bucket already holds a key when ``bucket = -1``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from indexcore.errors import CorruptFileError
from indexcore.io import ByteSource

_BE_INT32 = np.dtype(">i4")


@dataclass(frozen=True, eq=False)
class HashIndex:
    """The hashes of one hash index file, in file order (native int32)."""

    hashes: np.ndarray = field(repr=False)
    name: str = "<memory>"

    @property
    def count(self) -> int:
        return int(self.hashes.size)

    def __contains__(self, key_hash: int) -> bool:
        return bool(np.any(self.hashes == np.int32(key_hash)))

    def summary(self) -> dict:
        distinct = int(np.unique(self.hashes).size)
        return {
            "count": self.count,
            "distinct": distinct,
            "duplicates": self.count - distinct,
            "min": int(self.hashes.min()) if self.count else None,
            "max": int(self.hashes.max()) if self.count else None,
        }


def read_hash_index(source: ByteSource | bytes | bytearray | memoryview) -> HashIndex:
    """Decode a whole hash index file; a length that is not a multiple of 4 is corruption."""
    if isinstance(source, bytes | bytearray | memoryview):
        data, name = bytes(source), "<memory>"
    else:
        name = source.name
        if source.size % 4:
            raise CorruptFileError(f"size {source.size} is not a multiple of 4", file=name,
                                   structure="hash index", offset=source.size - source.size % 4)
        data = source.read(0, source.size, "hash index")
    if len(data) % 4:
        raise CorruptFileError(f"size {len(data)} is not a multiple of 4", file=name,
                               structure="hash index", offset=len(data) - len(data) % 4)
    return HashIndex(np.frombuffer(data, dtype=_BE_INT32).astype(np.int32), name)


def write_hash_index(hashes: Iterable[int]) -> bytes:
    """The bytes Paimon writes for these hashes (each an int32, big-endian)."""
    arr = hashes if isinstance(hashes, np.ndarray) else np.fromiter((int(h) for h in hashes), dtype=np.int64)
    if arr.size and (arr.min() < -(2**31) or arr.max() > 2**31 - 1):
        raise ValueError("hash index values must fit in a 32-bit signed int")
    return arr.astype(_BE_INT32).tobytes()
