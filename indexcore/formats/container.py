"""Paimon's file-index container (``FileIndexFormat``): one ``.index`` file, many column indexes.

Layout, big-endian: magic i64 (1493475289347502), version i32 (1), head length i32 (the whole
head, counted from byte 0), column count i32; per column its name (Java modified UTF-8 with a
u16 length) and index count i32; per index its type name (same UTF form), absolute start i32
(-1 for an empty-index entry) and length i32; then the redundant length i32 (0 in version 1)
and the bodies. Reading the container reads only the head; blobs are lazy slices.
"""

from __future__ import annotations

import operator
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from indexcore.cache import LRU
from indexcore.errors import CorruptFileError, UnsupportedError
from indexcore.formats.base import REMAIN, SKIP, ByteCursor, FileIndexReader, FileIndexResult
from indexcore.formats.registry import open_reader
from indexcore.io import ByteSource
from indexcore.types import DataType

MAGIC = 1493475289347502
VERSION = 1
EMPTY_INDEX_FLAG = -1
PREFIX_SIZE = 16  # magic, version, head length
MIN_HEAD_LENGTH = PREFIX_SIZE + 4 + 4  # plus column count and redundant length
STRUCTURE = "file index head"


@dataclass(frozen=True)
class IndexEntry:
    """One (column, index type) entry of the head; ``offset`` is absolute, -1 when empty."""

    column: str
    index_type: str
    offset: int
    length: int

    @property
    def empty(self) -> bool:
        """An empty-index entry: the column had no rows to index (Paimon reads it as SKIP)."""
        return self.offset == EMPTY_INDEX_FLAG


@dataclass(frozen=True)
class ContainerHead:
    magic: int
    version: int
    head_length: int
    entries: tuple[IndexEntry, ...]
    redundant_length: int
    file_size: int

    def columns(self) -> list[str]:
        """Column names in file order (each once)."""
        return list(dict.fromkeys(e.column for e in self.entries))

    def entries_for(self, column: str) -> list[IndexEntry]:
        return [e for e in self.entries if e.column == column]


# ---------------------------------------------------------------------------------------
# Java modified UTF-8 (DataOutput.writeUTF / DataInput.readUTF)


def encode_modified_utf8(text: str) -> bytes:
    """``DataOutputStream.writeUTF``: u16 length, NUL as two bytes, supplementary chars as surrogates."""
    if text.isascii() and "\0" not in text and len(text) <= 0xFFFF:  # one byte a character, at C speed
        return len(text).to_bytes(2, "big") + text.encode("ascii")
    out = bytearray()
    units = text.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(units), 2):
        c = (units[i] << 8) | units[i + 1]
        if 0x0001 <= c <= 0x007F:
            out.append(c)
        elif c <= 0x07FF:
            out += bytes((0xC0 | (c >> 6), 0x80 | (c & 0x3F)))
        else:
            out += bytes((0xE0 | (c >> 12), 0x80 | ((c >> 6) & 0x3F), 0x80 | (c & 0x3F)))
    if len(out) > 0xFFFF:
        raise UnsupportedError(f"name of {len(out)} encoded bytes is too long for a file index head")
    return len(out).to_bytes(2, "big") + bytes(out)


def decode_modified_utf8(data: bytes) -> str:
    """``DataInputStream.readUTF`` body (without the length); raises ValueError on bad bytes."""
    if data.isascii():  # one byte per character: the common case, decoded at C speed
        return data.decode("ascii")
    units: list[int] = []
    i, n = 0, len(data)
    while i < n:
        a = data[i]
        if a < 0x80:
            units.append(a)
            i += 1
        elif a & 0xE0 == 0xC0:
            if i + 1 >= n or data[i + 1] & 0xC0 != 0x80:
                raise ValueError(f"malformed input around byte {i}")
            units.append(((a & 0x1F) << 6) | (data[i + 1] & 0x3F))
            i += 2
        elif a & 0xF0 == 0xE0:
            if i + 2 >= n or data[i + 1] & 0xC0 != 0x80 or data[i + 2] & 0xC0 != 0x80:
                raise ValueError(f"malformed input around byte {i}")
            units.append(((a & 0x0F) << 12) | ((data[i + 1] & 0x3F) << 6) | (data[i + 2] & 0x3F))
            i += 3
        else:
            raise ValueError(f"malformed input around byte {i}")
    raw = b"".join(u.to_bytes(2, "big") for u in units)
    return raw.decode("utf-16-be", "surrogatepass")


