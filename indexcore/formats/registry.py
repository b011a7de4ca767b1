"""The file-index kinds indexcore reads and writes, one :class:`IndexKind` each, in Paimon's order.

Every list of kinds (options, pages, audits, listings) comes from :data:`FILE_INDEX_KINDS`; a new
kind is its format module plus one entry here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from indexcore.errors import IndexCoreError, UnsupportedError
from indexcore.expr.functions import FunctionVisitor
from indexcore.formats.base import FileIndexReader, FileIndexWriter
from indexcore.formats.bitmap.audit import audit_bitmap
from indexcore.formats.bitmap.reader import BitmapReader
from indexcore.formats.bitmap.writer import BitmapWriter
from indexcore.formats.bloom import BloomFilterReader, BloomFilterWriter, audit_bloom_filter
from indexcore.formats.bsi import BsiReader, BsiWriter
from indexcore.formats.bsi_audit import audit_bsi
from indexcore.formats.column_values import ColumnValues, Disagreement
from indexcore.formats.range_bitmap.audit import audit_range_bitmap
from indexcore.formats.range_bitmap.reader import RangeBitmapReader
from indexcore.formats.range_bitmap.writer import RangeBitmapWriter
from indexcore.io import ByteSource
from indexcore.types import DataType

#: a kind's audit: (its reader over one file's blob, the file's column, the file's row count) ->
#: how the index disagrees with the column (nothing when it agrees), yielded as found
AuditCheck = Callable[[FileIndexReader, ColumnValues, int], Iterator[Disagreement]]


@dataclass(frozen=True)
class IndexKind:
    """One file-index kind: its Paimon name, reader and writer, the options they read, its audit
    check and the explorer page (a key such as ``"bitmap"``; titles live in ``pages/``) explaining it.

    ``writer_options`` are read as ``file-index.<name>.<column>.<option>``; ``reader_options`` are
    booleans the reader reads (the written bytes do not change).
    """

    name: str
    reader: type[FileIndexReader]
    writer: type[FileIndexWriter]
    writer_options: tuple[str, ...]
    audit: AuditCheck
    page: str
    reader_options: tuple[str, ...] = ()

    def answers(self, method: str | None) -> bool:
        """Whether the reader implements the visitor ``method`` (``visit_equal``, ...); a leaf it
        does not implement is answered REMAIN, as Paimon's ``FileIndexReader`` defaults do."""
        return method is not None and getattr(self.reader, method, None) is not getattr(FunctionVisitor, method, None)

    def open_reader(self, dtype: DataType, source: ByteSource,
                    options: dict[str, str] | None = None) -> FileIndexReader:
        """A reader over one index blob (``source`` holds exactly that blob)."""
        return self.reader(dtype, source, options or {})

    def new_writer(self, dtype: DataType, options: dict[str, str] | None = None) -> FileIndexWriter:
        """A writer producing the bytes Paimon's writer would; a bad option value is an
        :class:`UnsupportedError`."""
        try:
            return self.writer(dtype, options or {})
        except (ValueError, TypeError, OverflowError) as exc:
            raise UnsupportedError(f"{self.name} options {options}: {exc}") from exc

    def check_options(self, options: dict[str, str], dtype: DataType | None = None) -> None:
        """Refuse options this kind does not read (Paimon ignores them silently, so a typo would
        build another index than the one asked for) and values Paimon would refuse or misread:
        with ``dtype`` the writer is built once, so its own checks run (bloom ``items`` a
        positive 32-bit int and ``fpp`` in (0, 1), bitmap ``version`` 1 or 2, memory sizes)."""
        accepted = self.writer_options + self.reader_options
        unknown = sorted(set(options) - set(accepted))
        if unknown:
            takes = ", ".join(accepted) if accepted else "no options"
            raise IndexCoreError(f"{self.name} does not take {', '.join(unknown)}; it takes {takes}")
        for key in self.reader_options:
            if key in options and str(options[key]).strip().lower() not in ("true", "false"):
                raise IndexCoreError(f"{self.name} option {key}={options[key]!r} must be true or false")
        if dtype is not None:
            self.new_writer(dtype, options)

    def supports(self, dtype: DataType) -> bool:
        """Whether the kind can be built on a column of ``dtype`` (its writer accepts it)."""
        try:
            self.new_writer(dtype, {})
        except IndexCoreError:
            return False
        return True


