"""What every file-index format shares: Paimon's three results, and the reader/writer shapes.

A reader answers one predicate leaf at a time (Paimon's ``FileIndexReader.visitXxx``) with
REMAIN (the file may match), SKIP (no row matches) or a bitmap of the rows that may match.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Iterable, Sequence
from itertools import islice
from typing import Any, NoReturn

from pyroaring import BitMap

from indexcore.errors import CorruptFileError, UnsupportedError
from indexcore.expr.functions import FunctionVisitor
from indexcore.expr.tree import Leaf
from indexcore.types import DataType


class FileIndexResult:
    """Paimon's ``FileIndexResult``: REMAIN and SKIP are the two constants."""

    __slots__ = ()  # a result per explained file: no instance dict (300 bytes each at 1,000,000 files)
    name = "RESULT"

    def remain(self) -> bool:
        raise NotImplementedError

    def and_(self, other: FileIndexResult) -> FileIndexResult:
        raise NotImplementedError

    def or_(self, other: FileIndexResult) -> FileIndexResult:
        raise NotImplementedError

    def to_json(self) -> Any:
        return self.name

    def __repr__(self) -> str:
        return self.name


class _Constant(FileIndexResult):
    """REMAIN or SKIP. AND with REMAIN and OR with SKIP give the other side; AND with SKIP and
    OR with REMAIN give the constant itself. Unpickles as the module's own constant."""

    __slots__ = ("name", "_keep")

    def __init__(self, name: str, keep: bool):
        self.name = name
        self._keep = keep

    def remain(self) -> bool:
        return self._keep

    def and_(self, other: FileIndexResult) -> FileIndexResult:
        return other if self._keep else self

    def or_(self, other: FileIndexResult) -> FileIndexResult:
        return self if self._keep else other

    def __reduce__(self) -> str:
        return self.name


REMAIN: FileIndexResult = _Constant("REMAIN", True)
SKIP: FileIndexResult = _Constant("SKIP", False)


class BitmapResult(FileIndexResult):
    """Paimon's ``BitmapIndexResult``: the rows that may match; empty means no row."""

    __slots__ = ("bitmap",)
    name = "BITMAP"

    def __init__(self, bitmap: BitMap):
        self.bitmap = bitmap

    def remain(self) -> bool:
        return len(self.bitmap) > 0

    def and_(self, other: FileIndexResult) -> FileIndexResult:
        if isinstance(other, BitmapResult):
            return BitmapResult(self.bitmap & other.bitmap)
        return self if other.remain() else SKIP

    def or_(self, other: FileIndexResult) -> FileIndexResult:
        if isinstance(other, BitmapResult):
            return BitmapResult(self.bitmap | other.bitmap)
        return REMAIN if other.remain() else self

    def to_json(self) -> Any:
        return listed_positions(self.bitmap, "rows")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, BitmapResult) and self.bitmap == other.bitmap

    def __hash__(self) -> int:
        return hash(tuple(self.bitmap))

    def __repr__(self) -> str:
        return f"BitmapResult({len(self.bitmap)} rows)"


MAX_LISTED_POSITIONS = 1_000_000


def listed_positions(positions: Iterable[int], key: str, count: int | None = None) -> dict:
    """``{key: [positions]}`` for JSON, at most :data:`MAX_LISTED_POSITIONS` of them.

    A bitmap can hold 2^31 positions in a few bytes (a run), so a listing is capped: a longer
    one keeps its first positions, with the full count and a note saying it was cut.
    """
    count = len(positions) if count is None else count  # type: ignore[arg-type]
    if count <= MAX_LISTED_POSITIONS:
        return {key: list(positions)}
    return {key: list(islice(positions, MAX_LISTED_POSITIONS)), f"{key}_count": count,
            "note": f"only the first {MAX_LISTED_POSITIONS:,} of {count:,} {key} are listed"}


class FileIndexReader(FunctionVisitor):
    """Base reader (Paimon's ``FileIndexReader``, a function visitor): every visit answers
    REMAIN unless a format knows better."""

    index_type = "unknown"

    def visit(self, leaf: Leaf) -> FileIndexResult:
        """Answer one leaf: its function calls the matching ``visit_*`` method."""
        return leaf.function.visit(self, leaf.literals)

    def unanswered(self) -> FileIndexResult:
        return REMAIN

    def summary(self) -> dict:
        """Figures the explorer charts for this index (format-specific keys)."""
        return {"index_type": self.index_type}


