"""Range-bitmap keys (Paimon's ``KeyFactory``): how each type is stored and ordered; the format's
version and its length-prefixed headers."""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from indexcore.errors import CorruptFileError, UnsupportedError
from indexcore.formats.base import ByteCursor
from indexcore.io import ByteSource
from indexcore.types import (
    INTEGER_ROOTS,
    DataType,
    decimal_from_unscaled,
    float_bits,
    timestamp_from_key,
    to_long,
)

VERSION = 1
I8 = struct.Struct(">b")
I32 = struct.Struct(">i")
NAN32 = 0x7FC00000
NAN64 = 0x7FF8000000000000


# ---------------------------------------------------------------------------------------
# Keys: how each type is stored and ordered (Paimon's KeyFactory).


def _float_order(bits: int, width: int) -> int:
    """Java ``Float.compare`` / ``Double.compare`` order from raw signed bits.

    -0.0 sorts below 0.0 and every NaN is one key above +Infinity.
    """
    mag_mask = (1 << (width - 1)) - 1
    inf = 0x7F800000 if width == 32 else 0x7FF0000000000000
    if (bits & mag_mask) > inf:
        return NAN32 if width == 32 else NAN64
    return bits if bits >= 0 else bits ^ mag_mask


@dataclass(frozen=True)
class KeyCodec:
    """One type's key: ``raw`` is the stored integer (fixed width) or UTF-8 bytes (strings).

    ``order(raw)`` gives a Python value whose ordering is Paimon's comparator.
    """

    fmt: str | None
    to_raw: Callable[[Any], Any]
    order: Callable[[Any], Any]
    to_value: Callable[[Any], Any]
    default_chunk_size: str = "16kb"

    @cached_property
    def packer(self) -> struct.Struct | None:
        """The fixed-width key's big-endian struct (None for variable-length keys)."""
        return struct.Struct(">" + self.fmt) if self.fmt else None

    @property
    def width(self) -> int:
        return self.packer.size if self.fmt else 0

    def encode(self, raw: Any) -> bytes:
        if self.fmt is None:
            return I32.pack(len(raw)) + raw
        return self.packer.pack(raw)

    def read(self, cur: ByteCursor) -> Any:
        if self.fmt is None:
            n = cur.length("key length")
            return cur.take(n)
        return self.packer.unpack(cur.take(self.packer.size))[0]

    def order_of_value(self, value: Any) -> Any:
        return self.order(self.to_raw(value))


def identity(x: Any) -> Any:
    return x


def key_codec(dtype: DataType) -> KeyCodec:
    """Paimon's ``KeyFactory.create``: the key layout and comparator of a column type."""
    r = dtype.root
    if r in INTEGER_ROOTS:
        fmt = {"TINYINT": "b", "SMALLINT": "h", "INT": "i", "BIGINT": "q"}[r]
        chunk = "0b" if r in ("TINYINT", "SMALLINT") else "16kb"
        return KeyCodec(fmt, int, identity, identity, chunk)
    if r in ("DATE", "TIME"):
        return KeyCodec("i", int, identity, identity)
    if r in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        if (dtype.precision or 0) > 6:
            raise UnsupportedError("The range-bitmap index only supports TIMESTAMP with a precision in [0, 6].")
        return KeyCodec("q", lambda v: to_long(dtype, v), identity, lambda k: timestamp_from_key(dtype, k))
    if r == "DECIMAL":
        if (dtype.precision or 0) > 18:
            raise UnsupportedError("The range-bitmap index only supports DECIMAL with a precision in [0, 18].")
        return KeyCodec("q", lambda v: to_long(dtype, v), identity, lambda k: decimal_from_unscaled(dtype, k))
    if r == "BOOLEAN":
        return KeyCodec("b", lambda v: 1 if v else 0, lambda k: 1 if k == 1 else 0, lambda k: k == 1, "0b")
    if r in ("FLOAT", "DOUBLE"):
        width, fmt, sfmt = (32, "i", ">f") if r == "FLOAT" else (64, "q", ">d")
        sign = 1 << (width - 1)

        def to_raw(v: float) -> int:
            bits = float_bits(dtype, float(v))
            return bits - (1 << width) if bits & sign else bits

        def to_value(raw: int) -> float:
            return struct.unpack(sfmt, struct.pack(">" + fmt, raw))[0]

        return KeyCodec(fmt, to_raw, lambda k: _float_order(k, width), to_value)
    if r in ("CHAR", "VARCHAR"):
        return KeyCodec(None, lambda v: v.encode("utf-8") if isinstance(v, str) else bytes(v), identity,
                        lambda k: k.decode("utf-8", errors="replace"))
    raise UnsupportedError(f"data type {dtype.sql()} is not supported by the range-bitmap index")


# ---------------------------------------------------------------------------------------
# Length-prefixed headers (the file, the dictionary and the bit-sliced index each start with one).


def _read_i32(source: ByteSource, offset: int, structure: str) -> int:
    return struct.unpack(">i", source.read(offset, 4, structure))[0]


def read_header(source: ByteSource, offset: int, structure: str, min_length: int) -> tuple[ByteCursor, int]:
    """A header stored as its int32 length then its bytes: a cursor over it and where it ends."""
    source.read_ahead(offset)
    head_len = _read_i32(source, offset, f"{structure} length")
    source.read_ahead(offset, 4 + max(head_len, 0))
    if head_len < min_length:
        raise CorruptFileError(f"{structure} length {head_len} is too small", file=source.name,
                               structure=structure, offset=offset)
    cur = ByteCursor(source.read(offset + 4, head_len, structure), offset + 4, source.name, structure)
    return cur, offset + 4 + head_len
