"""Deletion vectors: density per partition x bucket, trend across snapshots, most deleted files."""

import pandas as pd
import streamlit as st

from indexcore.frames import deletion_vectors, figures
from indexcore.frames.text import fmt_count
from pages.common import (
    guard,
    missing_dv_files,
    needs,
    open_page,
    show_unusable,
    unreadable_parts,
)
from pages.rows import show_frame

ctx = open_page("deletion_vectors")

dvs = buckets = None
with guard("Deletion vectors"):
    dvs = ctx.view("deletion_vectors")
    buckets = deletion_vectors.dv_by_bucket(dvs)
    total, deleted = int(dvs["row_count"].sum()), int(dvs["deleted"].sum())
    c = st.columns(4)
    c[0].metric("Files with a DV", fmt_count(int(dvs["has_dv"].sum())))
    c[1].metric("Deleted rows", f"{deleted:,}")
    c[2].metric("Rows in live files", f"{total:,}")
    c[3].metric("Density", f"{deleted / total:.1%}" if total else "–")
    show_unusable(pd.concat([missing_dv_files(ctx), unreadable_parts(ctx)[["file_name", "dv_file", "why"]]],
                            ignore_index=True), "dv_unusable")
    if not dvs["has_dv"].any():
        st.info("No deletion vector in this snapshot (`deletion-vectors.enabled` on a primary-key or append "
                "table writes them when rows are deleted or updated).")
    st.plotly_chart(figures.dv_heatmap(buckets), width="stretch")

with guard("Trend"):
    limit = st.slider("Snapshots in the trend", 2, 200, 50, key="dv_trend_n")
    trend = ctx.frame(deletion_vectors.dv_trend, max_snapshots=limit)
    st.plotly_chart(figures.dv_trend(trend), width="stretch")

with guard("Most deleted files"):
    st.subheader("Most deleted files")
    needs("Deletion vectors", dvs)
    top = dvs[dvs["has_dv"]].sort_values(["deleted", "density"], ascending=False).head(20)
    show_frame(top.drop(columns=["has_dv"]), "dv_top", column_config={
        "density": st.column_config.ProgressColumn("density", min_value=0.0, max_value=1.0, format="percent")})

with guard("Compaction hint"):
    st.subheader("Compaction hint")
    needs("Deletion vectors", buckets)
    threshold = st.slider("Density that calls for compaction", 0.01, 1.0, 0.2, 0.01, key="dv_threshold")
    hot = deletion_vectors.compaction_hint(buckets, threshold)
    if hot.empty:
        st.success(f"No bucket has {threshold:.0%} or more of its rows deleted.")
    else:
        st.warning(f"{len(hot)} bucket(s) have at least {threshold:.0%} of their rows deleted: a full "
                   "compaction of them rewrites the files without those rows and drops their deletion "
                   "vectors, so reads no longer filter them.")
        show_frame(hot, "dv_hot")
    st.markdown("**Per partition x bucket**")
    show_frame(buckets, "dv_buckets")
