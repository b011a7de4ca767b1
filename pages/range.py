"""Range-bitmap and BSI: value range per file, dictionary and slices, and how a range prunes."""

import re

import pandas as pd
import streamlit as st

from indexcore import figures
from pages.common import context, guard, index_columns, need_table, needs, show_frame

RANGE_TYPES = ("range-bitmap", "bsi")

st.title("Range-bitmap and BSI")
ctx = context()
if not need_table(ctx):
    st.stop()

column = mine = None
with guard("Range indexes"):
    columns = index_columns(ctx, RANGE_TYPES)
    if not columns:
        st.info("No range-bitmap or BSI index in this snapshot (`file-index.range-bitmap.columns`, "
                "`file-index.bsi.columns`).")
        st.stop()
    ranges = ctx.metric("range_frame")
    column = st.selectbox("Column", columns, key="range_column")
    mine = ranges[ranges["column"] == column]
    for _, row in mine[mine["error"].notna()].iterrows():
        st.warning(f"{row['file_name']} / {row['index_type']}: {row['error']}")
    c = st.columns(4)
    c[0].metric("Indexes", len(mine))
    c[1].metric("Types", ", ".join(sorted(mine["index_type"].unique())))
    c[2].metric("Largest dictionary", int(mine["dictionary_size"].max()) if mine["dictionary_size"].notna().any()
                else "–")
    c[3].metric("Most slices", int(mine["slice_count"].max()) if mine["slice_count"].notna().any() else "–")
    show_frame(mine, "range_files")

with guard("Range predicate"):
    st.subheader("How a range predicate prunes")
    needs("Range indexes", column, mine)
    numeric = mine.dropna(subset=["min", "max"])
    numeric = numeric[numeric["min"].map(pd.api.types.is_number)]
    if not numeric.empty:
        lo, hi = numeric["min"].min(), numeric["max"].max()
        a, b = lo + (hi - lo) * 0.25, lo + (hi - lo) * 0.5
        whole = all(pd.api.types.is_integer(v) for v in (*numeric["min"], *numeric["max"]))
        default = f"{column} BETWEEN {round(a)} AND {round(b)}" if whole else f"{column} BETWEEN {a:.6g} AND {b:.6g}"
    else:
        default = f"{column} IS NOT NULL"
    picked = (ctx.url, ctx.table_name, ctx.snapshot_id, column)
    if st.session_state.get("range_sql_for") != picked or "range_sql" not in st.session_state:
        st.session_state["range_sql"] = default  # each column starts from its own range
        st.session_state["range_sql_for"] = picked
    sql = st.text_input("Predicate (SQL WHERE)", key="range_sql")
    pruned = ctx.metric("prune_by_sql", sql=sql, index_types=RANGE_TYPES)
    band = None
    if not numeric.empty:
        m = re.search(r"between\s+(-?[\d.e+]+)\s+and\s+(-?[\d.e+]+)", sql, re.IGNORECASE)
        band = (float(m.group(1)), float(m.group(2))) if m else None
    st.plotly_chart(figures.value_ranges(mine, *(band or (None, None)), title=f"Value range of {column} per file"),
                    width="stretch")
    st.plotly_chart(figures.prune_counts(pruned, RANGE_TYPES), width="stretch")
    show_frame(pruned, "range_pruned")
