"""Global indexes: which row ranges each BTree / bitmap / vector / full-text index covers, its size,
its keys, and the files and rows a WHERE condition keeps through it."""

import streamlit as st

from indexcore.frames import figures, global_indexes
from indexcore.frames.text import fmt_count, md
from indexcore.frames.unusable import GLOBAL_INDEX
from pages.common import (
    guard,
    needs,
    open_page,
    show_unusable,
    unusable_index_files,
)
from pages.rows import show_frame

ctx = open_page("global_indexes")


unusable = set()  # index files the "Rows per key" picker leaves out (none when their check failed)
with guard("Files that could not be used"):
    bad = unusable_index_files(ctx, (GLOBAL_INDEX,))
    show_unusable(bad, "global_index_unusable")
    unusable = set(bad["file_name"])

frame = None
with guard("Global indexes"):
    frame, coverage = ctx.view("global_indexes"), ctx.view("global_index_coverage")
    ranges = ctx.frame(global_indexes.table_row_ranges)
    if frame.empty:
        st.info("No global index in this snapshot. Paimon builds global indexes (BTree, bitmap, vector, "
                "full-text) over the row ids of tables with `row-tracking.enabled`.")
        st.stop()
    c = st.columns(5)
    c[0].metric("Index files", fmt_count(len(frame)))
    c[1].metric("Indexed fields", fmt_count(frame["field"].nunique()))
    c[2].metric("Index bytes", f"{int(frame['file_size'].sum()):,}")
    c[3].metric("Table rows (row ids)", f"{sum(hi - lo + 1 for lo, hi in ranges):,}")
    c[4].metric("Gaps", fmt_count(int((coverage["status"] == "gap").sum())))
    st.plotly_chart(figures.global_index_coverage(coverage), width="stretch")
    st.caption("Each bar is a run of row ids: green where an index file of that field covers them, red "
               "where none does (Paimon reads those rows whatever the condition), gray for index ranges "
               "past the table's current rows.")
    show_frame(frame.drop(columns=["path"]), "global_index_files")

with guard("Keys and values"):
    needs("Global indexes", frame)
    decodable = frame[frame["index_type"].isin(["btree", "bitmap"]) & ~frame["file"].isin(unusable)]
    if decodable.empty and frame["index_type"].isin(["btree", "bitmap"]).any():
        st.info("No BTree or bitmap index file to list keys of: each is listed above as unusable.")
    elif decodable.empty:
        st.info("These indexes (vector, full-text) answer searches; they have no per-key rows to list.")
    else:
        st.subheader("Rows per key")
        names = list(decodable["file"])
        labels = {r.file: f"{r.field} · {r.index_type} · rows {r.row_range_start}..{r.row_range_end} · {r.file}"
                  for r in decodable.itertuples()}
        picked = st.selectbox("Index file", names, format_func=labels.get, key="global_index_file")
        keys = ctx.frame(global_indexes.cardinality_frame, file_name=picked)
        k = st.columns(3)
        k[0].metric("Distinct keys", fmt_count(len(keys[keys["key"] != "NULL"])))
        k[1].metric("Rows", f"{int(keys['rows'].sum()):,}")
        k[2].metric("Most rows for one key", fmt_count(int(keys["rows"].max()) if len(keys) else 0))
        show_frame(keys, "global_index_keys")

with guard("Condition"):
    st.subheader("Files and rows a condition keeps")
    sql = st.text_input("WHERE", key="global_index_where", placeholder="col_int > 30")
    if sql:
        kept, totals = global_indexes.predicate_keep_frame(ctx.table, sql, ctx.snapshot_id)
        m = st.columns(3)
        m[0].metric("Files kept", f"{totals['files_kept']} of {totals['files']}")
        m[1].metric("Rows kept", f"{totals['rows_kept']:,} of {totals['rows']:,}")
        m[2].metric("Index files used", fmt_count(len(totals["indexes_used"])))
        for p in totals["problems"]:
            st.warning(md(f"{p['path']}: {p['reason']}"))
        show_frame(kept, "global_index_kept")

with guard("Search"):
    needs("Global indexes", frame)
    if "vector" in set(frame["family"]):
        st.subheader("Vector search")
        show_frame(ctx.view("vector_indexes"), "vector_index_files")
        query = st.text_input("Query vector (JSON list)", key="vector_query", placeholder="[0.1, 0.2, 0.3]")
        v = st.columns(2)
        k = int(v[0].number_input("k", min_value=1, max_value=1000, value=10, key="vector_k"))
        width = int(v[1].number_input("Search width (0: the library's)", min_value=0, value=0, key="vector_width"))
        if query:
            show_frame(global_indexes.vector_search_frame(ctx.table, query, k, width or None, ctx.snapshot_id),
                       "vector_hits")
        if st.checkbox("Measure recall@k against exact search", key="vector_recall"):
            target = float(st.number_input("Target recall", 0.0, 1.0, 0.95, 0.01, key="vector_target"))
            curve, reaches = global_indexes.recall_frame(ctx.table, k, target=target, snapshot_id=ctx.snapshot_id)
            for name, w in reaches.items():
                st.metric(f"Width for recall ≥ {target:g} · {name}", fmt_count("not reached" if w is None else w))
            show_frame(curve, "vector_recall_curve")
            st.caption("Queries: a seeded sample of the table's own vectors (size in `queries`); the interval "
                       "is 95% over the per-query recalls.")
    if "full-text" in set(frame["family"]):
        st.subheader("Full-text search")
        show_frame(ctx.view("full_text_indexes"), "full_text_index_files")
        words = st.text_input("Words", key="text_query", placeholder="hello world")
        if words:
            show_frame(global_indexes.text_search_frame(ctx.table, words, 10, ctx.snapshot_id), "text_hits")
            check = global_indexes.text_check(ctx.table, words, ctx.snapshot_id)
            t = st.columns(3)
            t[0].metric("Index matches", fmt_count(check["index_rows"]))
            t[1].metric("Scan matches", fmt_count(check["scan_rows"]))
            t[2].metric("Index agrees with scan", "yes" if check["agrees"] else "no")
