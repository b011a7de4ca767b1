"""Audit of a BSI index (:mod:`indexcore.formats.bsi`) against its column's rows: row count,
min/max, null rows, every row's stored value equal to the data."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from pyroaring import BitMap

from indexcore.formats.bsi import BsiReader
from indexcore.formats.column_values import (
    LONG_MAX,
    LONG_MIN,
    MIN_MAX,
    VALUE_COVERAGE,
    ColumnValues,
    Disagreement,
    checks_row_count,
    null_rows_disagreement,
    positions_of,
    show,
    slice_codes,
)


@checks_row_count
def audit_bsi(reader: BsiReader, col: ColumnValues, n: int) -> Iterator[Disagreement]:
    """Where the BSI index and the column's rows disagree (empty when they agree)."""
    not_null = reader.visit_is_not_null().bitmap
    bad_nulls = null_rows_disagreement(BitMap(not_null).flip(0, n), col)
    if bad_nulls is not None:
        yield bad_nulls
    stored = np.zeros(n, dtype=np.int64)
    with np.errstate(over="ignore"):
        for part, sign in ((reader.positive, 1), (reader.negative, -1)):
            if not part.ebm:
                continue
            codes = slice_codes(part.ebm, part.slices, n)
            rows = positions_of(part.ebm, n)
            stored[rows] = sign * (np.int64(part.min) + codes[rows])
    idx = col.index
    present, keys = col.row_longs()
    if present:
        summary_lo = -reader.negative.extreme(largest=True) if reader.negative.ebm else \
            reader.positive.extreme(largest=False)
        summary_hi = reader.positive.extreme(largest=True) if reader.positive.ebm else \
            (-reader.negative.extreme(largest=False) if reader.negative.ebm else None)
        if (summary_lo, summary_hi) != (min(present), max(present)):
            yield Disagreement(MIN_MAX, "index min/max differ from the data", [summary_lo, summary_hi])
    valued = idx >= 0
    stored_ok = np.zeros(n, dtype=bool)
    stored_ok[positions_of(not_null, n)] = True
    # a key outside the long range cannot be in a BSI: such rows never agree
    fits = np.array([LONG_MIN <= k <= LONG_MAX for k in present] + [True], dtype=bool)
    wrong_rows = np.flatnonzero(valued & (~stored_ok | ~fits[idx] | (stored != keys)))
    if len(wrong_rows):
        yield Disagreement(VALUE_COVERAGE, f"{len(wrong_rows)} rows hold another value in the index",
                           show(col.dtype, col.rows_values(wrong_rows)))
