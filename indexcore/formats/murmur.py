"""Paimon's ``MurmurHashUtils`` (32-bit MurmurHash3, seed 42, little-endian words), once.

``BinaryString.hashCode`` (bitmap index key order) is :func:`hash_bytes`; ``BinaryRow.hashCode``
(fixed and dynamic buckets) is :func:`hash_bytes_by_words` over the row's 4-byte-aligned bytes.
"""

from __future__ import annotations

import struct

import numpy as np

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


def hash_bytes_many(keys: list[bytes], seed: int = DEFAULT_SEED) -> list[int]:
    """:func:`hash_bytes` of each key, vectorised over the keys (a bitmap writer hashes every
    distinct string key of every file): step ``j`` of every key at once, where a key's steps are
    its whole words, then its tail bytes (sign-extended), as in :func:`hash_bytes`."""
    if len(keys) < 8:  # numpy's set-up costs more than a few keys
        return [hash_bytes(k, seed) for k in keys]
    lengths = np.fromiter(map(len, keys), np.int64, len(keys))
    words, tails = lengths // 4, lengths % 4
    steps = words + tails
    width = int(steps.max())
    width = max(width, 1)
    padded = 4 * max(width, int(lengths.max()) // 4 + 1)  # every word step and tail byte inside
    raw = np.zeros((len(keys), padded), np.uint8)
    flat = np.frombuffer(b"".join(keys), np.uint8)
    rows = np.repeat(np.arange(len(keys)), lengths)
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    raw[rows, np.arange(len(flat)) - np.repeat(starts, lengths)] = flat
    k1s = raw.view("<u4")[:, :width].astype(np.uint64)  # word steps; the others are set below
    index = np.arange(width)
    # tail bytes: step j (j >= words) is byte 4 * words + (j - words), sign-extended to 32 bits
    is_tail = (index[None, :] >= words[:, None]) & (index[None, :] < steps[:, None])
    r, c = np.nonzero(is_tail)
    byte = raw[r, 4 * words[r] + c - words[r]].astype(np.int64)
    k1s[r, c] = (np.where(byte > 127, byte - 256, byte) & _MASK).astype(np.uint64)
    m = np.uint64(_MASK)
    h = np.full(len(keys), seed, np.uint64)
    for j in range(width):
        live = steps > j
        k1 = (k1s[:, j] * np.uint64(0xCC9E2D51)) & m
        k1 = (((k1 << np.uint64(15)) | (k1 >> np.uint64(17))) & m) * np.uint64(0x1B873593) & m
        g = h ^ k1
        g = ((g << np.uint64(13)) | (g >> np.uint64(19))) & m
        g = (g * np.uint64(5) + np.uint64(0xE6546B64)) & m
        h = np.where(live, g, h)
    h ^= lengths.astype(np.uint64)
    h ^= h >> np.uint64(16)
    h = (h * np.uint64(0x85EBCA6B)) & m
    h ^= h >> np.uint64(13)
    h = (h * np.uint64(0xC2B2AE35)) & m
    return (h ^ (h >> np.uint64(16))).tolist()