# ---------------------------------------------------------------------------------------
# Reading


class _HeadCursor(ByteCursor):
    """The head's fields, big-endian, with Java's modified-UTF-8 strings."""

    def utf(self, what: str) -> str:
        start = self.pos
        n = struct.unpack(">H", self.take(2, what))[0]
        body = self.take(n, what)
        try:
            return decode_modified_utf8(body)
        except ValueError as exc:
            raise self.error(f"{what} is not modified UTF-8: {exc}", at=start) from exc


def head_length(prefix: bytes, file_size: int, name: str) -> int:
    """The head's length from the container's first 16 bytes, after checking magic and version."""
    if file_size < MIN_HEAD_LENGTH or len(prefix) < PREFIX_SIZE:
        raise CorruptFileError(f"file of {file_size} bytes is shorter than the smallest file index "
                               f"({MIN_HEAD_LENGTH} bytes)", file=name, structure=STRUCTURE, offset=0)
    magic, version, length = _PREFIX.unpack_from(prefix)
    if magic != MAGIC:
        raise CorruptFileError(f"bad magic {magic} (expected {MAGIC}): not a file index file",
                               file=name, structure=STRUCTURE, offset=0)
    if version != VERSION:
        raise UnsupportedError(f"file index version {version} is not supported (only {VERSION})",
                               file=name, structure=STRUCTURE, offset=8)
    if not MIN_HEAD_LENGTH <= length <= file_size:
        raise CorruptFileError(f"head length {length} outside [{MIN_HEAD_LENGTH}, {file_size}]",
                               file=name, structure=STRUCTURE, offset=12)
    return length


def read_head(source: ByteSource) -> ContainerHead:
    """Parse and validate the head: the 16-byte prefix, then exactly ``head_length - 16`` bytes."""
    name = source.name
    if source.size < MIN_HEAD_LENGTH:
        head_length(b"", source.size, name)
    source.read_ahead(0)
    prefix = source.read(0, PREFIX_SIZE, STRUCTURE)
    length = head_length(prefix, source.size, name)
    source.read_ahead(0, length)
    return parse_head(prefix + source.read(PREFIX_SIZE, length - PREFIX_SIZE, STRUCTURE), source.size, name)


def parse_head(head: bytes, file_size: int, name: str) -> ContainerHead:
    """The head from its bytes (prefix included) in a file of ``file_size`` bytes.

    Heads of well-formed files take the quick path (50,000 of them per census); anything it does
    not expect goes through the careful cursor, which names the structure and offset of the fault.
    """
    shaped = _parse_shaped(head, file_size)
    if shaped is not None:
        return shaped
    quick = _parse_quick(head, file_size)
    if quick is None:
        return _parse_careful(head, file_size, name)
    _learn_shape(quick)
    return quick


def _parse_careful(head: bytes, file_size: int, name: str) -> ContainerHead:
    """:func:`parse_head` field by field through a cursor that names the fault and its offset."""
    magic, version, length = _PREFIX.unpack_from(head)
    cur = _HeadCursor(head[PREFIX_SIZE:], PREFIX_SIZE, name, STRUCTURE)
    column_count = cur.i32("column count")
    # each column needs at least a 2-byte name length and a 4-byte index count
    if column_count < 0 or column_count * 6 > cur.left:
        raise cur.error(f"impossible column count {column_count}", at=cur.pos - 4)
    entries: list[IndexEntry] = []
    for _ in range(column_count):
        column = cur.utf("column name")
        index_count = cur.i32("index count")
        # each index needs a 2-byte name length, start and length
        if index_count < 0 or index_count * 10 > cur.left:
            raise cur.error(f"impossible index count {index_count} for column {column!r}", at=cur.pos - 4)
        for _ in range(index_count):
            index_type = cur.utf("index type name")
            at = cur.pos
            start = cur.i32("index start")
            size = cur.i32("index length")
            if start == EMPTY_INDEX_FLAG:
                if size < 0:
                    raise cur.error(f"negative length {size} of {column}/{index_type}", at=at + 4)
            elif start < length or size < 0 or start + size > file_size:
                raise cur.error(f"{column}/{index_type} body [{start}, {start}+{size}) is outside the "
                                f"body [{length}, {file_size})", at=at)
            entries.append(IndexEntry(column, index_type, start, size))
    at = cur.pos
    redundant_length = cur.i32("redundant length")
    if redundant_length < 0 or redundant_length > file_size - PREFIX_SIZE - cur.pos:
        raise cur.error(f"impossible redundant length {redundant_length}", at=at)
    return ContainerHead(magic, version, length, tuple(entries), redundant_length, file_size)


