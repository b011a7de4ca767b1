"""Paimon's ``BinaryRow`` bytes and hash, for partitions, keys, stats and bucket assignment.

Layout (paimon-common ``BinaryRow`` / ``BinaryRowWriter``): a header of null bits (the first
byte holds the RowKind), one 8-byte slot per field, then a variable part aligned to 8 bytes.
Strings of up to 7 bytes sit inside their slot with ``0x80 | length`` in the slot's last byte;
longer ones store ``offset << 32 | length`` in the slot. Manifests store a row as a 4-byte
big-endian arity followed by the row bytes (``SerializationUtils.serializeBinaryRow``).

The hash is ``MurmurHashUtils.hashBytesByWords`` (seed 42, little-endian int words) over the
row bytes; a fixed bucket is ``abs(hash % numBuckets)`` with Java's remainder.
"""

from __future__ import annotations

import decimal
import struct
from collections.abc import Sequence
from typing import Any

from ..errors import UnsupportedError
from ..types import DataType, Timestamp, decimal_unscaled, float32

_MASK = 0xFFFFFFFF


def null_bits_size(arity: int) -> int:
    """Bytes of the header (RowKind byte plus one null bit per field), rounded to words."""
    return ((arity + 63 + 8) // 64) * 8


def _is_compact_decimal(dtype: DataType) -> bool:
    return (dtype.precision or 10) <= 18


def _is_compact_timestamp(dtype: DataType) -> bool:
    return (dtype.precision if dtype.precision is not None else 6) <= 3


def binary_row(values: Sequence[Any], types: Sequence[DataType]) -> bytes:
    """The bytes of a ``BinaryRow`` holding ``values`` (internal values, ``None`` = null)."""
    arity = len(types)
    head = null_bits_size(arity)
    fixed = bytearray(head + 8 * arity)
    var = bytearray()

    def var_offset() -> int:
        return len(fixed) + len(var)

    def put_var(data: bytes, reserve: int | None = None) -> int:
        offset = var_offset()
        size = reserve if reserve is not None else len(data)
        padded = (size + 7) // 8 * 8
        var.extend(data + b"\x00" * (padded - len(data)))
        return offset

    for i, (value, dtype) in enumerate(zip(values, types, strict=True)):
        slot = head + 8 * i
        root = dtype.root
        if value is None:
            bit = i + 8
            fixed[bit // 8] |= 1 << (bit % 8)
            if root == "DECIMAL" and not _is_compact_decimal(dtype):
                struct.pack_into("<q", fixed, slot, put_var(b"", reserve=16) << 32)
            elif root in ("TIMESTAMP", "TIMESTAMP_LTZ") and not _is_compact_timestamp(dtype):
                struct.pack_into("<q", fixed, slot, put_var(b"", reserve=8) << 32)
            continue
        if root == "BOOLEAN":
            fixed[slot] = 1 if value else 0
        elif root == "TINYINT":
            struct.pack_into("<b", fixed, slot, value)
        elif root == "SMALLINT":
            struct.pack_into("<h", fixed, slot, value)
        elif root in ("INT", "DATE", "TIME"):
            struct.pack_into("<i", fixed, slot, value)
        elif root == "BIGINT":
            struct.pack_into("<q", fixed, slot, value)
        elif root == "FLOAT":
            struct.pack_into("<f", fixed, slot, float32(value))
        elif root == "DOUBLE":
            struct.pack_into("<d", fixed, slot, value)
        elif root in ("CHAR", "VARCHAR", "BINARY", "VARBINARY"):
            data = value.encode("utf-8") if isinstance(value, str) else bytes(value)
            if len(data) <= 7:
                fixed[slot:slot + len(data)] = data
                fixed[slot + 7] = 0x80 | len(data)
            else:
                struct.pack_into("<q", fixed, slot, (put_var(data) << 32) | len(data))
        elif root == "DECIMAL":
            unscaled = decimal_unscaled(dtype, decimal.Decimal(value))
            if _is_compact_decimal(dtype):
                struct.pack_into("<q", fixed, slot, unscaled)
            else:
                raw = unscaled.to_bytes((unscaled.bit_length() + 8) // 8 or 1, "big", signed=True)
                struct.pack_into("<q", fixed, slot, (put_var(raw, reserve=16) << 32) | len(raw))
        elif root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
            ts = value if isinstance(value, Timestamp) else Timestamp(int(value))
            if _is_compact_timestamp(dtype):
                struct.pack_into("<q", fixed, slot, ts.millis)
            else:
                offset = put_var(struct.pack("<q", ts.millis))
                struct.pack_into("<q", fixed, slot, (offset << 32) | ts.nanos)
        else:
            raise UnsupportedError(f"cannot write {dtype} into a BinaryRow")
    return bytes(fixed + var)


def serialize_binary_row(values: Sequence[Any], types: Sequence[DataType]) -> bytes:
    """What manifests store: big-endian arity, then the row bytes."""
    return struct.pack(">i", len(types)) + binary_row(values, types)


EMPTY_ROW = serialize_binary_row((), ())


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _MASK


def hash_bytes_by_words(data: bytes, seed: int = 42) -> int:
    """Paimon's ``MurmurHashUtils.hashBytesByWords`` as a signed Java int."""
    if len(data) % 4:
        raise ValueError("hashBytesByWords needs a multiple of 4 bytes")
    h1 = seed
    for (word,) in struct.iter_unpack("<I", data):
        k1 = _rotl((word * 0xCC9E2D51) & _MASK, 15)
        k1 = (k1 * 0x1B873593) & _MASK
        h1 = _rotl(h1 ^ k1, 13)
        h1 = (h1 * 5 + 0xE6546B64) & _MASK
    h1 ^= len(data)
    h1 ^= h1 >> 16
    h1 = (h1 * 0x85EBCA6B) & _MASK
    h1 ^= h1 >> 13
    h1 = (h1 * 0xC2B2AE35) & _MASK
    h1 ^= h1 >> 16
    return h1 - (1 << 32) if h1 & 0x80000000 else h1


def key_hash(key_values: Sequence[Any], key_types: Sequence[DataType]) -> int:
    """``BinaryRow.hashCode()`` of a key row: what fixed and dynamic buckets are chosen by."""
    return hash_bytes_by_words(binary_row(key_values, key_types))


def bucket_of(hash_code: int, num_buckets: int) -> int:
    """``Math.abs(hash % numBuckets)`` with Java's truncating remainder."""
    rem = abs(hash_code) % num_buckets
    return rem
