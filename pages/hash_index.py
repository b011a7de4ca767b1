"""Hash index: keys per bucket of a dynamic-bucket table vs the target, and their balance."""

import streamlit as st

from indexcore.frames import figures, hash_index
from indexcore.frames.text import fmt_count
from pages.common import guard, open_page, show_unusable, unusable_index_files
from pages.rows import show_frame

ctx = open_page("hash_index")

with guard("Files that could not be used"):
    show_unusable(unusable_index_files(ctx, (hash_index.HASH,)), "hash_unusable")

with guard("Hash index"):
    frame = ctx.view("hash_buckets")
    if frame.empty:
        schema = ctx.table.schema()
        if not schema.primary_keys:
            st.info("No hash index: this is an append table (no primary key), and Paimon keeps a dynamic-bucket "
                    "hash index only for primary-key tables with `bucket` = -1.")
        elif schema.bucket != -1:
            st.info(f"No hash index: this primary-key table has fixed buckets (`bucket` = {schema.bucket}); "
                    "Paimon keeps a hash index only for dynamic buckets (`bucket` = -1).")
        else:
            st.info("No hash index in this snapshot yet: this dynamic-bucket primary-key table writes one per "
                    "bucket as rows arrive.")
        st.stop()
    balance = hash_index.hash_balance(frame)
    c = st.columns(5)
    c[0].metric("Buckets", fmt_count(balance["groups"]))
    c[1].metric("Keys", f"{int(frame['keys'].sum()):,}")
    c[2].metric("Target per bucket", f"{balance['target']:,}")
    c[3].metric("Largest / mean", f"{balance['max_over_mean']:.2f}")
    c[4].metric("Over target", fmt_count(balance["over_target"]))
    st.plotly_chart(figures.hash_buckets(frame, balance["target"]), width="stretch")
    st.caption("`keys` counts the hashes in the bucket's index files; a new key goes to a bucket with fewer "
               "than `dynamic-bucket.target-row-num` keys, so well-spread buckets sit near the target.")
    show_frame(frame, "hash_buckets", column_config={
        "fill": st.column_config.ProgressColumn("fill", min_value=0.0, max_value=1.0, format="percent")})
