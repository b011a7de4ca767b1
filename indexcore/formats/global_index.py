"""What Paimon's sorted global indexes (BTree, bitmap, PK BTree) share.

Global indexes map column values to *row ids* (row tracking), not to positions in one data
file. Their files are built from the same parts: Java var-length ints, blocks closed by a
5-byte trailer (compression byte + CRC32 over block and that byte), keys serialized per column
type (little-endian numbers, UTF-8 strings), 64-bit portable roaring bitmaps of row ids, and a
"sorted index file meta" (first key, last key, has-nulls) kept in the index manifest.
"""

from __future__ import annotations

import decimal
import math
import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pyroaring import BitMap64

from indexcore.errors import CorruptFileError, UnsupportedError
from indexcore.formats.deletion_vector import _deserialize64
from indexcore.types import DataType, Timestamp, decimal_from_unscaled, decimal_unscaled

COMPRESSION_NONE = 0
COMPRESSION_ZSTD = 1
COMPRESSION_LZ4 = 2
COMPRESSION_LZO = 3
COMPRESSION_NAMES = {COMPRESSION_NONE: "none", COMPRESSION_ZSTD: "zstd", COMPRESSION_LZ4: "lz4",
                     COMPRESSION_LZO: "lzo"}
COMPRESSION_CODES = {name: code for code, name in COMPRESSION_NAMES.items()}
TRAILER_LENGTH = 5
ZSTD_LEVEL = 1


# ------------------------------------------------------------------------------------------
# Var-length ints (Paimon's VarLengthIntUtils: 7 bits per byte, low bits first)


def write_var(value: int) -> bytes:
    if value < 0:
        raise ValueError(f"var-length int must not be negative: {value}")
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def read_var(data: bytes | memoryview, pos: int, name: str = "<memory>", structure: str = "var int",
             base: int = 0) -> tuple[int, int]:
    """The var-length int at ``pos`` and the position after it."""
    if pos < len(data) and data[pos] < 0x80:  # one byte: the usual case, without the loop
        return data[pos], pos + 1
    result = shift = 0
    start = pos
    while True:
        if pos >= len(data) or shift > 63:
            raise CorruptFileError("truncated or overlong var-length int", file=name, structure=structure,
                                   offset=base + start)
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7


# ------------------------------------------------------------------------------------------
# Blocks with a trailer


def block_crc(block: bytes | memoryview, compression: int) -> int:
    return zlib.crc32(bytes([compression & 0xFF]), zlib.crc32(block)) & 0xFFFFFFFF


def open_block(raw: bytes, name: str, structure: str, offset: int) -> bytes:
    """A block plus its 5-byte trailer as stored -> the uncompressed block, CRC checked."""
    if len(raw) < TRAILER_LENGTH:
        raise CorruptFileError("block shorter than its trailer", file=name, structure=structure, offset=offset)
    block, compression = raw[:-TRAILER_LENGTH], raw[-TRAILER_LENGTH]
    crc = int.from_bytes(raw[-4:], "little")
    if block_crc(block, compression) != crc:
        raise CorruptFileError(f"block CRC {block_crc(block, compression):#010x} does not match the stored "
                               f"{crc:#010x}", file=name, structure=structure, offset=offset + len(block))
    if compression == COMPRESSION_NONE:
        return block
    if compression not in (COMPRESSION_ZSTD, COMPRESSION_LZ4):
        raise UnsupportedError(f"block compression {COMPRESSION_NAMES.get(compression, compression)} is not "
                               "decoded by indexcore", file=name, structure=structure, offset=offset)
    expected, pos = read_var(block, 0, name, structure, offset)
    try:
        if compression == COMPRESSION_ZSTD:
            import zstandard

            out = zstandard.ZstdDecompressor().decompress(block[pos:], max_output_size=expected)
        else:
            import lz4.block

            if len(block) - pos < 8:
                raise CorruptFileError("lz4 block header truncated", file=name, structure=structure,
                                       offset=offset + pos)
            compressed_len, original_len = struct.unpack_from("<ii", block, pos)
            if original_len != expected or compressed_len < 0 or pos + 8 + compressed_len > len(block):
                raise CorruptFileError(f"lz4 header lengths {compressed_len}/{original_len} do not fit",
                                       file=name, structure=structure, offset=offset + pos)
            out = lz4.block.decompress(block[pos + 8:pos + 8 + compressed_len], uncompressed_size=original_len)
    except CorruptFileError:
        raise
    except Exception as exc:
        raise CorruptFileError(f"{COMPRESSION_NAMES[compression]} block does not decompress: {exc}",
                               file=name, structure=structure, offset=offset) from exc
    if len(out) != expected:
        raise CorruptFileError(f"block decompressed to {len(out)} bytes, expected {expected}", file=name,
                               structure=structure, offset=offset)
    return out


