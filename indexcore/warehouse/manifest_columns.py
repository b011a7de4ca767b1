"""Manifest-like files decoded straight to Arrow columns, with no Python object per record.

Avro (Paimon's default ``manifest.format``): the container's blocks are checked and inflated
here (null, deflate, zstd: the codecs Paimon writes, under the file's inflation budget of
:mod:`.manifest`), laid back to back in a null-codec container and decoded by polars'
columnar Avro reader; polars cannot read zstd blocks itself ("unsupported Avro codec").
Without polars the records go through fastavro and become columns (the same values, slower).
Parquet and ORC manifests are Arrow already. Every column keeps Paimon's ``_FIELD`` name and
the nesting of the file (``_FILE`` is a struct); strings and bytes use 32-bit offsets and
timestamps are naive, as the record path gives them (:func:`.manifest.read_records`).
"""

from __future__ import annotations

import io
import json
import os
import zlib
from dataclasses import dataclass
from typing import Any

import fastavro
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from indexcore.cache import LRU
from indexcore.errors import CorruptFileError
from indexcore.warehouse import avro_columns
from indexcore.warehouse.avro_file import _converter, _nonnull, read_avro_table
from indexcore.warehouse.manifest import (
    _ENTRY_FIELDS,
    _FILE_FIELDS,
    _INDEX_FIELDS,
    _LIST_FIELDS,
    _NON_NEGATIVE,
    _STATS_FIELDS,
    AVRO_CODECS,
    INDEX_MANIFEST_ENTRY,
    MANIFEST_ENTRY,
    MANIFEST_LIST,
    _Budget,
    read_arrow_manifest,
    read_records,
)

try:
    from fastavro._read import read_long as _read_long
except ImportError:  # a pure-Python fastavro build
    from fastavro._read_py import read_long as _read_long

MAGIC = b"Obj\x01"
SYNC_SIZE = 16
_ZSTD = "zstandard"

_LOADED_IN = os.getpid()  # the process that may use polars (see _polars)


def _zigzag(n: int) -> bytes:
    """An Avro ``long`` as written (zig-zag varint)."""
    n = (n << 1) ^ (n >> 63)
    out = bytearray()
    while n & ~0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _header(fo: io.BytesIO, name: str) -> tuple[dict[str, bytes], bytes]:
    """The container header's metadata map and sync marker."""
    if fo.read(4) != MAGIC:
        raise CorruptFileError("not an Avro container (bad magic)", file=name, structure="avro header", offset=0)
    meta: dict[str, bytes] = {}
    while True:
        n = _read_long(fo)
        if n == 0:
            break
        if n < 0:  # a negative count is followed by the block's byte size
            _read_long(fo)
            n = -n
        for _ in range(n):
            key = fo.read(_read_long(fo)).decode()
            meta[key] = fo.read(_read_long(fo))
    sync = fo.read(SYNC_SIZE)
    if len(sync) != SYNC_SIZE:
        raise CorruptFileError("Avro header ends before its sync marker", file=name, structure="avro header",
                               offset=fo.tell())
    return meta, sync


_DEFLATE_MAX_RATIO = 1032  # deflate cannot inflate one byte to more (RFC 1951 length codes)


def _inflate(codec: str, raw: bytes, budget: _Budget, zstd=None) -> bytes:
    """One block's bytes inflated, in pieces under the file's budget (never sized by a header);
    ``zstd``: the file's zstandard decompressor (one per file, not per block)."""
    if codec == "null":
        budget.take(len(raw))
        return raw
    if codec == "deflate":
        if len(raw) * _DEFLATE_MAX_RATIO < budget.left:  # cannot pass the budget: one call
            out = zlib.decompress(raw, -15)
            budget.take(len(out))
            return out
        inflater, out, data = zlib.decompressobj(-15), [], raw
        while data and not inflater.eof:
            piece = inflater.decompress(data, 1 << 20)
            budget.take(len(piece))
            out.append(piece)
            data = inflater.unconsumed_tail
        return b"".join(out)
    if zstd is None:
        import zstandard  # optional codec, loaded only for zstd-compressed manifests

        zstd = zstandard.ZstdDecompressor()
    reader = zstd.stream_reader(io.BytesIO(raw))
    out = []
    for piece in iter(lambda: reader.read(1 << 20), b""):
        budget.take(len(piece))
        out.append(piece)
    return b"".join(out)


@dataclass(frozen=True)
class Container:
    """An Avro container's writer schema (its JSON text) and its blocks inflated: (file offset of
    the block, record count, inflated data)."""

    schema_json: bytes
    codec: str
    sync: bytes
    blocks: list

    def schema(self, name: str) -> Any:
        """The writer schema parsed (only when needed: a table's manifests share one, compiled once).

        Raises CorruptFileError when it is not JSON."""
        try:
            return json.loads(self.schema_json)
        except (ValueError, RecursionError) as exc:
            raise CorruptFileError(f"cannot parse the Avro schema: {exc}", file=name,
                                   structure="avro schema") from exc