_PREFIX = struct.Struct(">qii")
_U16 = struct.Struct(">H").unpack_from
_I32 = struct.Struct(">i").unpack_from
_SPAN = struct.Struct(">ii").unpack_from
_NAMES = LRU(65_536)  # column and index type names, one str each (heads repeat them)


def _name(raw: bytes) -> str | None:
    hit = _NAMES.peek(raw)
    if hit is None:
        if not raw.isascii():
            return None
        hit = raw.decode("ascii")
        _NAMES.put(raw, hit)
    return hit


def _name_at(head: bytes, pos: int, then: int) -> tuple[str | None, int]:
    """The u16-length ASCII name at ``pos`` and where it ends, when ``then`` more bytes follow it."""
    if pos + 2 > len(head):
        return None, pos
    end = pos + 2 + _U16(head, pos)[0]
    if end + then > len(head):
        return None, pos
    return _name(head[pos + 2:end]), end


def _span_ok(start: int, size: int, head_length: int, file_size: int) -> bool:
    """An entry's body span fits the container: an empty-index entry (start -1) with a length of
    at least 0, else a non-negative length from past the head to at most the file's end (the
    careful parser states each failure of this rule with its offset)."""
    if start == EMPTY_INDEX_FLAG:
        return size >= 0
    return start >= head_length and size >= 0 and start + size <= file_size


def _parse_quick(head: bytes, file_size: int) -> ContainerHead | None:
    """:func:`parse_head` for well-formed heads with ASCII names; None on anything else."""
    n = len(head)
    if n < MIN_HEAD_LENGTH:
        return None
    magic, version, length = _PREFIX.unpack_from(head)
    if length != n:
        return None
    pos = PREFIX_SIZE
    (count,) = _I32(head, pos)
    pos += 4
    if count < 0 or count * 6 > n - pos:
        return None
    entries = []
    for _ in range(count):
        column, end = _name_at(head, pos, 4)
        if column is None:
            return None
        (k,) = _I32(head, end)
        pos = end + 4
        if k < 0 or k * 10 > n - pos:
            return None
        for _ in range(k):
            kind, end = _name_at(head, pos, 8)
            if kind is None:
                return None
            start, size = _SPAN(head, end)
            pos = end + 8
            if not _span_ok(start, size, n, file_size):
                return None
            entries.append(IndexEntry(column, kind, start, size))
    if pos + 4 > n:
        return None
    (redundant,) = _I32(head, pos)
    if redundant < 0 or redundant > file_size - pos - 4:
        return None
    return ContainerHead(magic, version, n, tuple(entries), redundant, file_size)


class _Shape:
    """The byte layout of a head: its names and counts fixed, its spans and redundant length free.

    Files written by one writer over one schema share it, so a census parses most heads with one
    ``unpack_from`` and a comparison of the fixed fields.
    """

    __slots__ = ("layout", "fixed_at", "fixed", "spans", "redundant_at", "pairs", "spans_at")

    def __init__(self, head: ContainerHead):
        fmt, fixed, spans = [">qiii"], [len({e.column for e in head.entries})], []
        at = 4
        for column, entries in _by_column(head.entries):
            raw = column.encode("ascii")
            fmt.append(f"H{len(raw)}si")
            fixed += [len(raw), raw, len(entries)]
            at += 3
            for e in entries:
                kind = e.index_type.encode("ascii")
                fmt.append(f"H{len(kind)}sii")
                fixed += [len(kind), kind]
                spans.append((e.column, e.index_type, at + 2))
                at += 4
        fmt.append("i")
        self.layout = struct.Struct("".join(fmt))
        self.fixed_at = operator.itemgetter(*[i for i in range(3, at) if not any(i in (s[2], s[2] + 1)
                                                                                 for s in spans)])
        self.fixed = tuple(fixed)
        self.spans = tuple(spans)
        self.redundant_at = at
        self.pairs = tuple((column, kind) for column, kind, _ in spans)  # shared by every head of the shape
        self.spans_at = operator.itemgetter(*[i for _, _, a in spans for i in (a, a + 1)])


def _by_column(entries: tuple[IndexEntry, ...]) -> list[tuple[str, list[IndexEntry]]]:
    """Entries grouped by column in head order (a head lists each column once)."""
    out: dict[str, list[IndexEntry]] = {}
    for e in entries:
        out.setdefault(e.column, []).append(e)
    return list(out.items())


