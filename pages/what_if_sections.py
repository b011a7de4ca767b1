"""The What-if page's sections, imported by ``pages/what_if.py``: an imported module is compiled once
per process, where Streamlit re-reads a page script (its AST magic) on every run."""

import numpy as np
import pyarrow.compute as pc
import streamlit as st

from indexcore.cache import LRU, frames_weight
from indexcore.config import settings
from indexcore.errors import IndexCoreError
from indexcore.expr import quote_name
from indexcore.frames import figures, what_if
from indexcore.frames.suggestion import suggest_predicate
from indexcore.frames.text import code, fmt_count, md
from pages.common import (
    Context,
    fmt_bytes,
    guard,
    needs,
    progress_callback,
    show_unusable,
    unusable_files,
)
from pages.rows import show_frame
from pages.selection import remember_predicate
from pages.spark_route import explain_on_spark, spark_route


@st.cache_resource
def explained_results(max_bytes: int) -> LRU:
    """Explain results kept for reruns, one bounded map for the whole server (not per session)."""
    return LRU(max_bytes)


@st.cache_resource
def server_budget(limit: int) -> what_if.ByteBudget:
    """The bytes of hypothetical index every session's build holds together: one per server."""
    return what_if.ByteBudget(limit)


def show(ctx: Context) -> None:
    """The page below its title: explain a predicate file by file, then a hypothetical index."""
    limits = settings()  # the budgets of hypothetical indexes (per session, per server)
    st.caption("Nothing on this page writes into the warehouse: hypothetical indexes live in memory only.")

    try:  # the picked snapshot's schema: time travel may go back before a column was added
        schema = ctx.table.snapshot_schema(ctx.table.snapshot(ctx.snapshot_id) if ctx.snapshot_id is not None else None)
    except IndexCoreError:
        schema = ctx.table.schema()
    suggestion = None
    with guard("Suggested predicate"):
        suggestion = ctx.frame(suggest_predicate)
    picked = (ctx.url, ctx.table_name, ctx.snapshot_id)
    if st.session_state.get("whatif_sql_for") != picked or "whatif_sql" not in st.session_state:
        # a new table or snapshot starts from a predicate that prunes it, not from the last table's text
        # (the session's own predicate, typed here or given by the link, is kept while the table is)
        first = quote_name(schema.field_names[0]) if schema.field_names else "c"
        default_sql = suggestion["sql"] if suggestion else f"{first} IS NOT NULL"
        st.session_state["whatif_sql"] = ctx.selection.predicate or default_sql
        st.session_state["whatif_sql_for"] = picked
        st.session_state["whatif_sql_default"] = default_sql
    sql = st.text_input("Predicate (SQL WHERE)", key="whatif_sql",
                        help="Starts from an equality on a value this snapshot holds, picked because it prunes.")
    remember_predicate(None if sql == st.session_state.get("whatif_sql_default") else sql)
    if suggestion and suggestion["prunes"]:
        st.caption(f"Suggested {code(suggestion['sql'])}: {md(suggestion['why'])}; it leaves {suggestion['files_read']} of "
                   f"{suggestion['files']} files and {suggestion['rows_selected']:,} of {suggestion['rows']:,} rows"
                   + (f" (on a sample of {suggestion['sample_files']:,} of {suggestion['total_files']:,} live files)."
                      if suggestion["sample_files"] < suggestion["total_files"] else "."))
    elif suggestion:
        st.caption("No equality on a value of this snapshot prunes a file or a row (one file, or no statistics "
                   "and indexes that separate values), so the page starts from an `IS NOT NULL`.")
    verify = st.checkbox("Verify against the data (reads every data file)", key="whatif_verify")

    with guard("Unusable files"):  # their indexes cannot prune, so the explain below keeps them
        show_unusable(unusable_files(ctx, what_if.FILE_INDEX_TYPES), "whatif_unusable")

    result = None
    with guard("Explain"):
        # explained here, with a progress bar over the files (50,000 take tens of seconds), and kept for
        # reruns in one server-wide map bounded in bytes (not in the session: 20 sessions would hold 20)
        asked = (ctx.url, ctx.selection.options, ctx.table_name, ctx.snapshot_id, sql, verify)
        kept = explained_results(settings().whatif_explained_bytes)
        result = kept.get(asked)
        master = spark_route(ctx)  # past the operator's file count: planned and decided in Spark tasks
        if result is None and master is not None:
            ex = explain_on_spark(ctx, master, sql, verify)
            if ex is not None:
                result = {**what_if.explanation_frames(ctx.table, ex), "spark": master}
                kept.put(asked, result, frames_weight(result.values()))
        if result is None:
            update, bar = progress_callback("Explaining")
            try:
                result = what_if.explain_frames(ctx.table, sql, snapshot_id=ctx.snapshot_id, verify=verify,
                                                progress=update)
            finally:
                bar.empty()
            kept.put(asked, result, frames_weight(result.values()))
        if result.get("spark"):
            st.caption(f"Explained in Spark tasks on {code(result['spark'])}: this snapshot is past the server's "
                       f"{limits.spark_metadata_files:,} live files.")
        files, funnel = result["files"], result["funnel"]
        if not result["index_used"]:
            st.info("This table merges rows on read (primary key without deletion vectors), so Paimon does not use "
                    "its file indexes.")
        first, last = funnel.iloc[0], funnel[funnel["stage"] == "read"].iloc[0]
        c = st.columns(4)
        c[0].metric("Live files", fmt_count(len(files)))
        c[1].metric("Files read", fmt_count(int(files["skipped_by"].isna().sum())))
        c[2].metric("Data bytes read", fmt_bytes(last["bytes"]), help="Whole data files the read path opens")
        c[3].metric("Data bytes skipped", fmt_bytes(first["bytes"] - last["bytes"]),
                    help="Bytes of the data files a stage pruned (partition, bucket, level, stats, indexes)")
        c = st.columns(4)
        c[0].metric("Rows read (after index and DV)", f"{int(last['rows']):,}",
                    help="Rows of the files read, minus deleted rows, or a file index bitmap's rows")
        c[1].metric("Rows skipped", f"{int(first['rows'] - last['rows']):,}",
                    help="Rows of pruned files, plus rows an index bitmap or a deletion vector drops")
        c[2].metric("Index bytes read", fmt_bytes(funnel["index_bytes"].sum()),
                    help="File indexes, global indexes and the deletion vectors of the files read")
        c[3].metric("Index requests", f"{int(funnel['index_requests'].sum()):,}")
        why = result["why"]
        st.markdown("**Why these files are read**")
        st.text(why["summary"])  # plain text: it quotes the predicate as typed
        show_frame(why["reasons"], "whatif_why", column_config={
            "files": st.column_config.NumberColumn("files", format="%d"),
            "rows": st.column_config.NumberColumn("rows", format="%d")})
        st.plotly_chart(figures.funnel_cost(funnel, f"From all files to files read for {result['sql']}",
                                            fmt_bytes),
                        width="stretch")
        st.markdown("**Cost per stage**: kept after the stage, skipped by it, index bytes read to decide it")
        show_frame(funnel, "whatif_funnel")
        st.markdown(f"**Per file** for {code(result['sql'])}")
        show_frame(files, "whatif_files", columns=[c for c in files.columns if c != "path"])
        if not result["problems"].empty:
            st.warning(f"{len(result['problems'])} problem(s) while explaining; the affected files are kept.")
            show_frame(result["problems"], "whatif_problems")
        if not result["violations"].empty:
            st.error("Verification found files or rows pruned although they match:")
            show_frame(result["violations"], "whatif_violations")

    with guard("Statistics beside the stats decision"):
        needs("Explain", result)
        files = result["files"]
        stat_cols = [c for c in files.columns if c.endswith((" min", " max", " nulls"))]
        if not stat_cols:
            st.info("The predicate names no column, so no statistics were tested.")
        else:
            st.markdown("**Why a file was kept**: the manifest's min / max / null count of the predicate's columns, "
                        "beside what the stats stage decided (a null count shown empty is unknown)")
            pick = st.radio("Files", ["all", "kept by stats", "skipped by stats"], horizontal=True,
                            key="whatif_stats_filter")
            rows = None if pick == "all" else np.flatnonzero(
                (files["stats_decision"] == ("REMAIN" if pick == "kept by stats" else "SKIP")).to_numpy())
            show_frame(files, "whatif_stats", rows=rows,
                       columns=["file", "partition", "bucket", "row_count", "stats_decision", *stat_cols, "skipped_by"])

    st.subheader("Hypothetical index")
    with guard("Hypothetical index"):
        c1, c2, c3 = st.columns([2, 2, 3])
        column = c1.selectbox("Column", list(schema.field_names), key="hyp_column")
        types = what_if.supported_index_types(schema.field(column).type)
        if not types:
            st.info(f"No file index type can be built on {code(column)} ({md(schema.field(column).type.sql())}); "
                    f"Paimon builds {', '.join(what_if.FILE_INDEX_TYPES)} on atomic types only.")
            st.stop()
        index_type = c2.selectbox("Index type", types, key="hyp_type",
                                  help="Only the types Paimon can build on this column's type are offered.")
        raw_options = c3.text_input("Options (k=v, comma-separated)", key="hyp_options",
                                    placeholder="items=10000, fpp=0.01 | version=1 | index-block-size=4kb")
        try:
            options = what_if.hypothetical_options(index_type, raw_options, schema.field(column).type)
            what_if.check_hypothetical(ctx.table, index_type, options, ctx.snapshot_id, min_fpp=limits.whatif_min_fpp,
                                       max_bytes=limits.whatif_session_bytes)
        except IndexCoreError as exc:
            st.error(md(f"Options: {exc}"))
            options = None
        key = (ctx.url, ctx.table_name, ctx.snapshot_id, column, index_type, tuple(sorted((options or {}).items())))
        if st.button("Build in memory", key="hyp_build", disabled=options is None,
                     help="Fix the options first" if options is None else None):
            update, bar = progress_callback("Building")
            # the built blobs live only while the comparison is computed: the session keeps its frames
            with what_if.build_hypothetical_index(ctx.table, column, index_type, options, snapshot_id=ctx.snapshot_id,
                                                  progress=update, max_bytes=limits.whatif_session_bytes,
                                                  budget=server_budget(limits.whatif_server_bytes)) as hyp:
                refused = not hyp.files and hyp.limited_by == what_if.SERVER
                comparison = None if refused else what_if.whatif_frames(hyp, sql, max_rows=limits.whatif_frame_rows)
            bar.empty()
            st.session_state["hyp"] = (key, comparison or {"refused": True})
        stored = st.session_state.get("hyp")
        comparison = stored[1] if stored is not None and stored[0] == key else None
        if comparison is None:
            st.info("Pick a column, an index type and options, then build the index for the current data files.")
        elif "refused" in comparison:  # the server's budget was taken by other sessions' builds
            st.warning(f"Not built: this server's {fmt_bytes(limits.whatif_server_bytes)} for hypothetical indexes "
                       "are in use by other sessions' builds. Build again when they finish.")
        else:
            if comparison["sql"] != sql:
                st.info(f"The comparison below is for {code(comparison['sql'])}, the predicate when it was built; "
                        "build again to compare under the new one.")
            if comparison["limited_by"]:
                budget = "its session's budget" if comparison["limited_by"] == what_if.SESSION else \
                    "the server's budget (other sessions' builds hold the rest)"
                st.warning(f"Built on a random sample of {comparison['files_indexed']:,} of the "
                           f"{comparison['total_files']:,} live files: the index reached {budget} "
                           f"({fmt_bytes(limits.whatif_session_bytes)} per session, "
                           f"{fmt_bytes(limits.whatif_server_bytes)} per server). Every figure below is over "
                           "these files only.")
            c = st.columns(3)
            c[0].metric("Hypothetical index size", fmt_bytes(comparison["index_bytes"]))
            c[1].metric("Files indexed", fmt_count(comparison["files_indexed"]))
            c[2].metric("Existing file-index bytes", fmt_bytes(pc.sum(ctx.census()["index_size_in_bytes"]).as_py() or 0))
            totals = comparison["totals"].set_index("what", drop=False)
            before, after = totals.loc["existing"], totals.loc["combined"]
            c = st.columns(4)
            c[0].metric("Data bytes skipped (with it)", fmt_bytes(after["bytes_skipped"]),
                        delta=fmt_bytes(after["bytes_skipped"] - before["bytes_skipped"]),
                        help="Today's indexes and the hypothetical one together, against today's indexes alone")
            c[1].metric("Rows skipped (with it)", f"{int(after['rows_skipped']):,}",
                        delta=f"{int(after['rows_skipped'] - before['rows_skipped']):,}")
            c[2].metric("Files skipped (with it)", fmt_count(int(after["files_skipped"])),
                        delta=int(after["files_skipped"] - before["files_skipped"]))
            c[3].metric("Index bytes read (with it)", fmt_bytes(after["index_bytes"]),
                        delta=fmt_bytes(after["index_bytes"] - before["index_bytes"]), delta_color="inverse")
            st.plotly_chart(figures.bar(totals, "what", "rows", "Rows read: existing indexes, hypothetical alone, "
                                        "both", color="what"), width="stretch")
            show_frame(totals, "hyp_totals")
            if comparison["file_rows"] > len(comparison["files"]):
                st.caption(f"The {len(comparison['files']):,} files (of {comparison['file_rows']:,}) whose rows read "
                           "the hypothetical index changes most.")
            show_frame(comparison["files"].drop(columns=["path"], errors="ignore"), "hyp_files")
            if not comparison["problems"].empty:
                st.warning("Some files could not be indexed or explained:")
                show_frame(comparison["problems"], "hyp_problems")
