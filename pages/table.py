"""Table: schema evolution, options, snapshot timeline with time travel, files, indexes, skew."""

import datetime as dt
import functools

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import streamlit as st

from indexcore.analysis.live_rows import live_rows
from indexcore.config import settings, variable
from indexcore.frames import figures, health
from indexcore.frames import table as table_frames
from indexcore.frames.text import code, fmt_count, md
from indexcore.views import view
from indexcore.views.census import texts_in
from indexcore.views.common import to_frame
from pages.common import (
    fmt_bytes,
    guard,
    health_item,
    missing_dv_files,
    needs,
    open_page,
    pick_name,
    show_unusable,
    travel_by_time,
    unusable_files,
)
from pages.rows import page_rows, show_frame, show_table, sort_and_filter_table
from pages.spark_route import health_on_spark

ctx = open_page("table")
table = ctx.table
st.caption(f"{code(ctx.table_name)} at snapshot {ctx.snapshot_id}")

files = indexes = None
with guard("Overview"):
    # the listing in Arrow, the table's own (no pandas copy of 50,000 rows; the page of files on screen
    # becomes pandas, with its statistics), and the census Health reads too (the unusable files below
    # take their rows from it, no walk of their own)
    with st.spinner("Reading…"):
        files = view(table, "files", ctx.snapshot_id, stats=False)
        indexes = view(table, "file_indexes", ctx.snapshot_id)
    c = st.columns(5)
    c[0].metric("Live files", f"{files.num_rows:,}")
    live = live_rows(ctx.table, ctx.snapshot_id)  # what a read returns, not the files' records
    # a narrow column: past 9 characters in millions, the exact figure first in the help
    c[1].metric("Rows", ("" if live.exact else "≤ ") + fmt_count(live.live, width=9),
                help=f"Live rows: {live.text} ({live.records:,} records in the live files, minus "
                f"{live.deleted:,} deleted by deletion vectors and the retracts and level-0 files a read drops)"
                + ("" if live.exact else f"; an upper bound: {live.merged_buckets:,} bucket(s) overlap in keys past "
                   f"the merge read's cap of {settings().live_rows_merge_files:,} data files "
                   f"(`{variable('live_rows_merge_files')}`) or could not be read; only a merge read knows their "
                   "exact count"))
    c[2].metric("Data size", fmt_bytes(pc.sum(files["file_size_in_bytes"]).as_py() or 0))
    indexed = pc.or_(pc.fill_null(files["embedded_index"], False), pc.is_valid(files["index_file"]))
    c[3].metric("Files with a file index", f"{pc.sum(pc.cast(indexed, pa.int64())).as_py() or 0:,}")
    c[4].metric("Deleted rows (DV)", f"{pc.sum(files['deletion_vector_cardinality']).as_py() or 0:,}")
    show_unusable(pd.concat([unusable_files(ctx, tuple(table_frames.FILE_INDEX_TYPES)), missing_dv_files(ctx)], ignore_index=True),
                  "table_unusable")

with guard("Health"):  # one summary: score, key metrics, items linked to the page explaining each
    th = health_on_spark(ctx) or ctx.frame(health.table_health)  # on Spark past the operator's file count
    configured = [cv for cv in th.coverage if cv.configured and cv.files]
    c = st.columns(5)
    c[0].metric("Health", f"{th.score}/100", help="Amoro-style: 100 minus points per issue kind, weighted by the "
                "share of the table it touches and capped")
    c[1].metric(f"Small files (of {th.files:,})", f"{th.small_files:,}",
                help=f"Data files under {fmt_bytes(th.small_file_threshold or 0)} (small-file threshold)")
    c[2].metric("Densest bucket (DV)", f"{th.worst_bucket_density:.1%}",
                help=md(f"Deleted / rows of the densest partition x bucket ({th.worst_bucket or 'none'}); "
                        f"{th.dv_density:.1%} of the table"))
    c[3].metric("Index coverage", f"{min((1 - cv.lacking / cv.files) for cv in configured):.0%}" if configured
                else "–", help="The lowest share of live files carrying one of the table's configured file indexes")
    c[4].metric("Index / data bytes", f"{th.total_index_bytes / th.data_bytes:.0%}" if th.data_bytes else "–",
                help=f"{fmt_bytes(th.total_index_bytes)} of index against {fmt_bytes(th.data_bytes)} of data")
    for item in th.items:
        health_item(item.severity, f"**{md(item.severity)}** {md(item.message)}"
                    + (f" — {md(item.recommendation)}" if item.recommendation else ""),
                    item.page if item.page != "table" else None)

