"""Bitmap index keys: how each column type is keyed, written, ordered and hashed (as Java does it)."""

from __future__ import annotations

import struct
from typing import Any

from indexcore.errors import UnsupportedError
from indexcore.formats.murmur import hash_bytes, hash_bytes_many
from indexcore.types import DataType, float32, timestamp_from_key, to_long

INT32 = struct.Struct(">i")
TWO_INT32 = struct.Struct(">ii")
UINT32 = struct.Struct(">I")
MASK32 = 0xFFFFFFFF
MASK64 = 0xFFFFFFFFFFFFFFFF


# ---------------------------------------------------------------------------------------
# Keys: how each column type is keyed, written, ordered and hashed (as Java does it).


class KeyCodec:
    """One column type's bitmap key: internal value <-> key, bytes, order and Java hashCode."""

    def __init__(self, dtype: DataType):
        r = dtype.root
        self.dtype = dtype
        if r in ("CHAR", "VARCHAR"):
            kind = "string"
        elif r == "TINYINT":
            kind = "byte"
        elif r == "SMALLINT":
            kind = "short"
        elif r in ("INT", "DATE", "TIME"):
            kind = "int"
        elif r in ("BIGINT", "TIMESTAMP", "TIMESTAMP_LTZ"):
            kind = "long"
        elif r in ("FLOAT", "DOUBLE", "BOOLEAN"):
            kind = r.lower()
        elif r == "DECIMAL":
            raise UnsupportedError("the bitmap index does not support decimal (as Paimon refuses it)")
        else:
            raise UnsupportedError(f"the bitmap index does not support type {dtype.sql()}")
        self.kind = kind
        self.fixed = {"byte": ">b", "short": ">h", "int": ">i", "long": ">q", "float": ">I",
                      "double": ">Q", "boolean": ">B"}.get(kind)
        self.struct = struct.Struct(self.fixed) if self.fixed else None
        # the smallest number of bytes a key takes (a string's 4-byte length alone)
        self.min_size = self.struct.size if self.struct else 4

    # -- internal value <-> key

    def key(self, value: Any) -> Any:
        """The key Paimon's ``valueMapper`` gives a (non-null) internal value."""
        k = self.kind
        if k == "string":
            return value if isinstance(value, bytes) else str(value).encode("utf-8", "surrogateescape")
        if k == "float":
            f = float32(float(value))
            return 0x7FC00000 if f != f else struct.unpack(">I", struct.pack(">f", f))[0]
        if k == "double":
            f = float(value)
            return 0x7FF8000000000000 if f != f else struct.unpack(">Q", struct.pack(">d", f))[0]
        if k == "boolean":
            return bool(value)
        if self.dtype.is_timestamp:
            return to_long(self.dtype, value)
        return int(value)

    def value(self, key: Any) -> Any:
        """The internal value a key stands for (for listing the dictionary)."""
        k = self.kind
        if k == "string":
            return key.decode("utf-8", "surrogateescape")
        if k == "float":
            return struct.unpack(">f", struct.pack(">I", key))[0]
        if k == "double":
            return struct.unpack(">d", struct.pack(">Q", key))[0]
        if self.dtype.is_timestamp:
            return timestamp_from_key(self.dtype, key)
        return key

    # -- bytes

    def size(self, key: Any) -> int:
        return 4 + len(key) if self.kind == "string" else self.struct.size

    def encode(self, key: Any) -> bytes:
        if self.kind == "string":
            return INT32.pack(len(key)) + key
        if self.kind == "boolean":
            return b"\x01" if key else b"\x00"
        return self.struct.pack(key)

    def scan(self, buf: bytes, pos: int, count: int, ints: int, out: list) -> int:
        """Append up to ``count`` complete ``(key, int * ints)`` tuples found at ``buf[pos:]``.

        Stops before an entry that is not wholly in ``buf``; returns the position after the last
        entry taken. A negative string length raises ValueError (the caller reports where).
        """
        end = len(buf)
        if self.kind != "string":
            fmt = self.fixed + "i" * ints
            item = struct.calcsize(fmt)
            m = min(count, (end - pos) // item)
            if self.kind == "boolean":
                out.extend((k != 0, *rest) for k, *rest in struct.iter_unpack(fmt, buf[pos:pos + m * item]))
            else:
                out.extend(struct.iter_unpack(fmt, buf[pos:pos + m * item]))
            return pos + m * item
        tail = struct.Struct(">" + "i" * ints)
        tsize = tail.size
        length_at, tail_at, append = INT32.unpack_from, tail.unpack_from, out.append
        for _ in range(count):
            if pos + 4 > end:
                break
            n = length_at(buf, pos)[0]
            if n < 0:
                raise ValueError(f"negative string length {n}")
            e = pos + 4 + n
            if e + tsize > end:
                break
            append((buf[pos + 4:e], *tail_at(buf, e)))
            pos = e + tsize
        return pos

    # -- order (Paimon's comparator) and Java hashCode (for the writer's HashMap order)

    def sort_key(self, key: Any) -> Any:
        if self.kind == "float":
            return -(key & 0x7FFFFFFF) - 1 if key & 0x80000000 else key
        if self.kind == "double":
            return -(key & 0x7FFFFFFFFFFFFFFF) - 1 if key >> 63 else key
        return key

    def java_hashes(self, keys: list) -> list[int]:
        """:meth:`java_hash` of each key (strings hashed together, vectorised)."""
        if self.kind == "string":
            return hash_bytes_many(keys)
        return [self.java_hash(k) for k in keys]

    def java_hash(self, key: Any) -> int:
        k = self.kind
        if k == "string":
            return hash_bytes(key)
        if k in ("byte", "short", "int", "float"):
            return key & MASK32
        if k in ("long", "double"):
            u = key & MASK64
            return (u ^ (u >> 32)) & MASK32
        return 1231 if key else 1237


