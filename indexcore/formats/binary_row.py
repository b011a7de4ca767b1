"""Paimon's ``BinaryRow``: the bytes of partitions, keys and min/max stats, and their hash.

Layout (paimon-common ``BinaryRow`` / ``BinaryRowWriter``): a header of null bits, one 8-byte
slot per field, then a variable part; all values little-endian. The header is rounded up to
8-byte words and holds the RowKind in its first byte, so field ``i``'s null bit is bit
``i + 8``. Fixed-size values (booleans, integers, floats, dates, times, compact decimals of
precision <= 18 as their unscaled long, compact timestamps of precision <= 3 as epoch millis)
sit in their slot. Strings and binaries of up to 7 bytes sit inside their slot too, with
``0x80 | length`` in the slot's last byte; longer ones go to the variable part and the slot
holds ``offset << 32 | length`` (offset from the row start). A non-compact decimal stores its
unscaled value as minimal big-endian two's complement bytes in a 16-byte reserved area; a
non-compact timestamp stores its epoch millis (8 bytes) in the variable part and the slot
holds ``offset << 32 | nanos of the millisecond``. Each variable-part piece is padded to 8
bytes. A null non-compact decimal or timestamp keeps its zeroed area (slot ``offset << 32``)
when written by Paimon's ``RowHelper`` (current releases); older writers
(``InternalRowSerializer.setNullAt``) left a zero slot and no area. Both decode alike. Manifests store a row as a 4-byte big-endian arity
followed by the row bytes (``SerializationUtils.serializeBinaryRow``).

``BinaryRow.hashCode()`` is ``MurmurHashUtils.hashBytesByWords`` (seed 42, little-endian int
words) over the row bytes; a fixed bucket is ``Math.abs(hash % numBuckets)``.

Writer: :func:`binary_row`, :func:`serialize_binary_row`. Reader: :func:`decode_binary_row`,
:func:`binary_row_arity`. Hash: :func:`hash_bytes_by_words`, :func:`key_hash`, :func:`bucket_of`.
"""

from __future__ import annotations

import decimal
import struct
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from indexcore.cache import LRU
from indexcore.errors import CorruptFileError, UnsupportedError
from indexcore.formats.murmur import hash_bytes_by_words
from indexcore.types import DataType, Timestamp, decimal_from_unscaled, decimal_unscaled, float32