# lazy tabs: only the open one runs (a hidden one's work is not shown: Column statistics alone decodes every
# file's statistics); the open one is kept in the session under TAB_KEY (set it to open another)
TAB_KEY = "table_tab"
TABS = ("Schema", "Snapshots", "Files", "Column statistics", "Skew")
# a closed tab's widgets are not drawn, and Streamlit forgets the picks of widgets not drawn: these
# (filters, sort columns, picked file, grouping; none given a default, so set again without a warning)
# are kept for when their tab opens again
KEPT_PICKS = ("files_partitions", "files_buckets", "files_text", "files_sort", "files_grep", "stats_file",
              "stats_file_filter", "file_stats_sort", "file_stats_grep", "skew_by")
for kept in KEPT_PICKS:
    if kept in st.session_state:
        st.session_state[kept] = st.session_state[kept]
tab_schema, tab_snap, tab_files, tab_stats, tab_skew = st.tabs(TABS, key=TAB_KEY, on_change="rerun")

with tab_schema, guard("Schema"):
    if tab_schema.open:
        history = ctx.frame(table_frames.schema_history)
        ids = sorted(history["schema_id"].unique().tolist())
        pick = st.selectbox("Schema version", ids, index=len(ids) - 1, key="schema_version") if ids else None
        show_frame(history[history["schema_id"] == pick], "schema")
        changes = history[history["change"] != ""]
        if len(ids) > 1:
            st.markdown(f"**Evolution** over {len(ids)} schema versions (by field id)")
            show_frame(changes, "schema_changes")
        st.markdown("**Options** (`$options`)")
        show_frame(ctx.view("options"), "options")

with tab_snap, guard("Snapshots"):
    if tab_snap.open:
        snaps = ctx.view("snapshots", snapshot=False)
        st.plotly_chart(figures.snapshot_timeline(snaps, ctx.snapshot_id), width="stretch")
        st.markdown("**Time travel by time** (UTC): the snapshot live at that moment becomes the picked one.")
        default = snaps["commit_time"].max() if not snaps.empty else dt.datetime.now(dt.UTC)
        c1, c2, c3 = st.columns([2, 2, 1])
        day = c1.date_input("Date", value=default.date(), key="tt_date")
        moment = c2.time_input("Time", value=default.time().replace(microsecond=0), key="tt_time", step=60)

        c3.button("Travel", on_click=functools.partial(travel_by_time, table), key="tt_go")
        if st.session_state.get("tt_message"):
            st.info(st.session_state.pop("tt_message"))
        show_frame(snaps, "snapshots")
        left, right = st.columns(2)
        left.markdown("**Tags** (`$tags`)")
        left.dataframe(ctx.view("tags", snapshot=False), hide_index=True, width="stretch")
        right.markdown("**Branches** (`$branches`)")
        right.dataframe(ctx.view("branches", snapshot=False), hide_index=True, width="stretch")