_SHAPES = LRU(4096)  # head length -> the layouts seen at that length (a list, a few each)
# the shaped parser fills frozen entries and heads through ``__dict__``: the dataclass ``__init__``
# sets each field through ``object.__setattr__``, twice the cost over a census's 180,000 entries
_new = object.__new__


def _learn_shape(head: ContainerHead) -> None:
    """Remember the layout of a head the quick parser read (ASCII names, each column once)."""
    runs = sum(1 for i, e in enumerate(head.entries) if i == 0 or e.column != head.entries[i - 1].column)
    if not head.entries or runs != len(head.columns()):
        return  # a column listed twice: left to the quick parser
    seen = _SHAPES.peek(head.head_length)
    if seen is None:
        seen = []
        _SHAPES.put(head.head_length, seen)
    if len(seen) < 4:
        shape = _Shape(head)
        if shape.layout.size == head.head_length:
            seen.append(shape)


def _match_shape(head: bytes, file_size: int) -> tuple[_Shape, tuple] | None:
    """The layout seen before that ``head`` fits, with its unpacked values, when every span and the
    redundant length are valid too (the rules of :func:`_span_ok`); None otherwise."""
    n = len(head)
    for shape in _SHAPES.peek(n, ()):
        values = shape.layout.unpack_from(head)
        if shape.fixed_at(values) != shape.fixed or values[2] != n:
            continue
        for _column, _kind, at in shape.spans:
            start, size = values[at], values[at + 1]
            if start == EMPTY_INDEX_FLAG:  # _span_ok, inline: a census checks 180,000 spans
                if size < 0:
                    return None
            elif start < n or size < 0 or start + size > file_size:
                return None
        redundant = values[shape.redundant_at]
        if redundant < 0 or redundant > file_size - n:
            return None
        return shape, values
    return None


def _parse_shaped(head: bytes, file_size: int) -> ContainerHead | None:
    """:func:`parse_head` through a layout seen before; None when none fits (or a span is off)."""
    matched = _match_shape(head, file_size)
    if matched is None:
        return None
    shape, values = matched
    entries = []
    for column, kind, at in shape.spans:
        entry = _new(IndexEntry)
        entry.__dict__.update(column=column, index_type=kind, offset=values[at], length=values[at + 1])
        entries.append(entry)
    out = _new(ContainerHead)
    out.__dict__.update(magic=values[0], version=values[1], head_length=len(head), entries=tuple(entries),
                        redundant_length=values[shape.redundant_at], file_size=file_size)
    return out


def head_spans(head: bytes, file_size: int, name: str) -> tuple[tuple[tuple[str, str], ...], tuple[int, ...]]:
    """A head's entries as ``(column, index type)`` pairs and their flat ``(offset, length, ...)``
    values, by the rules and with the errors of :func:`parse_head` but without an object per
    entry: what a census of 50,000 heads needs. Heads of one layout share one tuple of pairs."""
    matched = _match_shape(head, file_size)
    if matched is not None:
        shape, values = matched
        return shape.pairs, shape.spans_at(values)
    parsed = parse_head(head, file_size, name)
    return (tuple((e.column, e.index_type) for e in parsed.entries),
            tuple(v for e in parsed.entries for v in (e.offset, e.length)))


def head_bytes(data: bytes, file_size: int, name: str) -> bytes | None:
    """The head's bytes when the container's first bytes ``data`` hold all of it (None: read
    more), after checking its magic, version and length (:func:`head_length`)."""
    length = head_length(data, file_size, name)
    return data[:length] if length <= len(data) else None


def well_formed_head(data: bytes, file_size: int) -> bytes | None:
    """:func:`head_bytes` without its errors, for the heads a census reads by the thousand: the
    head when ``data`` holds all of it and its magic, version and length are right; None for
    anything else (then :func:`head_bytes` says what is wrong, or that more must be read)."""
    if len(data) < PREFIX_SIZE or file_size < MIN_HEAD_LENGTH:
        return None
    magic, version, length = _PREFIX.unpack_from(data)
    if magic != MAGIC or version != VERSION or not MIN_HEAD_LENGTH <= length <= file_size or length > len(data):
        return None
    return data[:length]