class FileIndexWriter:
    """Base writer: one ``write(value)`` per row in row order, then ``serialized_bytes()``."""

    index_type = "unknown"

    def __init__(self, dtype: DataType, options: dict[str, str] | None = None):
        self.dtype = dtype
        self.options = dict(options or {})

    def write(self, value: Any) -> None:
        raise NotImplementedError

    def write_batch(self, values: Sequence[Any]) -> None:
        """Write many rows (internal values, in row order); formats override it with bulk code."""
        for value in values:
            self.write(value)

    def accepts_arrow(self, arrow_type: Any) -> bool:
        """Whether :meth:`write_arrow` takes a column of this Arrow type without conversion."""
        return False

    def write_arrow(self, array: Any) -> None:
        """Write a whole Arrow column (Array or ChunkedArray) as rows; see :meth:`accepts_arrow`."""
        raise UnsupportedError(f"the {self.index_type} writer does not take Arrow {array.type} columns")

    def serialized_bytes(self) -> bytes:
        raise NotImplementedError

    @classmethod
    def many(cls, dtype: DataType, options: dict[str, str] | None, arrays: Sequence[Any]) -> list[FileIndexWriter] | None:
        """One writer per Arrow column of ``arrays``, each holding what :meth:`write_arrow` of that
        column alone would, built together; None where a format does not (write them one by one)."""
        return None

    def reader(self) -> FileIndexReader | None:
        """A reader over what was written that answers as one over :meth:`serialized_bytes`
        does, built from the writer's parts without parsing bytes (what-if measures); None where
        a format offers none (then read the bytes)."""
        return None

    @property
    def empty(self) -> bool:
        """Paimon's ``FileIndexWriter.empty()``: true when nothing was written."""
        return False


_MEMORY_SIZE = re.compile(r"\s*([0-9]+)\s*([a-zA-Z]*)\s*")
_MEMORY_UNITS = {"": 1, "b": 1, "bytes": 1, "k": 1 << 10, "kb": 1 << 10, "kibibytes": 1 << 10, "m": 1 << 20,
                 "mb": 1 << 20, "mebibytes": 1 << 20, "g": 1 << 30, "gb": 1 << 30, "gibibytes": 1 << 30,
                 "t": 1 << 40, "tb": 1 << 40, "tebibytes": 1 << 40}


def parse_memory_size(text: str) -> int:
    """Paimon's ``MemorySize.parse`` for index options: ``16kb``, ``256b``, ``1 mb``, plain bytes."""
    m = _MEMORY_SIZE.fullmatch(str(text))
    unit = m.group(2).lower() if m else None
    if m is None or unit not in _MEMORY_UNITS:
        raise UnsupportedError(f"cannot parse memory size {text!r}")
    size = int(m.group(1)) * _MEMORY_UNITS[unit]
    if size >= 1 << 63:  # Paimon's MemorySize is a Java long
        raise UnsupportedError(f"memory size {text!r} overflows 64 bits")
    return size


_I8 = struct.Struct(">b")
_I32 = struct.Struct(">i")


class ByteCursor:
    """Reads big-endian fields in order from bytes already fetched; running short, or a bad
    value the caller reports, is a :class:`CorruptFileError` naming the file, the structure and
    the absolute offset (``base`` is the offset of ``data`` in the file)."""

    def __init__(self, data: bytes, base: int, file: str, structure: str):
        self.data, self.base, self.file, self.structure = data, base, file, structure
        self.pos = 0

    def error(self, message: str, at: int | None = None) -> CorruptFileError:
        """The error at position ``at`` of ``data`` (default: the current position)."""
        return CorruptFileError(message, file=self.file, structure=self.structure,
                                offset=self.base + (self.pos if at is None else at))

    def fail(self, message: str, delta: int = 0) -> NoReturn:
        """Raise :meth:`error` at ``delta`` bytes from the current position."""
        raise self.error(message, self.pos + delta)

    def take(self, n: int, what: str | None = None) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise self.error(f"needs {n} bytes{' for ' + what if what else ''} but {self.left} remain")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def unpack(self, packer: struct.Struct, what: str | None = None) -> Any:
        """The first field ``packer`` reads at the current position."""
        pos = self.pos
        end = pos + packer.size
        if end > len(self.data):
            self.take(packer.size, what)
        self.pos = end
        return packer.unpack_from(self.data, pos)[0]

    def i8(self, what: str | None = None) -> int:
        return self.unpack(_I8, what)

    def i32(self, what: str | None = None) -> int:
        return self.unpack(_I32, what)

    def length(self, what: str) -> int:
        """A non-negative 4-byte length or count."""
        value = self.i32(what)
        if value < 0:
            self.fail(f"negative {what} {value}", -4)
        return value

    def fits(self, n: int) -> bool:
        return self.pos + n <= len(self.data)

    @property
    def left(self) -> int:
        return max(len(self.data) - self.pos, 0)