with tab_files, guard("Files"):
    if tab_files.open:
        needs("Overview", files, indexes)
        parts = sorted(pc.unique(files["partition"]).to_pylist())
        buckets = sorted(pc.unique(files["bucket"]).to_pylist())
        c1, c2, c3 = st.columns(3)
        part_pick = c1.multiselect("Partitions", parts, key="files_partitions")
        bucket_pick = c2.multiselect("Buckets", buckets, key="files_buckets")
        text = c3.text_input("File name contains", key="files_text")
        shown = files  # filtered, sorted and paged in Arrow: only the page on screen becomes pandas
        if part_pick:
            shown = shown.filter(pc.is_in(shown["partition"], pa.array(part_pick, pa.string())))
        if bucket_pick:
            shown = shown.filter(pc.is_in(shown["bucket"], pa.array(bucket_pick, shown.schema.field("bucket").type)))
        if text:
            shown = shown.filter(pc.fill_null(pc.match_substring(shown["file_name"], text), False))
        st.caption(f"{shown.num_rows:,} of {files.num_rows:,} live files (`$files`)")
        ordered = sort_and_filter_table(shown, "files", hidden=("file_path",))  # every file, before paging
        rows = page_rows(ordered.num_rows, "files")
        on_screen = ordered["file_path"].slice(rows.start, rows.stop - rows.start).to_pylist()
        if on_screen:  # the page's statistics, in the order sorted above
            detailed = ctx.view("files", paths=tuple(on_screen)).set_index("file_path").loc[on_screen].reset_index()
        else:
            detailed = to_frame(ordered.slice(0, 0))
        st.dataframe(detailed.drop(columns=["file_path"]), hide_index=True, width="stretch")
        # the census in Arrow, as the Overview read it: only the page on screen becomes pandas
        mine = indexes if shown.num_rows == files.num_rows else \
            indexes.filter(texts_in(indexes["file_path"], shown["file_path"].combine_chunks().cast(pa.string())))
        broken = mine.filter(pc.is_valid(mine["error"])).select(["file_name", "error"])
        for name, error in zip(broken["file_name"].to_pylist(), broken["error"].to_pylist(), strict=True):
            st.warning(md(f"File index of {name} is unreadable: {error}"))
        st.markdown("**File indexes** (`$file_indexes`: one row per file, column and index type)")
        if mine.num_rows == 0:
            st.info("No file index in the files shown.")
        else:
            show_table(mine, "file_indexes", hidden=("file_path",))
        kinds = ctx.view("table_indexes")["index_type"].value_counts()
        if not kinds.empty:
            st.markdown("**Table-level index files** (`$table_indexes`): "
                        + md(", ".join(f"{k}: {v}" for k, v in kinds.items())))

with tab_stats, guard("Column statistics"):
    if tab_stats.open:
        needs("Overview", files)
        st.caption("Min, max and null count per data file as the manifest records them (`value_stats`, mapped by "
                   "field id across schema changes; key stats for primary keys). These are what the stats stage of "
                   "a read tests; an empty null count is unknown, and a column added after the file was written "
                   "reads as all null.")
        snap = ctx.table.snapshot(ctx.snapshot_id) if ctx.snapshot_id is not None else None
        names = list(ctx.table.read_schema(ctx.snapshot_id, snap).field_names)  # what the stats are read through
        c1, c2 = st.columns(2)
        stat_col = c1.selectbox("Column", ["(every column)", *names], index=1 if names else 0, key="stats_column")
        by_name = dict(zip(files["file_name"].to_pylist(), files["file_path"].to_pylist(), strict=False))
        with c2:
            stat_file = pick_name("File", list(by_name), "stats_file", first="(every file)",
                                  help="One file shows every column; every file shows the picked column")
        if stat_col == "(every column)" and stat_file == "(every file)":
            st.info("Pick a column or a file.")
        else:
            # every file: one column's statistics of every live file (up to a cap), sorted and filtered before paging
            one = stat_file != "(every file)"
            cap = settings().column_stats_files
            capped = not one and files.num_rows > cap
            frame = ctx.frame(table_frames.file_stats_frame, columns=None if stat_col == "(every column)" else (stat_col,),
                              paths=(by_name[stat_file],) if one else None, limit=cap if capped else None)
            if capped:
                st.warning(f"Statistics of the first {cap:,} of {files.num_rows:,} live files (`{variable('column_stats_files')}`):"
                           " the sort and the filter below cover those files only.")
            st.caption(f"{frame['file_name'].nunique():,} file(s) of {files.num_rows:,}, {len(frame):,} row(s)")
            show_frame(frame, "file_stats")

with tab_skew, guard("Skew"):
    if tab_skew.open:
        by = st.radio("Group by", ["bucket", "partition"], horizontal=True, key="skew_by",
                      format_func={"bucket": "partition x bucket", "partition": "partition"}.__getitem__)
        groups, skew = ctx.frame(table_frames.size_skew, by=by)
        c = st.columns(3)
        c[0].metric("Groups", fmt_count(skew["groups"]))
        c[1].metric("Largest / mean", f"{skew['max_over_mean']:.2f}")
        c[2].metric("Coefficient of variation", f"{skew['cv']:.2f}")
        st.plotly_chart(figures.size_skew(groups, by), width="stretch")
        show_frame(groups, "skew")
