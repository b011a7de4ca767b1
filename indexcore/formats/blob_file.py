"""BLOB data files (``.blob``) and blob descriptors.

A ``.blob`` file holds one BLOB column of a data-evolution table, one record per row::

    (magic 4 | payload | record length 8 | CRC32 4)* | index | index length 4 | version 1

(the record length counts all 16 framing bytes; the CRC32 covers the record up to itself).

The index lists each record's total length (payload + 16) as zig-zag var-longs, the first as
is and the rest as deltas from the previous; length -1 is a null row, -2 a placeholder (a row
whose blob lives elsewhere). A *blob descriptor* (a BLOB value stored inline as a reference)
is little-endian: version byte, for version 2 the magic ``BLOBDESC``, then URI length (4),
URI, offset (8) and length (8).
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

from indexcore.errors import CorruptFileError, UnsupportedError
from indexcore.io import ByteSource

VERSION = 1
NULL_LENGTH = -1
PLACEHOLDER_LENGTH = -2
RECORD_OVERHEAD = 16
DESCRIPTOR_MAGIC = 0x424C4F4244455343  # "BLOBDESC"
MAGIC = bytes.fromhex("cf114e58")  # opens every blob record


def _zigzag_varints(data: bytes, name: str, base: int) -> list[int]:
    out, pos, value, shift = [], 0, 0, 0
    while pos < len(data):
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if shift > 70:
            raise CorruptFileError("overlong var-long in the blob index", file=name, structure="blob index",
                                   offset=base + pos)
        if not b & 0x80:
            out.append((value >> 1) ^ -(value & 1))
            value = shift = 0
    if shift:
        raise CorruptFileError("blob index ends inside a var-long", file=name, structure="blob index",
                               offset=base + pos)
    return out


def blob_lengths(source: ByteSource) -> tuple[list[int], int]:
    """Record lengths of a ``.blob`` file (-1 null, -2 placeholder) and where the index starts."""
    name = source.name
    if source.size < 5:
        raise CorruptFileError("too short for a blob file", file=name, structure="blob file", offset=0)
    tail = source.read(source.size - 5, 5, "blob file tail")
    index_length, version = struct.unpack("<iB", tail)
    if version != VERSION:
        raise UnsupportedError(f"blob file version {version} is not read", file=name, structure="blob file tail",
                               offset=source.size - 1)
    start = source.size - 5 - index_length
    if index_length < 0 or start < 0:
        raise CorruptFileError(f"index length {index_length} does not fit the file", file=name,
                               structure="blob file tail", offset=source.size - 5)
    deltas = _zigzag_varints(source.read(start, index_length, "blob index"), name, start)
    lengths, current = [], 0
    for i, d in enumerate(deltas):
        current = d if i == 0 else current + d
        lengths.append(current)
    return lengths, start


def read_blob_file(source: ByteSource, verify: bool = True) -> list[bytes | None]:
    """Every row's payload (None for a null or placeholder row), CRC checked."""
    lengths, end = blob_lengths(source)
    out: list[bytes | None] = []
    pos = 0
    for n in lengths:
        if n < 0:
            if n not in (NULL_LENGTH, PLACEHOLDER_LENGTH):
                raise CorruptFileError(f"impossible blob length {n}", file=source.name, structure="blob index")
            out.append(None)
            continue
        if n < RECORD_OVERHEAD or pos + n > end:
            raise CorruptFileError(f"blob record of {n} bytes does not fit", file=source.name,
                                   structure="blob record", offset=pos)
        record = source.read(pos, n, "blob record")
        payload = record[4:n - 12]
        stored_len = struct.unpack_from("<q", record, n - 12)[0]
        crc = struct.unpack_from("<I", record, n - 4)[0]
        if verify and (zlib.crc32(record[:n - 4]) & 0xFFFFFFFF) != crc:
            raise CorruptFileError(f"blob record CRC {crc:#010x} does not match", file=source.name,
                                   structure="blob record", offset=pos + n - 4)
        if stored_len != n or record[:4] != MAGIC:
            raise CorruptFileError(f"blob record framing broken (magic {record[:4].hex()}, length {stored_len} "
                                   f"for {n})", file=source.name,
                                   structure="blob record", offset=pos + n - 12)
        out.append(payload)
        pos += n
    return out


@dataclass(frozen=True)
class BlobDescriptor:
    uri: str
    offset: int
    length: int
    version: int


def read_blob_descriptor(data: bytes) -> BlobDescriptor | None:
    """The descriptor serialized in a BLOB value, or None when the bytes are not one."""
    if len(data) < 5 or data[0] not in (1, 2):
        return None
    pos = 1
    if data[0] == 2:
        if len(data) < 13 or struct.unpack_from("<Q", data, 1)[0] != DESCRIPTOR_MAGIC:
            return None
        pos = 9
    if pos + 4 > len(data):
        return None
    n = struct.unpack_from("<i", data, pos)[0]
    if n < 0 or pos + 4 + n + 16 != len(data):
        return None
    try:
        uri = data[pos + 4:pos + 4 + n].decode("utf-8")
    except UnicodeDecodeError:
        return None
    offset, length = struct.unpack_from("<qq", data, pos + 4 + n)
    return BlobDescriptor(uri, offset, length, data[0])
