"""Bitmap indexes: value cardinalities per file and overall, nulls, dictionary, V1 vs V2 lookups."""

import streamlit as st

from indexcore.frames import bitmap, figures
from indexcore.frames.bitmap import BITMAP_TYPES
from indexcore.frames.text import fmt_count, md
from pages.common import (
    census_file_count,
    decode_sample,
    fmt_bytes,
    guard,
    index_columns,
    needs,
    open_page,
    show_unusable,
    unusable_files,
)
from pages.rows import show_frame

ctx = open_page("bitmap")

column = top = sample = census = carrying = decoded = mine = values = None
with guard("Bitmap indexes"):
    columns = index_columns(ctx, BITMAP_TYPES)
    show_unusable(unusable_files(ctx, BITMAP_TYPES), "bitmap_unusable")
    if not columns:
        if "file-index.bitmap.columns" in ctx.table.schema().options:
            st.warning("`file-index.bitmap.columns` is configured but no bitmap index of this snapshot could "
                       "be read.")
            st.stop()
        st.info("No bitmap index in this snapshot. Paimon builds one per file for the columns in "
                "`file-index.bitmap.columns`.")
        st.stop()
    column = st.selectbox("Column", columns, key="bitmap_column")
    sample = decode_sample(ctx, BITMAP_TYPES, "bitmap")
    frame = ctx.view("bitmap_indexes", sample=sample)
    mine = frame[frame["column"] == column]
    census = ctx.census()
    carrying = census_file_count(ctx, BITMAP_TYPES, column)  # on the kept census's path indices
    decoded = mine["file_name"].nunique()
    scope = "all files" if decoded >= carrying else f"{decoded:,} of {carrying:,} files, sampled"
    c = st.columns(4)
    c[0].metric("Files with this bitmap", fmt_count(carrying))
    c[1].metric("Largest dictionary", fmt_count(int(mine["dictionary_size"].max()) if mine["dictionary_size"].notna().any()
                else 0), help=f"Over {scope}")
    c[2].metric("Null rows", fmt_count(int(mine["null_count"].fillna(0).sum())), help=f"Over {scope}")
    c[3].metric("Versions", ", ".join(f"V{int(v)}" for v in sorted(mine["version"].dropna().unique())))
    for _, row in mine[mine["error"].notna()].iterrows():
        st.warning(md(f"{row['file_name']}: {row['error']}"))

    n = st.slider("Top N values", 5, 50, 20, key="bitmap_top_n")
    values = ctx.view("bitmap_values", column=column, sample=sample)
    top = bitmap.top_values(values, n)
    left, right = st.columns(2)
    left.plotly_chart(figures.top_values(top, f"Top {n} values of {column} ({scope})"), width="stretch")
    right.plotly_chart(figures.values_per_file(values, top["value"].tolist(), f"Top values of {column} per file"),
                       width="stretch")
    st.markdown("**Per file**")
    show_frame(mine, "bitmap_files")

with guard("Point lookup"):
    st.subheader("Point lookup")
    needs("Bitmap indexes", column, top, sample, census, carrying, decoded, mine, values)
    st.caption("A V1 bitmap reads its whole head (every value's offset); V2 reads a small head, one index "
               "block and one bitmap. Type a literal as in SQL (`'text'`, `42`, `NULL`).")
    picked = (ctx.url, ctx.table_name, ctx.snapshot_id, column)
    # sampled: the default value is picked on one half of the sample and estimated on the other
    first, held_out = bitmap.default_lookup(values, mine["file_name"], sampled=decoded < carrying)
    if st.session_state.get("bitmap_lookup_for") != picked or "bitmap_lookup_value" not in st.session_state:
        # each column starts from its most frequent value, not from the last column's literal
        st.session_state["bitmap_lookup_value"] = st.session_state["bitmap_lookup_default"] = first
        st.session_state["bitmap_lookup_for"] = picked
    literal = st.text_input("Value", key="bitmap_lookup_value")
    lookup = ctx.frame(bitmap.bitmap_lookup, column=column, value_text=literal, sample=sample)
    show_frame(lookup, "bitmap_lookup")
    c = st.columns(2)
    if held_out and literal == st.session_state.get("bitmap_lookup_default"):
        lookup = lookup[lookup["file_name"].isin(held_out)]  # not the files whose counts chose it
    matching = bitmap.matching_rows_estimate(lookup, census, column, sampled=decoded < carrying)
    if matching.exact:
        c[0].metric("Matching rows", f"{int(matching.value):,}")
        c[1].metric("Bytes read by the lookups", fmt_bytes(int(lookup["lookup_bytes"].sum()) if not lookup.empty else 0))
    else:  # a sampled lookup: the sample's count is not the table's
        c[0].metric("Matching rows, estimated", f"≈ {round(matching.value):,}",
                    help=f"95% interval {round(matching.low):,} to {round(matching.high):,}, from "
                         f"{matching.sample:,} of the {matching.population:,} files carrying this bitmap")
        c[1].metric(f"Bytes read by the lookups in the {matching.sample:,} sampled files",
                    fmt_bytes(int(lookup["lookup_bytes"].sum()) if not lookup.empty else 0))
        st.caption(f"{int(lookup['matching_rows'].sum()):,} matching rows in the {matching.sample:,} sampled files; "
                   f"over all {matching.population:,} files carrying this bitmap about {round(matching.value):,} "
                   f"(95% interval {round(matching.low):,} to {round(matching.high):,}). Turn on \"Decode every "
                   "file\" above for the exact count."
                   + (" The default value was picked on the other sampled files' counts, so it is estimated on "
                      "these alone." if len(lookup) < decoded else ""))

with guard("V1 vs V2 layout"):
    st.subheader("V1 vs V2 layout")
    needs("Bitmap indexes", column)
    st.caption(f"Each file's bitmap rebuilt in memory in both layouts (nothing is written), the first "
               f"{bitmap.LAYOUT_MAX_FILES} files holding it: a pass over every row of each, so only when asked.")
    # off by default: a page run that does not show the comparison does not pay for the rebuilds
    if st.toggle("Rebuild in both layouts", key="bitmap_layouts_on"):
        block = st.selectbox("V2 index-block-size", ["1kb", "4kb", "16kb", "64kb"], index=2, key="bitmap_block")
        layouts = ctx.frame(bitmap.bitmap_layout_compare, column=column, index_block_size=block)
        st.plotly_chart(figures.bitmap_lookup_bytes(layouts), width="stretch")
        show_frame(layouts, "bitmap_layouts")
