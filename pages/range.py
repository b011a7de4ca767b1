"""Range-bitmap and BSI: value range per file, dictionary and slices, and how a range prunes."""

import datetime as dt

import pandas as pd
import pyarrow.compute as pc
import streamlit as st

from indexcore.expr import quote_name
from indexcore.frames import pruning, range_figures
from indexcore.frames import range as range_frames
from indexcore.frames.range import RANGE_TYPES
from indexcore.frames.text import fmt_count
from indexcore.views.census import census_mask
from pages.common import (
    decode_sample,
    guard,
    index_columns,
    needs,
    open_page,
    show_unusable,
    unusable_files,
)
from pages.rows import show_frame

ctx = open_page("range")


column = mine = dtype = sample = None
with guard("Range indexes"):
    columns = index_columns(ctx, RANGE_TYPES)
    sample = decode_sample(ctx, RANGE_TYPES, "range")
    bad = unusable_files(ctx, RANGE_TYPES)
    if not columns:
        show_unusable(bad, "range_unusable")
        st.info("No range-bitmap or BSI index in this snapshot (`file-index.range-bitmap.columns`, "
                "`file-index.bsi.columns`).")
        st.stop()
    unusable_slot = st.container()  # above the column picker; filled once the picked column is decoded
    column = st.selectbox("Column", columns, key="range_column")
    ranges = ctx.frame(range_frames.range_frame, sample=sample, column=column)  # the picked column's indexes only
    own = ranges[ranges["error"].notna() & ~ranges["file_name"].isin(bad["file_name"])]
    bad = pd.concat([bad, own.rename(columns={"column": "column_name"}).assign(why="unreadable index")[bad.columns]],
                    ignore_index=True)
    with unusable_slot:
        show_unusable(bad, "range_unusable")
    dtype = ctx.table.schema().field(column).type
    mine = ranges[ranges["column"] == column].copy()
    mine["min"], mine["max"] = mine["min"].map(lambda v: range_frames.cell_value(dtype, v)), \
        mine["max"].map(lambda v: range_frames.cell_value(dtype, v))
    c = st.columns(4)
    census = ctx.census()
    c[0].metric("Indexes", fmt_count(int(pc.sum(census_mask(census, RANGE_TYPES, column)).as_py() or 0)))
    c[1].metric("Types", ", ".join(sorted(mine["index_type"].unique())))
    c[2].metric("Largest dictionary", fmt_count(int(mine["dictionary_size"].max()) if mine["dictionary_size"].notna().any()
                else "–"))
    c[3].metric("Most slices", fmt_count(int(mine["slice_count"].max()) if mine["slice_count"].notna().any() else "–"))
    show_frame(mine, "range_files")

with guard("Range predicate"):
    st.subheader("How a range predicate prunes")
    needs("Range indexes", column, mine, dtype, sample)
    plotted = mine.dropna(subset=["min", "max"])
    plotted = plotted[plotted["min"].map(lambda v: isinstance(v, dt.date) or pd.api.types.is_number(v))]
    if not plotted.empty:
        default = range_frames.default_predicate(column, dtype, plotted["min"].min(), plotted["max"].max())
    else:
        default = f"{quote_name(column)} IS NOT NULL"
    picked = (ctx.url, ctx.table_name, ctx.snapshot_id, column)
    if st.session_state.get("range_sql_for") != picked or "range_sql" not in st.session_state:
        st.session_state["range_sql"] = default  # each column starts from its own range
        st.session_state["range_sql_for"] = picked
    sql = st.text_input("Predicate (SQL WHERE)", key="range_sql")
    pruned = ctx.frame(pruning.prune_by_sql, sql=sql, index_types=RANGE_TYPES, sample=sample)
    band = range_frames.predicate_band(sql, column, dtype, ctx.table.schema().row_type())
    st.plotly_chart(range_figures.value_ranges(mine, *band, title=f"Value range of {column} per file"), width="stretch")
    live = ctx.table.plan_columns(ctx.snapshot_id).num_files
    st.plotly_chart(range_figures.prune_counts(pruned, RANGE_TYPES, population=live), width="stretch")
    show_frame(pruned, "range_pruned")