def null_bits_size(arity: int) -> int:
    """Bytes of the header (RowKind byte plus one null bit per field), rounded to words."""
    return ((arity + 63 + 8) // 64) * 8


def is_compact_decimal(dtype: DataType) -> bool:
    """A decimal of precision <= 18 is stored as its unscaled long in the slot."""
    return (dtype.precision or 10) <= 18


def is_compact_timestamp(dtype: DataType) -> bool:
    """A timestamp of precision <= 3 is stored as epoch millis in the slot."""
    return (dtype.precision if dtype.precision is not None else 6) <= 3


def _java_big_endian(unscaled: int) -> bytes:
    """``BigInteger.toByteArray()``: minimal two's complement, at least one byte."""
    bits = (unscaled if unscaled >= 0 else ~unscaled).bit_length()
    return unscaled.to_bytes(bits // 8 + 1, "big", signed=True)


# ---------------------------------------------------------------------------------------------
# Writer


def binary_row(values: Sequence[Any], types: Sequence[DataType], reserve_nulls: bool = True) -> bytes:
    """The bytes of a ``BinaryRow`` holding ``values`` (internal values, ``None`` = null).

    ``reserve_nulls=False`` writes null non-compact decimals/timestamps as older Paimon did.
    """
    arity = len(types)
    head = null_bits_size(arity)
    fixed = bytearray(head + 8 * arity)
    var = bytearray()

    def put_var(data: bytes, reserve: int | None = None) -> int:
        offset = len(fixed) + len(var)
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
            if not reserve_nulls:
                continue
            if root == "DECIMAL" and not is_compact_decimal(dtype):
                struct.pack_into("<q", fixed, slot, put_var(b"", reserve=16) << 32)
            elif root in ("TIMESTAMP", "TIMESTAMP_LTZ") and not is_compact_timestamp(dtype):
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
            if is_compact_decimal(dtype):
                struct.pack_into("<q", fixed, slot, unscaled)
            else:
                raw = _java_big_endian(unscaled)
                struct.pack_into("<q", fixed, slot, (put_var(raw, reserve=16) << 32) | len(raw))
        elif root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
            ts = value if isinstance(value, Timestamp) else Timestamp(int(value))
            if is_compact_timestamp(dtype):
                struct.pack_into("<q", fixed, slot, ts.millis)
            else:
                offset = put_var(struct.pack("<q", ts.millis))
                struct.pack_into("<q", fixed, slot, (offset << 32) | ts.nanos)
        else:
            raise UnsupportedError(f"cannot write {dtype} into a BinaryRow")
    return bytes(fixed + var)


def serialize_binary_row(values: Sequence[Any], types: Sequence[DataType], reserve_nulls: bool = True) -> bytes:
    """What manifests store: big-endian arity, then the row bytes."""
    return struct.pack(">i", len(types)) + binary_row(values, types, reserve_nulls)


EMPTY_ROW = serialize_binary_row((), ())


# ---------------------------------------------------------------------------------------------
# Reader

_LE_I16 = struct.Struct("<h").unpack_from
_LE_I32 = struct.Struct("<i").unpack_from
_LE_I64 = struct.Struct("<q").unpack_from
_LE_U64 = struct.Struct("<Q").unpack_from
_LE_F32 = struct.Struct("<f").unpack_from
_LE_F64 = struct.Struct("<d").unpack_from


def _var_bytes(raw: bytes, base: int, off: int) -> bytes:
    (slot,) = _LE_U64(raw, off)
    if slot & 0x8000000000000000:  # at most 7 bytes, stored in the slot itself
        length = (slot >> 56) & 0x7F
        return raw[off:off + length]
    start = base + (slot >> 32)
    length = slot & 0xFFFFFFFF
    if start + length > len(raw):
        raise CorruptFileError("variable-length field runs past the row", structure="BinaryRow",
                               offset=start)
    return raw[start:start + length]


def _field_reader(dtype: DataType) -> Callable[[bytes, int, int], Any] | None:
    """A reader ``(raw, row start, slot offset) -> value`` for one field type."""
    root = dtype.root
    if root == "BOOLEAN":
        return lambda raw, base, off: raw[off] != 0
    if root == "TINYINT":
        return lambda raw, base, off: raw[off] - 256 if raw[off] > 127 else raw[off]
    if root == "SMALLINT":
        return lambda raw, base, off: _LE_I16(raw, off)[0]
    if root in ("INT", "DATE", "TIME"):
        return lambda raw, base, off: _LE_I32(raw, off)[0]
    if root == "BIGINT":
        return lambda raw, base, off: _LE_I64(raw, off)[0]
    if root == "FLOAT":
        return lambda raw, base, off: _LE_F32(raw, off)[0]
    if root == "DOUBLE":
        return lambda raw, base, off: _LE_F64(raw, off)[0]
    if root in ("CHAR", "VARCHAR"):
        return lambda raw, base, off: _var_bytes(raw, base, off).decode("utf-8", "replace")
    if root in ("BINARY", "VARBINARY"):
        return lambda raw, base, off: bytes(_var_bytes(raw, base, off))
    if root == "DECIMAL":
        if is_compact_decimal(dtype):
            return lambda raw, base, off: decimal_from_unscaled(dtype, _LE_I64(raw, off)[0])
        return lambda raw, base, off: decimal_from_unscaled(
            dtype, int.from_bytes(_var_bytes(raw, base, off), "big", signed=True))
    if root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        if is_compact_timestamp(dtype):
            return lambda raw, base, off: Timestamp(_LE_I64(raw, off)[0], 0)

        def read_ts(raw: bytes, base: int, off: int) -> Timestamp:
            (slot,) = _LE_U64(raw, off)
            start = base + (slot >> 32)
            if start + 8 > len(raw):
                raise CorruptFileError("timestamp millis run past the row", structure="BinaryRow",
                                       offset=start)
            return Timestamp(_LE_I64(raw, start)[0], slot & 0xFFFFFFFF)

        return read_ts
    return None  # nested types: Paimon keeps no stats for them


def binary_row_arity(raw: bytes | None) -> int:
    """The arity prefix of a serialized row (0 for missing or too short bytes)."""
    return int.from_bytes(raw[:4], "big") if raw and len(raw) >= 4 else 0


def _row_shape(raw: bytes, name: str) -> tuple[int, int]:
    """A row's arity and null-bit width, checked to fit in ``raw``."""
    arity = int.from_bytes(raw[:4], "big")
    null_width = null_bits_size(arity)
    if 4 + null_width + 8 * arity > len(raw):
        raise CorruptFileError(f"BinaryRow of arity {arity} does not fit in {len(raw)} bytes",
                               structure=name, offset=0)
    return arity, null_width


def decode_binary_row(raw: bytes | None, types: Sequence[DataType], name: str = "BinaryRow") -> tuple:
    """A serialized BinaryRow (arity prefix + row) as a tuple of internal values.

    Fields beyond ``types`` are ignored; missing fields (a shorter row) are ``None``.
    """
    if not raw or len(raw) < 4:
        return (None,) * len(types)
    arity, null_width = _row_shape(raw, name)
    base = 4
    out = []
    for i, reader in enumerate(_row_readers(types)):
        if i >= arity:
            out.append(None)
            continue
        bit = i + 8
        if raw[base + (bit >> 3)] & (1 << (bit & 7)):
            out.append(None)
            continue
        out.append(None if reader is None else reader(raw, base, base + null_width + 8 * i))
    return tuple(out)


def decode_binary_field(raw: bytes | None, i: int, dtype: DataType, name: str = "BinaryRow") -> Any:
    """Field ``i`` of a serialized BinaryRow alone (``None`` when null or beyond the row), as
    :func:`decode_binary_row` would give it: a stats test over one column reads one field."""
    if not raw or len(raw) < 4:
        return None
    arity, null_width = _row_shape(raw, name)
    base = 4
    bit = i + 8
    if i >= arity or raw[base + (bit >> 3)] & (1 << (bit & 7)):
        return None
    reader = _reader_of(dtype)
    return None if reader is None else reader(raw, base, base + null_width + 8 * i)


# field type (by identity) -> (that type, its reader): a stats test reads one field of each of
# 50,000 files' rows, and making its reader anew each time cost more than reading the field
_READER_OF = LRU(4096)


def _reader_of(dtype: DataType) -> Callable[[bytes, int, int], Any] | None:
    hit = _READER_OF.peek(id(dtype))
    if hit is None or hit[0] is not dtype:
        hit = (dtype, _field_reader(dtype))
        _READER_OF.put(id(dtype), hit)
    return hit[1]


# field types (by identity: schemas keep their types) -> (those types, their readers); a
# manifest's 50,000 rows share a few type lists, and hashing types per row costs more than reading
_READERS = LRU(4096)


def _row_readers(types: Sequence[DataType]) -> tuple:
    key = tuple(map(id, types))
    hit = _READERS.peek(key)
    if hit is None or not all(a is b for a, b in zip(hit[0], types, strict=True)):
        hit = (tuple(types), tuple(map(_field_reader, types)))
        _READERS.put(key, hit)
    return hit[1]


# ---------------------------------------------------------------------------------------------
# Hash and bucket


def key_hash(key_values: Sequence[Any], key_types: Sequence[DataType]) -> int:
    """``BinaryRow.hashCode()`` of a key row: what fixed and dynamic buckets are chosen by."""
    return hash_bytes_by_words(binary_row(key_values, key_types))


def bucket_of(hash_code: int, num_buckets: int) -> int:
    """``Math.abs(hash % numBuckets)``: Java's remainder keeps the dividend's sign, so its
    magnitude is ``abs(hash) % numBuckets``."""
    return abs(hash_code) % num_buckets


def long_key_hashes(values: np.ndarray) -> np.ndarray:
    """:func:`key_hash` of one-field rows holding non-null BIGINT ``values``, vectorised: the row is 16 bytes (a zero header word pair, then the long little-endian), so
    MurmurHash3 runs over four words per row at once. Signed 32-bit ints, as Java's."""
    v = np.asarray(values, np.int64).view(np.uint64)
    mask = np.uint64(0xFFFFFFFF)
    h = np.full(len(v), 42, np.uint64)
    for word in (np.zeros(len(v), np.uint64), np.zeros(len(v), np.uint64), v & mask, v >> np.uint64(32)):
        k = (word * np.uint64(0xCC9E2D51)) & mask
        k = (((k << np.uint64(15)) | (k >> np.uint64(17))) & mask) * np.uint64(0x1B873593) & mask
        h ^= k
        h = ((h << np.uint64(13)) | (h >> np.uint64(19))) & mask
        h = (h * np.uint64(5) + np.uint64(0xE6546B64)) & mask
    h ^= np.uint64(16)
    h ^= h >> np.uint64(16)
    h = (h * np.uint64(0x85EBCA6B)) & mask
    h ^= h >> np.uint64(13)
    h = (h * np.uint64(0xC2B2AE35)) & mask
    h ^= h >> np.uint64(16)
    return h.astype(np.uint32).view(np.int32)


def row_key_hashes(keys: Sequence[tuple], key_types: Sequence[DataType]) -> list[int]:
    """:func:`key_hash` of every key row; one BIGINT key column (no nulls) is hashed vectorised."""
    if len(key_types) == 1 and key_types[0].root == "BIGINT" and keys and all(k[0] is not None for k in keys):
        return long_key_hashes(np.fromiter((k[0] for k in keys), np.int64, len(keys))).tolist()
    return [key_hash(k, key_types) for k in keys]
