"""Warehouse: every table with files, rows, size, index kinds, DVs and problems."""

import streamlit as st

from indexcore import figures
from pages.common import context, fmt_bytes, guard, show_frame

st.title("Warehouse")
ctx = context()
if ctx.warehouse is None:
    st.info("Pick a readable warehouse in the sidebar.")
    st.stop()
st.caption(f"`{ctx.url}` — opened read-only")

with guard("Warehouse overview"):
    overview = ctx.metric("warehouse_overview", table=False)
    ok = overview[overview["error"].isna()] if "error" in overview else overview
    c = st.columns(5)
    c[0].metric("Tables", len(overview))
    c[1].metric("Live data files", int(ok["files"].sum()) if "files" in ok else 0)
    c[2].metric("Rows", f"{int(ok['rows'].sum()):,}" if "rows" in ok else "0")
    c[3].metric("Data size", fmt_bytes(ok["size_bytes"].sum() if "size_bytes" in ok else 0))
    c[4].metric("Problems", int(ok["problems"].sum()) if "problems" in ok else 0)
    for _, row in overview[overview["error"].notna()].iterrows():
        st.warning(f"{row['table']}: {row['error']}")
    show_frame(overview.drop(columns=["error"]) if overview["error"].isna().all() else overview, "overview")
    st.plotly_chart(figures.warehouse_sizes(ok), width="stretch")

if ctx.table_name:
    with guard("Problems of the picked table"):
        problems = ctx.metric("problems_frame")
        st.subheader(f"Problems in {ctx.table_name}")
        if problems.empty:
            st.success("Every manifest, index manifest and file index of this snapshot was readable.")
        else:
            st.warning(f"{len(problems)} part(s) unreadable or of an index kind indexcore does not decode; "
                       "the rest of the table is shown as usual.")
            show_frame(problems, "problems")
