"""Hash index: keys per bucket of a dynamic-bucket table vs the target, and their balance."""

import streamlit as st

from indexcore import figures
from indexcore.evaluate.metrics import hash_balance
from pages.common import context, guard, need_table, show_frame

st.title("Hash index")
ctx = context()
if not need_table(ctx):
    st.stop()

with guard("Hash index"):
    frame = ctx.view("hash_buckets")
    if frame.empty:
        bucket = ctx.table.schema().bucket
        st.info("No hash index in this snapshot. Paimon writes one per bucket for primary-key tables with "
                f"dynamic buckets (`bucket` = -1); this table has `bucket` = {bucket}.")
        st.stop()
    balance = hash_balance(frame)
    for _, row in frame[frame["error"].notna()].iterrows():
        st.warning(f"partition {row['partition']} bucket {row['bucket']}: {row['error']}")
    c = st.columns(5)
    c[0].metric("Buckets", balance["groups"])
    c[1].metric("Keys", f"{int(frame['keys'].sum()):,}")
    c[2].metric("Target per bucket", f"{balance['target']:,}")
    c[3].metric("Largest / mean", f"{balance['max_over_mean']:.2f}")
    c[4].metric("Over target", balance["over_target"])
    st.plotly_chart(figures.hash_buckets(frame, balance["target"]), width="stretch")
    st.caption("`keys` counts the hashes in the bucket's index files; a new key goes to a bucket with fewer "
               "than `dynamic-bucket.target-row-num` keys, so well-spread buckets sit near the target.")
    show_frame(frame, "hash_buckets", column_config={
        "fill": st.column_config.ProgressColumn("fill", min_value=0.0, max_value=1.0, format="percent")})
