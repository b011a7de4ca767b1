"""Bloom filters: fill rate, estimated distinct items and FPP vs the configured ones."""

import pandas as pd
import streamlit as st

from indexcore.frames import figures
from indexcore.frames.bloom import BLOOM_FILTER, BLOOM_SHARE, BLOOM_TYPES, bloom_sizing_frame
from indexcore.frames.text import fmt_count, md
from indexcore.views.census import census_mask
from pages.common import (
    decode_sample,
    fmt_bytes,
    guard,
    open_page,
    show_unusable,
    unusable_files,
)
from pages.rows import show_frame

ctx = open_page("bloom")

with guard("Bloom filters"):
    target = st.number_input("Target false-positive probability (0 = the configured fpp)", min_value=0.0,
                             max_value=0.99, value=0.0, step=0.01, format="%.4f", key="bloom_target")
    sample = decode_sample(ctx, BLOOM_TYPES, "bloom")
    blooms = ctx.view("bloom_filters", target_fpp=target or None, sample=sample)
    bad = unusable_files(ctx, BLOOM_TYPES)
    own = blooms[blooms["error"].notna() & ~blooms["file_name"].isin(bad["file_name"])]
    bad = pd.concat([bad, own.rename(columns={"column": "column_name"}).assign(
        index_type=BLOOM_FILTER.name, why="unreadable index")[bad.columns]], ignore_index=True)
    show_unusable(bad, "bloom_unusable")
    if blooms["error"].isna().sum() == 0 and "file-index.bloom-filter.columns" in ctx.table.schema().options:
        st.warning("`file-index.bloom-filter.columns` is configured but no bloom filter of this snapshot "
                   "could be read.")
        st.stop()
    if blooms.empty:
        st.info("No bloom filter in this snapshot. Paimon builds one per file for the columns in "
                "`file-index.bloom-filter.columns` (options `items`, `fpp`).")
        st.stop()
    ok = blooms[blooms["error"].isna()]
    c = st.columns(4)
    census = ctx.census()
    # the sizes of the usable filters only, one column of the census in Arrow
    sizes = census["index_size_in_bytes"].filter(census_mask(census, BLOOM_TYPES, usable=True)).to_numpy()
    c[0].metric("Bloom filters", fmt_count(len(sizes)))
    c[1].metric("Median fill", f"{ok['fill_ratio'].median():.2%}" if not ok.empty else "–",
                help=f"Over the {len(ok):,} filters decoded, of {len(sizes):,}" if len(ok) < len(sizes) else None)
    sampled = len(ok) < len(sizes)  # a decode sample: figures from the filters read say how many
    c[2].metric("Saturated" + (f" (of {len(ok):,} sampled)" if sampled else ""), fmt_count(int(ok["saturated"].eq(True).sum())),
                help=f"Counted over the {len(ok):,} filters decoded, of {len(sizes):,}" if sampled else None)
    c[3].metric("Bytes", fmt_bytes(int(sizes.sum())))
    st.subheader("Sizing per column")
    st.caption(f"Over every filter of the snapshot: the `items` that keeps {BLOOM_SHARE:.0%} of the files under "
               "the configured fpp, and whether file-size skew rather than `items` is the cause.")
    for r in ctx.frame(bloom_sizing_frame).itertuples():
        (st.success if r.verdict == "ok" else st.warning)(f"**{md(r.column)}**: {md(r.verdict)}. {md(r.why)}")
    st.plotly_chart(figures.bloom_fill(ok, population=len(sizes)), width="stretch")
    left, right = st.columns(2)
    left.plotly_chart(figures.bloom_items(ok), width="stretch")
    right.plotly_chart(figures.bloom_fpp(ok), width="stretch")
    st.markdown("**Per filter**: `recommended_items` is the `items` setting that meets the target fpp "
                "for the distinct keys this filter holds, `recommended_bytes` its size.")
    show_frame(blooms, "blooms", column_config={
        "fill_ratio": st.column_config.ProgressColumn("fill", min_value=0.0, max_value=1.0, format="percent")})