BLOOM_FILTER = IndexKind("bloom-filter", BloomFilterReader, BloomFilterWriter, ("items", "fpp"),
                         audit_bloom_filter, "bloom")
BITMAP = IndexKind("bitmap", BitmapReader, BitmapWriter, ("version", "index-block-size"), audit_bitmap, "bitmap",
                   reader_options=("enable-buffered-input", "enable-next-offset-to-size"))
RANGE_BITMAP = IndexKind("range-bitmap", RangeBitmapReader, RangeBitmapWriter, ("chunk-size",),
                         audit_range_bitmap, "range")
BSI = IndexKind("bsi", BsiReader, BsiWriter, (), audit_bsi, "range")

#: the file-index kinds, in the order Paimon (and every listing) uses
FILE_INDEX_KINDS: tuple[IndexKind, ...] = (BLOOM_FILTER, BITMAP, RANGE_BITMAP, BSI)
#: their Paimon names, in that order
FILE_INDEX_TYPES: tuple[str, ...] = tuple(k.name for k in FILE_INDEX_KINDS)
_BY_NAME = {k.name: k for k in FILE_INDEX_KINDS}


def page_kinds(page: str) -> tuple[str, ...]:
    """The names of the kinds the explorer page ``page`` (an :attr:`IndexKind.page` key) explains."""
    return tuple(k.name for k in FILE_INDEX_KINDS if k.page == page)


def index_kind(index_type: str) -> IndexKind:
    """The kind named ``index_type``; an :class:`UnsupportedError` for a kind indexcore does not decode."""
    try:
        return _BY_NAME[index_type]
    except KeyError:
        raise UnsupportedError(f"file index type {index_type!r} is not decoded by indexcore") from None


def open_reader(index_type: str, dtype: DataType, source: ByteSource,
                options: dict[str, str] | None = None) -> FileIndexReader:
    """A reader over one index blob of kind ``index_type`` (``source`` holds exactly that blob)."""
    return index_kind(index_type).open_reader(dtype, source, options)


def new_writer(index_type: str, dtype: DataType, options: dict[str, str] | None = None) -> FileIndexWriter:
    """A writer of kind ``index_type``, producing the same bytes Paimon's writer would."""
    return index_kind(index_type).new_writer(dtype, options)


def new_writers(index_type: str, dtype: DataType, options: dict[str, str] | None,
                arrays: Sequence) -> list[FileIndexWriter] | None:
    """One writer of kind ``index_type`` per Arrow column of ``arrays``, each holding what
    ``write_arrow`` of that column alone would, built together where the kind can
    (:meth:`FileIndexWriter.many`); None where it cannot (then write them one by one)."""
    kind = index_kind(index_type)
    try:
        return kind.writer.many(dtype, options or {}, arrays)
    except (ValueError, TypeError, OverflowError) as exc:
        raise UnsupportedError(f"{kind.name} options {options}: {exc}") from exc


def check_writer_options(index_type: str, options: dict[str, str], dtype: DataType | None = None) -> None:
    """:meth:`IndexKind.check_options` of the kind named ``index_type`` (unknown kinds refused)."""
    index_kind(index_type).check_options(options, dtype)


def supported_index_types(dtype: DataType) -> list[str]:
    """The file index types that can be built on a column of ``dtype`` (their writers accept it)."""
    return [k.name for k in FILE_INDEX_KINDS if k.supports(dtype)]
