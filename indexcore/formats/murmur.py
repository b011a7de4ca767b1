"""Paimon's ``MurmurHashUtils`` (32-bit MurmurHash3, seed 42, little-endian words), once.

``BinaryString.hashCode`` (bitmap index key order) is :func:`hash_bytes`; ``BinaryRow.hashCode``
(fixed and dynamic buckets) is :func:`hash_bytes_by_words` over the row's 4-byte-aligned bytes.
"""

from __future__ import annotations

import struct

DEFAULT_SEED = 42
_MASK = 0xFFFFFFFF


def hash_bytes(data: bytes, seed: int = DEFAULT_SEED) -> int:
    """``MurmurHashUtils.hashBytes``: whole words, then each tail byte (sign-extended), as an
    unsigned 32-bit int."""
    h1 = seed
    n = len(data)
    aligned = n - n % 4
    tail = [(b - 256 if b > 127 else b) & _MASK for b in data[aligned:]]
    for k1 in [w for (w,) in struct.iter_unpack("<I", data[:aligned])] + tail:
        k1 = (k1 * 0xCC9E2D51) & _MASK
        k1 = (((k1 << 15) | (k1 >> 17)) & _MASK) * 0x1B873593 & _MASK
        h1 ^= k1
        h1 = ((h1 << 13) | (h1 >> 19)) & _MASK
        h1 = (h1 * 5 + 0xE6546B64) & _MASK
    h1 ^= n
    h1 ^= h1 >> 16
    h1 = (h1 * 0x85EBCA6B) & _MASK
    h1 ^= h1 >> 13
    h1 = (h1 * 0xC2B2AE35) & _MASK
    return h1 ^ (h1 >> 16)


def hash_bytes_by_words(data: bytes, seed: int = DEFAULT_SEED) -> int:
    """``MurmurHashUtils.hashBytesByWords`` (whole words only) as a signed Java int."""
    if len(data) % 4:
        raise ValueError("hashBytesByWords needs a multiple of 4 bytes")
    h = hash_bytes(data, seed)
    return h - (1 << 32) if h & 0x80000000 else h
