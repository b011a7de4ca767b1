"""Mosaic data files (Paimon's columnar format, ``file.format = mosaic``) read through ``paimon-mosaic``.

The library decodes; every byte it asks for comes through our storage layer as a ranged read
of a :class:`~indexcore.io.ByteSource` (``read_at(offset, length)``), so object stores, the
range cache and the allowed roots work as for every other file. The package is optional
(``pip install "indexcore[mosaic]"``); without it a Mosaic file is a clear
:class:`~indexcore.errors.UnsupportedError`.
"""

from __future__ import annotations

import pyarrow as pa

from indexcore.errors import CorruptFileError
from indexcore.formats.native import SourceReads, missing_package
from indexcore.io import ByteSource

MOSAIC_PACKAGE = "paimon-mosaic"
MOSAIC_EXTRA = "mosaic"


def read_mosaic(source: ByteSource, columns: list[str] | None = None) -> pa.Table:
    """All row groups of one Mosaic file (optionally only ``columns``), as Arrow."""
    try:
        import mosaic  # optional native reader (paimon-mosaic): heavy, only for Mosaic files
    except ImportError:
        raise missing_package(MOSAIC_PACKAGE, MOSAIC_EXTRA, "data file format Mosaic", source.name) from None
    read_at = SourceReads(source, "mosaic")
    try:
        return mosaic.read_table(read_at, source.size, columns=columns)
    except (RuntimeError, ValueError, OSError) as exc:
        if read_at.error is not None:
            raise read_at.error from exc
        raise CorruptFileError(f"cannot read Mosaic data file: {exc}", file=source.name, structure="mosaic") from exc