def close_block(block: bytes, compression: str = "none") -> bytes:
    """The bytes Paimon writes for one block: optionally compressed, then the trailer."""
    code = COMPRESSION_CODES.get(compression.lower())
    if code is None or code == COMPRESSION_LZO:
        raise UnsupportedError(f"block compression {compression!r} is not written by indexcore")
    packed = block
    if code == COMPRESSION_ZSTD:
        import zstandard

        # a streamed frame (no content size), as zstd-jni writes it
        stream = zstandard.ZstdCompressor(level=ZSTD_LEVEL).compressobj()
        packed = write_var(len(block)) + stream.compress(block) + stream.flush()
    elif code == COMPRESSION_LZ4:
        import lz4.block

        body = lz4.block.compress(block, store_size=False)
        packed = write_var(len(block)) + struct.pack("<ii", len(body), len(block)) + body
    # like Paimon, keep a block raw unless compression saves at least an eighth of it
    if code != COMPRESSION_NONE and len(packed) >= len(block) - len(block) // 8:
        packed, code = block, COMPRESSION_NONE
    return packed + bytes([code]) + block_crc(packed, code).to_bytes(4, "little")


def check_regions(name: str, end: int, structure: str, regions: list[tuple[str, int, int]]) -> None:
    """Every ``(what, offset, length)`` a footer points at must lie before the footer (``end``)."""
    for what, off, n in regions:
        if off < 0 or n < 0 or off + n > end:
            raise CorruptFileError(f"{what} at {off} (+{n}) runs into the footer", file=name, structure=structure,
                                   offset=end)


# ------------------------------------------------------------------------------------------
# Row-id bitmaps


def read_bitmap64(data: bytes | memoryview, name: str, offset: int) -> BitMap64:
    """A portable 64-bit roaring bitmap (Java ``RoaringNavigableMap64`` serialization); ``data``
    may be a memoryview slice of a larger read (no copy)."""
    view = data if isinstance(data, memoryview) else memoryview(data)
    return _deserialize64(view, 0, len(view), offset, name)


# ------------------------------------------------------------------------------------------
# Keys


@dataclass(frozen=True)
class KeyCodec:
    """Serializes one column type's internal values to index keys and back, and orders them."""

    dtype: DataType
    encode: Callable[[Any], bytes]
    decode: Callable[[bytes], Any]
    order: Callable[[Any], Any]


def _float_order(value: float) -> tuple:
    """Java's ``Float.compare`` order: -0.0 before 0.0, NaN after everything."""
    return (1, 0.0, 0.0) if math.isnan(value) else (0, value, math.copysign(1.0, value))


def _fixed(fmt: str) -> tuple[Callable[[Any], bytes], Callable[[bytes], Any]]:
    s = struct.Struct(fmt)
    return (lambda v: s.pack(v)), (lambda b: s.unpack(b)[0])


def decode_key(codec: KeyCodec, raw: bytes, name: str, structure: str, offset: int) -> Any:
    """A serialized key -> its value; bytes that do not decode as the column's type are a
    CorruptFileError naming where they are."""
    try:
        return codec.decode(raw)
    except (struct.error, ValueError, OverflowError, ArithmeticError) as exc:
        raise CorruptFileError(f"key of {len(raw)} bytes does not decode as {codec.dtype.sql()} ({exc})", file=name,
                               structure=structure, offset=offset) from None


