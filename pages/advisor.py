"""Advisor: which file indexes earn their bytes for a workload, which are dead weight, which would pay."""

import pandas as pd
import streamlit as st

from indexcore.expr import quote_table
from indexcore.frames import advisor, figures, suggestion
from indexcore.frames.text import code, fmt_count, md
from pages.common import fmt_bytes, guard, open_page, progress_callback
from pages.rows import show_frame
from pages.spark_route import advise_explainer, advise_planner

ctx = open_page("advisor")
st.caption("Replays explain for every query of a workload; candidate indexes are built in memory on a sample "
           "of files. Nothing is written into the warehouse.")

picked = (ctx.url, ctx.table_name, ctx.snapshot_id)
if st.session_state.get("advisor_for") != picked or "advisor_workload" not in st.session_state:
    start = ""
    with guard("Suggested predicate"):
        suggested = ctx.frame(suggestion.suggest_predicate)
        if suggested:
            start = f"SELECT * FROM {quote_table(ctx.table_name)} WHERE {suggested['sql']};\n"
    st.session_state["advisor_workload"] = start
    st.session_state["advisor_for"] = picked
    st.session_state.pop("advisor_result", None)

upload = st.file_uploader("Workload file", type=["sql", "txt", "tsv"], key="advisor_upload",
                          help="SELECTs or bare WHERE conditions, one per line or ';'-separated; "
                               "'-- weight: N' or 'N<TAB>query' for a weight, '-- name: X' for a name.")
text = st.text_area("...or paste the workload", key="advisor_workload", height=160)
if upload is not None:
    text = upload.getvalue().decode("utf-8", errors="replace")
    st.caption(f"Using the uploaded file {code(upload.name)}.")
sample = st.number_input("Files per query to measure candidates on (0 = all; empty = automatic)", min_value=0,
                         value=None, key="advisor_sample", placeholder=advisor.SAMPLE_RULE)

if st.button("Advise", key="advisor_run", type="primary"):
    with guard("Advisor"):
        queries = advisor.workload_queries(text)
        update, bar = progress_callback("Advising")
        advice = advisor.advise(ctx.table, queries, snapshot_id=ctx.snapshot_id,
                                sample=None if sample is None else int(sample), progress=update,
                                explain_all=advise_explainer(ctx),  # on Spark past the operator's file count
                                planned=advise_planner(ctx))
        bar.empty()
        st.session_state["advisor_result"] = advice

advice = st.session_state.get("advisor_result")
if advice is not None:
    with guard("Advice"):
        summary = advisor.advice_summary(advice)
        replayed = [n for r in advice.runs if r.ok for n in r.names]
        c = st.columns(4)
        c[0].metric("Queries replayed", fmt_count(len(replayed)))
        c[1].metric("Existing indexes", fmt_count(len(advice.existing)))
        c[2].metric("Dead or mis-sized", fmt_count(sum(1 for e in advice.existing if e.verdict != "earns its keep")))
        c[3].metric("Candidates recommended", fmt_count(sum(1 for x in advice.candidates if x.recommended)))

        st.subheader("Existing indexes")
        existing = pd.DataFrame(summary["existing"])
        if not existing.empty:
            existing["bytes"] = existing["bytes"].map(fmt_bytes)
        show_frame(existing, "advisor_existing")

        st.subheader("Candidates, ranked by benefit for cost")
        st.caption("Skipped files, rows and bytes are beyond partition, statistics and today's indexes. A figure "
                   "measured on a sample reads `value [low-high] (n of N files)`: its estimate, 95% interval and "
                   "the files measured among those the queries still reach. Score = weighted bytes skipped per "
                   f"byte stored; nothing below {advisor.MIN_SCORE} is recommended.")
        show_frame(pd.DataFrame(summary["candidates"]), "advisor_candidates")

        st.plotly_chart(figures.advisor_benefit(pd.DataFrame(summary["existing"]),
                                                pd.DataFrame(summary["candidates"])), key="advisor_benefit")

        for note in advice.column_notes:  # prefixes and patterns: why no index, what statistics skip
            st.info(md(note["message"]))

        st.subheader("Statements")
        if advice.statements:
            st.code(";\n".join(advice.statements) + ";", language="sql")
        else:
            st.success("Nothing to change for this workload.")

        errors = [{"query": r.name, "error": r.error} for r in advice.runs if r.error]
        if advice.skipped_queries or errors:
            st.markdown("**Queries not replayed**")
            show_frame(pd.DataFrame(advice.skipped_queries + errors), "advisor_skipped")
        if advice.problems:
            st.warning(f"{len(advice.problems)} problem(s) while advising; the affected files are kept.")
            show_frame(pd.DataFrame([p.to_dict() for p in advice.problems]), "advisor_problems")