def inflate_container(data: bytes, name: str) -> Container:
    """The container's header and every block inflated, under the file's inflation budget.

    Raises CorruptFileError naming the offset of a bad header, block or sync marker, or a codec
    Paimon does not write."""
    fo = io.BytesIO(data)
    try:
        meta, sync = _header(fo, name)
        codec = meta.get("avro.codec", b"null").decode() or "null"
        schema_json = meta["avro.schema"]
    except CorruptFileError:
        raise
    except Exception as exc:  # a truncated or garbled header
        raise CorruptFileError(f"cannot read the Avro header: {exc}", file=name, structure="avro header",
                               offset=0) from exc
    if codec not in AVRO_CODECS:
        raise CorruptFileError(f"Avro codec {codec!r} is not one Paimon writes", file=name, structure="avro header")
    if codec == "snappy":  # blocks with a CRC: fastavro's
        return Container(schema_json, codec, sync, [])
    budget = _Budget(len(data), name)
    zstd = None
    if codec == "zstandard":
        import zstandard  # optional codec, loaded only for zstd-compressed manifests

        zstd = zstandard.ZstdDecompressor()
    blocks = []
    end = len(data)
    while fo.tell() < end:
        at = fo.tell()
        try:
            count, size = _read_long(fo), _read_long(fo)
        except Exception as exc:  # a truncated block header
            raise CorruptFileError(f"truncated Avro block header: {exc}", file=name, structure="avro block",
                                   offset=at) from exc
        raw = fo.read(size) if size >= 0 else b""
        if count < 0 or size < 0 or len(raw) != size:
            raise CorruptFileError(f"Avro block of {count} records and {size} bytes overruns the file", file=name,
                                   structure="avro block", offset=at)
        try:
            block = _inflate(codec, raw, budget, zstd)
        except CorruptFileError:
            raise
        except Exception as exc:  # zlib/zstandard raise their own kinds on bad bytes
            raise CorruptFileError(f"cannot inflate {codec} Avro block: {exc}", file=name, structure="avro block",
                                   offset=at) from exc
        if fo.read(SYNC_SIZE) != sync:
            raise CorruptFileError("Avro block not followed by the file's sync marker", file=name,
                                   structure="avro block", offset=at)
        blocks.append((at, count, block))
    return Container(schema_json, codec, sync, blocks)


def null_codec_container(data: bytes, name: str, container: Container | None = None) -> bytes | None:
    """The same Avro container with every block inflated (codec ``null``); None for one polars
    does not read (snappy, or rows that are not a bare record).

    Raises CorruptFileError naming the offset of a bad header, block or sync marker, or a codec
    Paimon does not write."""
    c = container or inflate_container(data, name)
    top = c.schema(name)
    if c.codec == "snappy" or not (isinstance(top, dict) and top.get("type") == "record"):
        return None  # snappy (blocks with a CRC) and Paimon 0.9's ["null", record] rows: fastavro's
    out = bytearray(MAGIC)
    out += _zigzag(2)
    for key, value in (("avro.schema", c.schema_json), ("avro.codec", b"null")):
        out += _zigzag(len(key)) + key.encode() + _zigzag(len(value)) + value
    out += _zigzag(0) + c.sync
    for _at, count, block in c.blocks:
        out += _zigzag(count) + _zigzag(len(block)) + block + c.sync
    return bytes(out)


def _plain(t: pa.DataType) -> pa.DataType:
    """``t`` with 32-bit offsets and naive timestamps (what pyarrow gives the other formats)."""
    if pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return pa.string()
    if pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return pa.binary()
    if pa.types.is_large_list(t) or pa.types.is_list(t):
        return pa.list_(pa.field(t.value_field.name, _plain(t.value_type)))
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, _plain(f.type)) for f in t])
    if pa.types.is_timestamp(t) and t.tz is not None:
        return pa.timestamp(t.unit)
    return t


def read_manifest_table(data: bytes, fmt: str, name: str, decoder: str | None = None,
                        fields: frozenset[str] | None = None, programs: LRU | None = None) -> pa.Table:
    """Every record of a manifest-like file (manifest list, manifest, index manifest) as one Arrow
    table: a column per top-level ``_FIELD`` (Avro: only ``fields`` when given), nested
    records as structs.

    ``decoder`` picks the Avro decoder: ``native`` (our C decoder, :mod:`.avro_columns`),
    ``polars``, ``fastavro``; by default the first of them this process can use (a schema the C
    decoder does not do goes to fastavro); ``programs`` keeps its compiled schemas (a table's
    manifests share a few). Raises CorruptFileError (file, structure, offset) on
    bytes that do not decode."""
    fmt = (fmt or "avro").lower()
    if fmt == "avro":
        table, plain = _avro_table(data, name, decoder or default_decoder(), fields, programs)
        if plain:
            return table
        if fields is not None:  # polars and fastavro decode every field
            table = table.select([n for n in table.column_names if n in fields])
    else:
        table = read_arrow_manifest(data, fmt, name)
    schema = pa.schema([pa.field(f.name, _plain(f.type)) for f in table.schema])
    return table if schema.equals(table.schema) else table.cast(schema)


