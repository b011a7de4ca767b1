"""Pure decoders and encoders of Paimon's index formats, one module per format.

``open_reader`` / ``new_writer`` find a file-index format by its Paimon name
(``bloom-filter``, ``bitmap``, ``range-bitmap``, ``bsi``).
"""

from __future__ import annotations

import importlib

from ..errors import UnsupportedError
from ..io import ByteSource
from ..types import DataType
from .base import REMAIN, SKIP, BitmapResult, FileIndexReader, FileIndexResult, FileIndexWriter

# Paimon index type name -> (module, reader class, writer class)
FILE_INDEX_TYPES: dict[str, tuple[str, str, str]] = {
    "bloom-filter": ("bloom", "BloomFilterReader", "BloomFilterWriter"),
    "bitmap": ("bitmap", "BitmapReader", "BitmapWriter"),
    "range-bitmap": ("range_bitmap", "RangeBitmapReader", "RangeBitmapWriter"),
    "bsi": ("bsi", "BsiReader", "BsiWriter"),
}


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
    """A writer producing the same bytes Paimon's writer would for the same rows."""
    return _load(index_type, 1)(dtype, options or {})


__all__ = ["FILE_INDEX_TYPES", "open_reader", "new_writer", "FileIndexReader", "FileIndexWriter",
           "FileIndexResult", "BitmapResult", "REMAIN", "SKIP"]