def key_codec(dtype: DataType) -> KeyCodec:
    """Paimon's global-index ``KeySerializer`` for ``dtype`` (values in indexcore's internal form)."""
    r = dtype.root
    fixed = {"TINYINT": "<b", "SMALLINT": "<h", "INT": "<i", "BIGINT": "<q", "DATE": "<i", "TIME": "<i",
             "FLOAT": "<f", "DOUBLE": "<d"}
    if r in fixed:
        enc, dec = _fixed(fixed[r])
        order = _float_order if r in ("FLOAT", "DOUBLE") else (lambda v: v)
        return KeyCodec(dtype, enc, dec, order)
    if r == "BOOLEAN":
        return KeyCodec(dtype, lambda v: b"\x01" if v else b"\x00", lambda b: b[:1] == b"\x01", bool)
    if r in ("CHAR", "VARCHAR"):
        return KeyCodec(dtype, lambda v: v.encode("utf-8"), lambda b: bytes(b).decode("utf-8", "replace"),
                        lambda v: v.encode("utf-8"))
    if r in ("BINARY", "VARBINARY"):
        return KeyCodec(dtype, bytes, bytes, bytes)
    if r == "DECIMAL":
        compact = (dtype.precision or 10) <= 18

        def enc_dec(v: decimal.Decimal) -> bytes:
            unscaled = decimal_unscaled(dtype, v)
            if compact:
                return struct.pack("<q", unscaled)
            return unscaled.to_bytes(max(1, (unscaled.bit_length() + 8) // 8), "big", signed=True)

        def dec_dec(b: bytes) -> decimal.Decimal:
            unscaled = struct.unpack("<q", b)[0] if compact else int.from_bytes(b, "big", signed=True)
            return decimal_from_unscaled(dtype, unscaled)

        return KeyCodec(dtype, enc_dec, dec_dec, lambda v: v)
    if r in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        precise = (dtype.precision if dtype.precision is not None else 6) > 3

        def enc_ts(v: Timestamp) -> bytes:
            return struct.pack("<q", v.millis) + (write_var(v.nanos) if precise else b"")

        def dec_ts(b: bytes) -> Timestamp:
            nanos = read_var(b, 8)[0] if precise and len(b) > 8 else 0
            return Timestamp(struct.unpack_from("<q", b)[0], nanos)

        return KeyCodec(dtype, enc_ts, dec_ts, lambda v: v)
    raise UnsupportedError(f"global index keys of type {dtype.sql()} are not supported")


# ------------------------------------------------------------------------------------------
# The meta kept in the index manifest


@dataclass(frozen=True)
class SortedIndexFileMeta:
    """First and last key (serialized; None when absent) and whether the file holds nulls."""

    first_key: bytes | None
    last_key: bytes | None
    has_nulls: bool

    @property
    def only_nulls(self) -> bool:
        return self.first_key is None and self.last_key is None

    def serialize(self) -> bytes:
        out = bytearray()
        flags = 0
        for bit, key in ((1, self.first_key), (2, self.last_key)):
            out += struct.pack("<I", 0 if key is None else len(key))
            if key is None:
                flags |= bit
            else:
                out += key
        return bytes(out + bytes([1 if self.has_nulls else 0, 1, flags]))

    @classmethod
    def deserialize(cls, data: bytes, name: str = "<memory>") -> SortedIndexFileMeta:
        keys, pos = [], 0
        for _ in range(2):
            if pos + 4 > len(data):
                raise CorruptFileError("index meta truncated", file=name, structure="sorted index meta",
                                       offset=pos)
            n = struct.unpack_from("<I", data, pos)[0]
            if pos + 4 + n > len(data):
                raise CorruptFileError(f"key length {n} runs past the meta", file=name,
                                       structure="sorted index meta", offset=pos)
            keys.append(bytes(data[pos + 4:pos + 4 + n]))
            pos += 4 + n
        if pos >= len(data):
            raise CorruptFileError("index meta has no null flag", file=name, structure="sorted index meta",
                                   offset=pos)
        has_nulls = data[pos] == 1
        first, last = keys
        if len(data) - pos - 1 >= 2 and data[pos + 1] == 1:
            flags = data[pos + 2]
            first = None if flags & 1 else first
            last = None if flags & 2 else last
        elif not first and not last and has_nulls:
            first = last = None
        return cls(first, last, has_nulls)