def read_manifest_groups(files: list[tuple[bytes, str]], structure: str, fields: frozenset[str] | None = None,
                         programs: LRU | None = None) -> list[tuple[pa.Table, list[tuple[int, int, int]]]]:
    """Avro manifest-like files of one writer schema decoded together by the C decoder: one table
    per schema, checked as :func:`check_table` checks one file, with (index into ``files``, first
    row, rows) of each file in it. The per-file cost of building and checking Arrow columns (about
    a millisecond) is paid once per group.

    A file that does not inflate, decode or check is left out (when a group fails, each of its
    files is decoded alone): the caller reads those alone (:func:`read_manifest_table`), which
    names the file and offset."""
    if not avro_columns.AVAILABLE:
        return []
    groups: dict[bytes, list] = {}  # schema JSON -> (index, container) of its files
    for i, (data, name) in enumerate(files):
        if data[:4] != MAGIC:
            continue
        try:
            c = inflate_container(data, name)
        except CorruptFileError:
            continue
        if c.codec != "snappy":
            groups.setdefault(c.schema_json, []).append((i, c))
    out = []
    for members in groups.values():
        try:
            program = _program(members[0][1], fields, programs, files[members[0][0]][1])
        except CorruptFileError:
            continue
        if program is None:
            continue
        blocks, spans, row = [], [], 0
        for i, c in members:
            rows = sum(count for _, count, _ in c.blocks)
            blocks.extend(c.blocks)
            spans.append((i, row, rows))
            row += rows
        try:
            table = avro_columns.decode_blocks(program, blocks, files[members[0][0]][1])
            check_table(table, structure, files[members[0][0]][1])
        except CorruptFileError:  # some file of the group is bad: each alone, the bad ones left out
            for i, c in members:
                try:
                    table = avro_columns.decode_blocks(program, c.blocks, files[i][1])
                    check_table(table, structure, files[i][1])
                except CorruptFileError:
                    continue
                out.append((table, [(i, 0, table.num_rows)]))
            continue
        out.append((table, spans))
    return out


def _program(container: Container, fields: frozenset[str] | None, programs: LRU | None, name: str):
    """The C decoder's program of the container's schema (None: it does not do the schema)."""
    key = (_PROGRAM, container.schema_json, fields)
    program = programs.get(key, _ABSENT) if programs is not None else _ABSENT
    if program is _ABSENT:
        program = avro_columns.compile_program(container.schema(name), fields)
        if programs is not None:
            programs.put(key, program)
    return program


DECODERS = ("native", "polars", "fastavro")
_PROGRAM = "avro program"  # a cache key's head: (_PROGRAM, schema JSON, fields) -> compiled program or None
_ABSENT = object()


def default_decoder() -> str:
    """The fastest Avro decoder this process has: ``native`` when the C extension is built, else
    ``polars`` (not in a fork() child, see :func:`_polars`), else ``fastavro``."""
    if avro_columns.AVAILABLE:
        return "native"
    return "polars" if _polars() is not None else "fastavro"


def _avro_table(data: bytes, name: str, decoder: str, fields: frozenset[str] | None,
                programs: LRU | None) -> tuple[pa.Table, bool]:
    """The table and whether its types are :func:`_plain` already."""
    if decoder not in DECODERS:
        raise ValueError(f"unknown Avro decoder {decoder!r}; one of {DECODERS}")
    if decoder == "native" and not avro_columns.AVAILABLE:
        raise ValueError("the native Avro decoder (indexcore.warehouse._avro_columns) is not built")
    container = inflate_container(data, name)
    if decoder == "native" and container.codec != "snappy":  # snappy blocks (with a CRC) stay fastavro's
        program = _program(container, fields, programs, name)
        if program is not None:
            return avro_columns.decode_blocks(program, container.blocks, name), True  # its types are plain
        decoder = "fastavro"  # maps, enums, decimals, wide unions: polars fails on them or types them apart
    flat = null_codec_container(data, name, container)
    if flat is None:
        return _records_table(data, name), False
    pl = _polars() if decoder == "polars" else None
    if pl is None:
        return read_avro_table(flat, name), False
    try:
        return pl.read_avro(io.BytesIO(flat)).to_arrow(), False
    except Exception as exc:  # polars raises its own kinds on bad bytes
        raise CorruptFileError(f"cannot decode avro manifest: {exc}", file=name, structure="avro manifest",
                               offset=0) from exc


