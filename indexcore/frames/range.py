"""Frames of the Range-bitmap and BSI page: value range, nulls, dictionary and slices per index;
a min/max cell as a value of its column, the default range predicate and the band a predicate allows."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pandas as pd

from indexcore.errors import IndexCoreError
from indexcore.expr import Leaf, conjuncts, literal_to_sql, parse_where, quote_name
from indexcore.formats.registry import page_kinds
from indexcore.frames.progress import Progress
from indexcore.types import INTEGER_ROOTS, DataType, from_text_or_python, to_python
from indexcore.views.blob_bytes import file_columns, summaries_of_rows
from indexcore.views.census import census_rows_of, snapshot_census
from indexcore.views.census_rows import values_of

RANGE_TYPES = page_kinds("range")  # the kinds the Range page explains


def range_frame(table, snapshot_id: int | None = None, progress: Progress | None = None,
                sample: int | None = None, column: str | None = None) -> pd.DataFrame:
    """Per range-bitmap / BSI index (``sample``: of that many files; ``column``: of that column
    only, the one a page shows): value range, nulls, dictionary size, slices and bytes.

    Built on the census's columns: each blob's reader opened on its container's bytes (read whole
    once) and kept for the pruning table, no live file per file (:func:`summaries_of_rows`)."""
    census = census_rows_of(snapshot_census(table, snapshot_id, progress, sample), RANGE_TYPES, column)
    summaries = summaries_of_rows(table, census, snapshot_id, keep=True)
    names, partitions, buckets, row_counts = file_columns(table, census, np.arange(census.num_rows))
    columns = {"file_name": names.to_pylist(), "partition": partitions.to_pylist(), "bucket": buckets.to_pylist(),
               "row_count": row_counts.to_pylist(), "column": values_of(census["column_name"]),
               "index_type": values_of(census["index_type"]), "size": census["index_size_in_bytes"].to_pylist()}
    for name in ("min", "max", "null_count", "dictionary_size", "slice_count", "chunk_count"):
        columns[name] = [s.get(name) if "min" in s else _MISSING for s in summaries]
    columns["error"] = [s.get("error") for s in summaries]
    frame = pd.DataFrame(_records(columns), columns=_COLUMNS)
    for col in ("min", "max"):
        frame[col] = frame[col].map(lambda v: v if v is None or isinstance(v, int | float) else str(v))
    return frame


_MISSING = float("nan")  # a figure an error or an empty index does not have (as a missing key was)
_COLUMNS = ["file_name", "partition", "bucket", "row_count", "column", "index_type", "size", "min", "max",
            "null_count", "dictionary_size", "slice_count", "chunk_count", "error"]


def _records(columns: dict[str, list]) -> list[tuple]:
    """Rows of ``columns`` in :data:`_COLUMNS` order: pandas infers each column's type from rows as
    it did when this frame was built from one dict per index (same dtypes, same missing values)."""
    return list(zip(*(columns[name] for name in _COLUMNS), strict=True))


def cell_value(dtype: DataType, text):
    """A min/max cell (internal value or its text) as a Python value of the column's type."""
    try:
        return to_python(dtype, from_text_or_python(dtype, text))
    except IndexCoreError:
        return None


def default_predicate(column: str, dtype: DataType, lo, hi) -> str:
    """``column BETWEEN a AND b`` over the second quarter of the indexed range, as SQL literals
    (the column quoted when it is not a plain identifier)."""
    if isinstance(lo, dt.date):  # a date or a timestamp
        a, b = lo + (hi - lo) * 0.25, lo + (hi - lo) / 2
        if isinstance(a, dt.datetime):
            a, b = (v.replace(microsecond=0) for v in (a, b))
    else:
        lo, hi = float(lo), float(hi)
        a, b = lo + (hi - lo) * 0.25, lo + (hi - lo) / 2
        a, b = (round(a), round(b)) if dtype.root in INTEGER_ROOTS else (float(f"{a:.6g}"), float(f"{b:.6g}"))
    lits = [literal_to_sql(from_text_or_python(dtype, v), dtype) for v in (a, b)]
    return f"{quote_name(column)} BETWEEN {lits[0]} AND {lits[1]}"


def predicate_band(sql: str, column: str, dtype: DataType, row_type) -> tuple:
    """The range of ``column`` the predicate's conjuncts allow (None: open or not a range)."""
    low = high = None
    try:
        predicate = parse_where(sql, row_type)
    except IndexCoreError:
        return None, None
    for leaf in conjuncts(predicate):
        if not isinstance(leaf, Leaf) or leaf.field != column or None in leaf.literals:
            continue
        name, lits = leaf.function.name, [to_python(dtype, v) for v in leaf.literals]
        if name in ("between", "equal", "greaterThan", "greaterOrEqual"):
            low = lits[0] if low is None else max(low, lits[0])
        if name in ("between", "equal", "lessThan", "lessOrEqual"):
            high = lits[-1] if high is None else min(high, lits[-1])
    return low, high
