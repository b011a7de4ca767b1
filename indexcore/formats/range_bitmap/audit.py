"""Audit of a range-bitmap index against its column: row count, min/max, null rows, and every row's
stored value rebuilt from the bit slices equal to the data."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from indexcore.formats import column_values as checks  # the checks' names: checks.VALUE_COVERAGE, ...
from indexcore.formats.column_values import ColumnValues, Disagreement, checks_row_count, show
from indexcore.formats.range_bitmap.reader import RangeBitmapReader


@checks_row_count
def audit_range_bitmap(reader: RangeBitmapReader, col: ColumnValues, n: int) -> Iterator[Disagreement]:
    """Where the range-bitmap index and the column's rows disagree (empty when they agree)."""
    dtype = col.dtype
    bad_nulls = checks.null_rows_disagreement(reader.visit_is_null().bitmap, col)
    agrees = bad_nulls is None
    if not agrees:
        yield bad_nulls
    codec = reader.codec
    distinct, idx = col.encoded
    present = [codec.order_of_value(v) for v in distinct]
    if present and reader.cardinality > 0:
        lo, hi = min(present), max(present)
        if (codec.order(reader.min_raw), codec.order(reader.max_raw)) != (lo, hi):
            agrees = False
            yield Disagreement(checks.MIN_MAX, "index min/max differ from the data",
                               show(dtype, [codec.to_value(reader.min_raw), codec.to_value(reader.max_raw)]))
    elif present:
        agrees = False
        yield Disagreement(checks.VALUE_COVERAGE, "index holds no value but the data does")
    if not agrees or not present:
        return
    bsi = reader.bsi
    codes = checks.slice_codes(bsi.ebm(), bsi.load_all(), n)
    valued = idx >= 0
    pair = codes * len(distinct) + idx
    bad = []
    for p in np.unique(pair[valued]).tolist():
        code, j = divmod(p, len(distinct))
        stored = codec.order(reader.dictionary.raw_key(code)) if code < reader.cardinality else None
        if stored != present[j]:
            bad.append(p)
    if bad:
        rows = np.flatnonzero(valued & np.isin(pair, bad))
        yield Disagreement(checks.VALUE_COVERAGE, f"{len(rows)} rows hold another value in the index",
                           show(dtype, col.rows_values(rows)))