def _polars():
    """The polars module, or None: not installed, or this process is a fork() child of the one
    that loaded this module (polars' thread pool does not survive fork: its ``to_arrow`` waits
    forever there, as a forked fuzz case showed; such a child decodes through fastavro)."""
    if os.getpid() != _LOADED_IN:
        return None
    try:
        import polars as pl  # optional, heavy: the columnar Avro decoder
    except ImportError:
        return None
    return pl


def _records_table(data: bytes, name: str) -> pa.Table:
    """An Avro manifest polars cannot read, through fastavro's records (the rows' schema may be
    a ``["null", record]`` union, as Paimon 0.9 wrote; a null row is refused)."""
    records = read_records(data, "avro", name)
    try:
        schema = _nonnull(fastavro.reader(io.BytesIO(data)).writer_schema)
    except Exception as exc:  # read_records read it already; kept for a clear message
        raise CorruptFileError(f"cannot read the Avro schema: {exc}", file=name, structure="avro header") from exc
    for i, r in enumerate(records):
        if not isinstance(r, dict):
            raise CorruptFileError(f"record {i}: field - is not a record", file=name, structure="avro record")
    rtype, convert = _converter(schema, {})
    try:
        arr = pa.array([convert(r) for r in records], type=rtype)
    except (pa.ArrowException, TypeError, ValueError, OverflowError) as exc:
        raise CorruptFileError(f"avro manifest does not convert: {exc}", file=name, structure="avro data") from exc
    return pa.Table.from_struct_array(arr) if records else pa.table(
        {f.name: pa.array([], f.type) for f in rtype})


_REQUIRED = {MANIFEST_LIST: _LIST_FIELDS, MANIFEST_ENTRY: _ENTRY_FIELDS, INDEX_MANIFEST_ENTRY: _INDEX_FIELDS}
_KINDS = {int: pa.types.is_integer, str: pa.types.is_string, bytes: pa.types.is_binary, dict: pa.types.is_struct}


def check_table(table: pa.Table | pa.StructArray, structure: str, name: str) -> None:
    """What :func:`.manifest.check_record` demands of each record, on the columns at once: every
    field Paimon requires, of its type, never null, sizes and ids not negative, a known ``_KIND``.

    Raises CorruptFileError naming the file, the first bad record and the field."""
    def bad(index: int, field: str, why: str) -> CorruptFileError:
        return CorruptFileError(f"{structure} {index}: field {field} {why}", file=name,
                                structure=f"{structure} {field}")

    def check(columns, required: dict, prefix: str) -> None:
        for field, kind in required.items():
            col = columns(field)
            if col is None:
                raise bad(0, prefix + field, "is missing")
            if not _KINDS[kind](col.type):
                raise bad(0, prefix + field, f"must be {kind.__name__}, not {col.type}")
            if col.null_count:
                raise bad(int(pc.index(pc.is_null(col), True).as_py()), prefix + field, "is missing")
            if field in _NON_NEGATIVE and len(col) and col.to_numpy().min() < 0:
                at = int(pc.index(pc.less(col, 0), True).as_py())
                raise bad(at, prefix + field, f"must not be negative: {col[at].as_py()}")

    def fields(struct):
        """A struct's field by name (None when absent), each made only when asked for."""
        if isinstance(struct, pa.ChunkedArray):
            struct = struct.chunk(0) if struct.num_chunks == 1 else struct.combine_chunks()
        names = {f.name: i for i, f in enumerate(struct.type)}
        return lambda n: struct.field(names[n]) if n in names else None

    top = {n: table.column(n) for n in table.column_names}
    check(top.get, _REQUIRED[structure], "")
    if structure != MANIFEST_LIST:
        kinds = top["_KIND"]
        odd = np.flatnonzero((kinds.to_numpy() != 0) & (kinds.to_numpy() != 1))
        if len(odd):
            at = int(odd[0])
            raise bad(at, "_KIND", f"is {kinds[at].as_py()}, not one Paimon writes (0 ADD, 1 DELETE)")
    if structure == MANIFEST_ENTRY:
        f = fields(top["_FILE"])
        check(f, _FILE_FIELDS, "_FILE.")
        for stats in ("_KEY_STATS", "_VALUE_STATS"):
            check(fields(f(stats)), _STATS_FIELDS, f"_FILE.{stats}.")
    elif structure == MANIFEST_LIST and "_PARTITION_STATS" in top:
        stats = top["_PARTITION_STATS"]
        if stats.null_count < len(stats):
            check(fields(pc.drop_null(stats)), _STATS_FIELDS, "_PARTITION_STATS.")
