"""Audit of a bitmap index against its column: row count, dictionary keys == distinct data values,
every value's rows exact (null rows included)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
from pyroaring import BitMap

from indexcore.formats import column_values as checks  # the checks' names: checks.VALUE_COVERAGE, ...
from indexcore.formats.bitmap.reader import BitmapReader
from indexcore.formats.bulk import bitmap_of
from indexcore.formats.column_values import ColumnValues, Disagreement, checks_row_count, show


@checks_row_count
def audit_bitmap(reader: BitmapReader, col: ColumnValues, n: int) -> Iterator[Disagreement]:
    """Where the bitmap index and the column's rows disagree (empty when they agree)."""
    dtype = col.dtype
    codec = reader.codec
    distinct, _ = col.encoded
    keys = [codec.key(v) for v in distinct]
    by_key: dict[Any, BitMap] = {}
    for j, rows in col.groups():
        key = None if j < 0 else keys[j]
        if key in by_key:
            by_key[key] |= bitmap_of(np.sort(rows))
        else:
            by_key[key] = bitmap_of(rows)
    index_keys = {e.key for e in reader.entries()}
    data_keys = {k for k in by_key if k is not None}
    missing = data_keys - index_keys
    if missing:
        yield Disagreement(checks.VALUE_COVERAGE, f"{len(missing)} data values are not in the bitmap dictionary",
                           show(dtype, (codec.value(k) for k in missing)))
    extra = index_keys - data_keys
    if extra:
        yield Disagreement(checks.STALE_VALUES, f"{len(extra)} dictionary values do not occur in the data",
                           show(dtype, (codec.value(k) for k in extra)))
    wrong = []
    for key, rows in by_key.items():
        if key is not None and key not in index_keys:
            continue
        got = reader.null_bitmap() if key is None else reader.bitmap_for(codec.value(key))
        if got != rows:
            wrong.append(None if key is None else codec.value(key))
    if wrong:
        yield Disagreement(checks.BITMAP_ROWS, f"rows of {len(wrong)} values differ from the data", show(dtype, wrong))
    if None not in by_key and reader.null_bitmap():
        yield Disagreement(checks.BITMAP_ROWS, "index has null rows but the data has no null")