class EmptyFileIndexReader(FileIndexReader):
    """Paimon's ``EmptyFileIndexReader``: an index over no rows, so value predicates SKIP.

    ``equal``, ``in``, ``isNotNull``, ``startsWith``/``endsWith``/``contains`` and the four range
    comparisons answer SKIP; ``isNull``, ``notEqual``, ``notIn``, ``between``/``notBetween`` stay
    REMAIN, as in Paimon 1.0's reader.
    """

    index_type = "empty"

    def _skip(self, *_: Any) -> FileIndexResult:
        return SKIP

    visit_equal = visit_is_not_null = visit_in = _skip
    visit_less_than = visit_less_or_equal = visit_greater_than = visit_greater_or_equal = _skip
    visit_starts_with = visit_ends_with = visit_contains = _skip

    def visit_is_null(self) -> FileIndexResult:
        return REMAIN

    def summary(self) -> dict:
        return {"index_type": self.index_type, "empty": True}


class FileIndexContainer:
    """An opened ``.index`` file: its head, and lazy access to each index blob."""

    def __init__(self, source: ByteSource, head: ContainerHead):
        self.source = source
        self.head = head

    def entry(self, column: str, index_type: str) -> IndexEntry | None:
        """The entry for (column, index type); the last one wins, as in Paimon's head map."""
        found = None
        for e in self.head.entries:
            if e.column == column and e.index_type == index_type:
                found = e
        return found

    def blob(self, entry: IndexEntry) -> ByteSource:
        """A window over the entry's body; nothing is read until a reader reads it."""
        if entry.empty:
            return self.source.slice(0, 0, name=f"{self.source.name}#{entry.column}.{entry.index_type}")
        return self.source.slice(entry.offset, entry.length,
                                 name=f"{self.source.name}#{entry.column}.{entry.index_type}")

    def prefetch(self, columns: Iterable[str]) -> None:
        """Fetch the blobs of these columns in one request (their span), before readers read them."""
        if self.source.readahead <= 0:  # exact reads cost nothing (local files, bytes in memory)
            return
        wanted = set(columns)
        spans = [(e.offset, e.offset + e.length) for e in self.head.entries
                 if e.column in wanted and not e.empty and e.length > 0]
        if spans:
            start = min(s for s, _ in spans)
            self.source.prefetch(start, max(e for _, e in spans) - start)

    def reader(self, entry: IndexEntry, dtype: DataType,
               options: dict[str, str] | None = None) -> FileIndexReader:
        """The reader Paimon would use for this entry (``EmptyFileIndexReader`` for an empty one)."""
        if entry.empty:
            return EmptyFileIndexReader()
        return open_reader(entry.index_type, dtype, self.blob(entry), options or {})

    def summary(self) -> dict:
        head = self.head
        body = sum(e.length for e in head.entries if not e.empty)
        return {
            "file": self.source.name,
            "file_size": head.file_size,
            "version": head.version,
            "head_length": head.head_length,
            "redundant_length": head.redundant_length,
            "body_length": body,
            "columns": [
                {"name": col, "indexes": [
                    {"index_type": e.index_type, "offset": e.offset, "length": e.length, "empty": e.empty}
                    for e in head.entries_for(col)]}
                for col in head.columns()
            ],
        }


def read_container(source: ByteSource) -> FileIndexContainer:
    """Open a ``.index`` file, reading only its head."""
    return FileIndexContainer(source, read_head(source))


# ---------------------------------------------------------------------------------------
# Writing


def write_container(columns: list[tuple[str, list[tuple[str, bytes | None]]]],
                    redundant: bytes = b"") -> bytes:
    """The bytes of ``FileIndexFormat.Writer.writeColumnIndexes`` for columns in the given order.

    Each column lists ``(index_type, blob)``; a ``None`` blob is an empty-index entry. Non-empty
    ``redundant`` bytes (never written by Paimon 1) are placed in the head after their length.
    """
    names = bytearray()
    n_entries = 0
    for column, indexes in columns:
        names += encode_modified_utf8(column)
        for index_type, _ in indexes:
            names += encode_modified_utf8(index_type)
            n_entries += 1
    head_length = MIN_HEAD_LENGTH + 8 * n_entries + 4 * len(columns) + len(names) + len(redundant)

    head = bytearray(struct.pack(">qiii", MAGIC, VERSION, head_length, len(columns)))
    body = bytearray()
    for column, indexes in columns:
        head += encode_modified_utf8(column)
        head += struct.pack(">i", len(indexes))
        for index_type, blob in indexes:
            head += encode_modified_utf8(index_type)
            if blob is None:
                head += struct.pack(">ii", EMPTY_INDEX_FLAG, 0)
            else:
                head += struct.pack(">ii", head_length + len(body), len(blob))
                body += blob
    head += struct.pack(">i", len(redundant)) + redundant
    return bytes(head + body)
