"""Pure decoders and encoders of Paimon's index formats, one module per format.

``open_reader`` / ``new_writer`` find a file-index format by its Paimon name
(``bloom-filter``, ``bitmap``, ``range-bitmap``, ``bsi``).
"""

from __future__ import annotations

import importlib

from indexcore.errors import IndexCoreError, UnsupportedError
from indexcore.formats.base import (
    REMAIN,
    SKIP,
    BitmapResult,
    FileIndexReader,
    FileIndexResult,
    FileIndexWriter,
)
from indexcore.io import ByteSource
from indexcore.types import DataType

# Paimon index type name -> (module, reader class, writer class)
FILE_INDEX_TYPES: dict[str, tuple[str, str, str]] = {
    "bloom-filter": ("bloom", "BloomFilterReader", "BloomFilterWriter"),
    "bitmap": ("bitmap", "BitmapReader", "BitmapWriter"),
    "range-bitmap": ("range_bitmap", "RangeBitmapReader", "RangeBitmapWriter"),
    "bsi": ("bsi", "BsiReader", "BsiWriter"),
}

# Paimon's file index type names, in the order every listing uses
FILE_INDEX_ORDER: tuple[str, ...] = tuple(FILE_INDEX_TYPES)

# Paimon index type name -> the per-index options its writer reads
# (``file-index.<type>.<column>.<option>`` in table options)
WRITER_OPTIONS: dict[str, tuple[str, ...]] = {
    "bloom-filter": ("items", "fpp"),
    "bitmap": ("version", "index-block-size"),
    "range-bitmap": ("chunk-size",),
    "bsi": (),
}


# Paimon index type name -> boolean options its reader reads (the written bytes do not change)
READER_OPTIONS: dict[str, tuple[str, ...]] = {
    "bitmap": ("enable-buffered-input", "enable-next-offset-to-size"),
}


def check_writer_options(index_type: str, options: dict[str, str], dtype: DataType | None = None) -> None:
    """Refuse options the ``index_type`` index does not read (Paimon ignores them silently, so a
    typo would build a different index than the one asked for) and values Paimon would refuse
    or misread: with ``dtype`` the writer is built once, so its own checks run (bloom ``items``
    a positive 32-bit int and ``fpp`` in (0, 1), bitmap ``version`` 1 or 2, memory sizes)."""
    _load(index_type, 1)
    accepted = WRITER_OPTIONS.get(index_type, ()) + READER_OPTIONS.get(index_type, ())
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        takes = ", ".join(accepted) if accepted else "no options"
        raise IndexCoreError(f"{index_type} does not take {', '.join(unknown)}; it takes {takes}")
    for key in READER_OPTIONS.get(index_type, ()):
        if key in options and str(options[key]).strip().lower() not in ("true", "false"):
            raise IndexCoreError(f"{index_type} option {key}={options[key]!r} must be true or false")
    if dtype is not None:
        new_writer(index_type, dtype, options)


def _load(index_type: str, which: int):
    try:
        module, *names = FILE_INDEX_TYPES[index_type]
    except KeyError:
        raise UnsupportedError(f"file index type {index_type!r} is not decoded by indexcore") from None
    return getattr(importlib.import_module(f"{__name__}.{module}"), names[which])


def open_reader(index_type: str, dtype: DataType, source: ByteSource,
                options: dict[str, str] | None = None) -> FileIndexReader:
    """A reader over one index blob (``source`` holds exactly that blob)."""
    return _load(index_type, 0)(dtype, source, options or {})


def new_writer(index_type: str, dtype: DataType, options: dict[str, str] | None = None) -> FileIndexWriter:
    """A writer producing the same bytes Paimon's writer would for the same rows; a bad option
    value is an :class:`UnsupportedError`."""
    writer = _load(index_type, 1)
    try:
        return writer(dtype, options or {})
    except (ValueError, TypeError, OverflowError) as exc:
        raise UnsupportedError(f"{index_type} options {options}: {exc}") from exc


__all__ = ["FILE_INDEX_ORDER", "FILE_INDEX_TYPES", "supported_index_types", "READER_OPTIONS", "WRITER_OPTIONS", "check_writer_options", "open_reader", "new_writer", "FileIndexReader", "FileIndexWriter",
           "FileIndexResult", "BitmapResult", "REMAIN", "SKIP"]


def supported_index_types(dtype: DataType) -> list[str]:
    """The file index types that can be built on a column of ``dtype`` (their writers accept it)."""
    out = []
    for index_type in FILE_INDEX_ORDER:
        try:
            new_writer(index_type, dtype, {})
        except IndexCoreError:
            continue
        out.append(index_type)
    return out
