"""Warehouse: every table with its health, files, bytes, index bytes, DVs and unusable files."""

import streamlit as st

from indexcore.frames import figures, health
from indexcore.frames import table as table_frames
from indexcore.frames.text import code, fmt_count, md
from pages.common import (
    context,
    fmt_bytes,
    guard,
    health_item,
    needs,
)
from pages.rows import show_frame
from pages.spark_route import warehouse_health_on_spark

KIND_LABELS = {"unreadable-metadata": "Unreadable metadata", "unusable-files": "Files that cannot be used",
               "dv-density": "Deleted rows (deletion vectors)", "index-coverage": "Files lacking a configured index",
               "small-files": "Small files", "index-overhead": "Index bytes against data bytes",
               "bloom-oversized": "Oversized bloom filters", "bloom-over-fpp": "Bloom filters over their fpp",
               "stale-index": "Indexes no longer configured", "wrong-column": "Indexes on the wrong column"}


st.title("Warehouse")
ctx = context()
if ctx.warehouse is None:
    st.info("Pick a readable warehouse in the sidebar.")
    st.stop()
st.caption(f"{code(ctx.url)} — opened read-only")

score = frames = None
with guard("Warehouse overview"):
    # past the operator's file count, those tables' health is measured on Spark (pages/spark_route.py)
    score, frames = warehouse_health_on_spark(ctx) or ctx.frame(health.warehouse_health_frames)
    tables = frames["tables"]
    ok = tables[tables["error"].isna()]
    c = st.columns(4) + st.columns(4)
    c[0].metric("Tables", fmt_count(len(tables)))
    c[1].metric("Live data files", f"{int(ok['files'].sum()):,}")
    exact = bool(ok["live_rows_exact"].all())
    c[2].metric("Rows", ("" if exact else "≤ ") + f"{int(ok['live_rows'].sum()):,}",
                help=f"Live rows: what a read returns ({int(ok['rows'].sum()):,} records in the live files, minus "
                     "rows deleted by deletion vectors, retracted, or in level-0 files a primary-key read skips)"
                     + ("" if exact else "; an upper bound: some primary-key buckets overlap in keys and only a "
                        "merge read knows their exact count"))
    c[3].metric("Data size", fmt_bytes(ok["data_bytes"].sum()))
    data, index = ok["data_bytes"].sum(), ok["index_bytes"].sum()
    c[4].metric("Index size", fmt_bytes(index), f"{index / data:.0%} of data" if data else None, delta_color="off")
    c[5].metric("Problems", fmt_count(int(ok["problems"].sum() + ok["unusable_files"].sum())),
                help="Unreadable metadata parts plus files whose index or deletion vector cannot be used")
    c[6].metric("Health", f"{score}/100", help="Amoro-style: 100 minus points per issue kind, weighted by the "
                "share of the table it touches and capped; the warehouse's is the file-weighted mean")
    for _, row in tables[tables["error"].notna()].iterrows():
        st.warning(md(f"{row['table']}: {row['error']}"))
    lost = tables[tables["missing_dv_files"] > 0]
    if not lost.empty:
        st.warning(md("Deletion vectors missing: " + ", ".join(
            f"{r.table} ({r.missing_dv_files} file(s) whose DV file is gone)" for r in lost.itertuples())
            + ". Reads of those files would return deleted rows or fail."))
    unusable = tables[tables["unusable_files"] > 0]
    if not unusable.empty:
        st.warning(md(f"{len(unusable)} table(s) have files that cannot be used: " + ", ".join(
            f"{r.table} ({r.unusable_files})" for r in unusable.itertuples())))
    shown = tables[["table", "score", "errors", "warnings", "unusable_files", "missing_dv_files", "problems",
                    "files", "rows", "live_rows", "live_rows_exact", "data_bytes", "index_bytes", "index_pct", "small_files", "dv_density",
                    "index_kinds", "snapshot"] + (["error"] if tables["error"].notna().any() else [])]
    show_frame(shown.sort_values(["score", "table"]), "overview", column_config={
        "table": st.column_config.TextColumn("table", pinned=True),
        "score": st.column_config.ProgressColumn("health", min_value=0, max_value=100, format="%d"),
        "unusable_files": st.column_config.NumberColumn("unusable files", help="missing .index or DV file, "
                                                        "unreadable index, unknown index kind"),
        "missing_dv_files": st.column_config.NumberColumn("missing DV"),
        "rows": st.column_config.NumberColumn("records", help="Records in the live files"),
        "live_rows": st.column_config.NumberColumn("live rows", help="Rows a read returns"),
        "live_rows_exact": st.column_config.CheckboxColumn("exact", help="Off: live rows is an upper bound "
                                                           "(primary-key buckets that only a merge read counts)"),
        "index_pct": st.column_config.NumberColumn("index / data", format="percent"),
        "dv_density": st.column_config.NumberColumn("deleted rows", format="percent")})
    st.plotly_chart(figures.table_bytes(ok), width="stretch")

with guard("Health summary"):
    needs("Warehouse overview", score, frames)
    st.subheader(f"Health summary: {score}/100")
    items = frames["items"]
    if items.empty:
        st.success("No issue found in any table.")
    else:
        order = {s: i for i, s in enumerate(health.SEVERITIES)}
        groups = (items.assign(rank=items["severity"].map(order))
                  .groupby(["kind", "page"], as_index=False)
                  .agg(rank=("rank", "min"), tables=("table", "nunique"), points=("deduction", "sum"),
                       example=("message", "first"), where=("table", "first"))
                  .sort_values(["rank", "points"], ascending=[True, False]))
        for g in groups.itertuples():
            severity = health.SEVERITIES[g.rank]
            health_item(severity, f"**{md(KIND_LABELS.get(g.kind, g.kind))}** ({md(severity)}): {g.tables} "
                        f"table(s), {g.points} points off. E.g. {code(g.where)}: {md(g.example)}", g.page)
        with st.expander(f"Every item ({len(items)})"):
            show_frame(items, "health_items")
    with st.expander("Index bytes per table, kind and storage"):
        show_frame(frames["index_bytes"], "health_index_bytes", column_config={
            "pct_of_data": st.column_config.NumberColumn("% of data", format="percent")})
    blooms = frames["blooms"]
    if not blooms.empty:
        with st.expander("Bloom filter sizing (recommended file-index.bloom-filter.<column>.items)"):
            show_frame(blooms, "health_blooms")
    if not frames["unusable"].empty:
        with st.expander(f"Files that cannot be used ({len(frames['unusable'])})"):
            show_frame(frames["unusable"], "health_unusable")

if ctx.table_name:
    with guard("Problems of the picked table"):
        problems = ctx.frame(table_frames.problems_frame)
        st.subheader(md(f"Problems in {ctx.table_name}"))
        if problems.empty:
            st.success("Every manifest, index manifest and file index of this snapshot was readable.")
        else:
            st.warning(f"{len(problems)} part(s) unreadable or of an index kind indexcore does not decode; "
                       "the rest of the table is shown as usual.")
            show_frame(problems, "problems")
