"""Range-bitmap and BSI: value range per file, dictionary and slices, and how a range prunes."""

import datetime as dt

import pandas as pd
import streamlit as st

from indexcore.errors import IndexCoreError
from indexcore.expr import Leaf, conjuncts, literal_to_sql, parse_where
from indexcore.formats.registry import page_kinds
from indexcore.frames import figures
from indexcore.types import INTEGER_ROOTS, DataType, from_text_or_python, to_python
from pages.common import (
    context,
    decode_sample,
    guard,
    index_columns,
    need_table,
    needs,
    show_frame,
    show_unusable,
    unusable_files,
)

RANGE_TYPES = page_kinds("range")

st.title("Range-bitmap and BSI")
ctx = context()
if not need_table(ctx):
    st.stop()


def _value(dtype: DataType, text):
    """A min/max cell (internal value or its text) as a Python value of the column's type."""
    try:
        return to_python(dtype, from_text_or_python(dtype, text))
    except IndexCoreError:
        return None


def _default_predicate(column: str, dtype: DataType, lo, hi) -> str:
    """``column BETWEEN a AND b`` over the second quarter of the indexed range, as SQL literals."""
    if isinstance(lo, dt.date):  # a date or a timestamp
        a, b = lo + (hi - lo) * 0.25, lo + (hi - lo) / 2
        if isinstance(a, dt.datetime):
            a, b = (v.replace(microsecond=0) for v in (a, b))
    else:
        lo, hi = float(lo), float(hi)
        a, b = lo + (hi - lo) * 0.25, lo + (hi - lo) / 2
        a, b = (round(a), round(b)) if dtype.root in INTEGER_ROOTS else (float(f"{a:.6g}"), float(f"{b:.6g}"))
    lits = [literal_to_sql(from_text_or_python(dtype, v), dtype) for v in (a, b)]
    return f"{column} BETWEEN {lits[0]} AND {lits[1]}"


def _band(sql: str, column: str, dtype: DataType, row_type) -> tuple:
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


column = mine = dtype = sample = None
with guard("Range indexes"):
    columns = index_columns(ctx, RANGE_TYPES)
    sample = decode_sample(ctx, RANGE_TYPES, "range")
    ranges = ctx.metric("range_frame", sample=sample)
    bad = unusable_files(ctx, RANGE_TYPES)
    own = ranges[ranges["error"].notna() & ~ranges["file_name"].isin(bad["file_name"])]
    bad = pd.concat([bad, own.rename(columns={"column": "column_name"}).assign(why="unreadable index")[bad.columns]],
                    ignore_index=True)
    show_unusable(bad, "range_unusable")
    if not columns:
        st.info("No range-bitmap or BSI index in this snapshot (`file-index.range-bitmap.columns`, "
                "`file-index.bsi.columns`).")
        st.stop()
    column = st.selectbox("Column", columns, key="range_column")
    dtype = ctx.table.schema().field(column).type
    mine = ranges[ranges["column"] == column].copy()
    mine["min"], mine["max"] = mine["min"].map(lambda v: _value(dtype, v)), mine["max"].map(lambda v: _value(dtype, v))
    c = st.columns(4)
    census = ctx.view("file_indexes")
    c[0].metric("Indexes", int((census["index_type"].isin(RANGE_TYPES) & (census["column_name"] == column)).sum()))
    c[1].metric("Types", ", ".join(sorted(mine["index_type"].unique())))
    c[2].metric("Largest dictionary", int(mine["dictionary_size"].max()) if mine["dictionary_size"].notna().any()
                else "–")
    c[3].metric("Most slices", int(mine["slice_count"].max()) if mine["slice_count"].notna().any() else "–")
    show_frame(mine, "range_files")

with guard("Range predicate"):
    st.subheader("How a range predicate prunes")
    needs("Range indexes", column, mine, dtype, sample)
    plotted = mine.dropna(subset=["min", "max"])
    plotted = plotted[plotted["min"].map(lambda v: isinstance(v, dt.date) or pd.api.types.is_number(v))]
    if not plotted.empty:
        default = _default_predicate(column, dtype, plotted["min"].min(), plotted["max"].max())
    else:
        default = f"{column} IS NOT NULL"
    picked = (ctx.url, ctx.table_name, ctx.snapshot_id, column)
    if st.session_state.get("range_sql_for") != picked or "range_sql" not in st.session_state:
        st.session_state["range_sql"] = default  # each column starts from its own range
        st.session_state["range_sql_for"] = picked
    sql = st.text_input("Predicate (SQL WHERE)", key="range_sql")
    pruned = ctx.metric("prune_by_sql", sql=sql, index_types=RANGE_TYPES, sample=sample)
    band = _band(sql, column, dtype, ctx.table.schema().row_type())
    st.plotly_chart(figures.value_ranges(mine, *band, title=f"Value range of {column} per file"), width="stretch")
    st.plotly_chart(figures.prune_counts(pruned, RANGE_TYPES), width="stretch")
    show_frame(pruned, "range_pruned")
