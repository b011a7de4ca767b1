"""Spark: full-table evaluation (ground truth + audit) on a Spark session, with live progress."""

import concurrent.futures
import datetime as dt
import importlib
import time

import pandas as pd
import streamlit as st

from indexcore import figures
from pages.common import MASTER_KEY, context, guard, need_table, show_frame

st.title("Spark")
ctx = context()
if not need_table(ctx):
    st.stop()
history = st.session_state.setdefault("spark_runs", [])

try:
    jobs = importlib.import_module("indexcore.spark.jobs")
    missing = [name for name in ("evaluate", "audit") if not callable(getattr(jobs, name, None))]
except ImportError as exc:
    jobs, missing = None, [str(exc)]

if jobs is None or missing:
    st.info("The Spark jobs (`indexcore.spark.jobs.evaluate` / `audit`) are not available in this "
            "installation yet, so full-table runs cannot start here. The other pages work without Spark.")
else:
    master = st.session_state.get(MASTER_KEY) or "local[*]"
    st.caption(f"Session: `{master}` (change it in the sidebar). Table `{ctx.table_name}`, "
               f"snapshot {ctx.snapshot_id}.")
    job = st.radio("Job", ["evaluate", "audit"], horizontal=True, key="spark_job",
                   captions=["ground truth: which rows match, and which files the indexes keep",
                             "every index checked against the data"])
    schema = ctx.table.schema()
    sql = st.text_input("Predicate (SQL WHERE, for evaluate)", value=f"{schema.field_names[0]} IS NOT NULL",
                        key="spark_sql", disabled=job != "evaluate")

    def _frames(result) -> dict[str, pd.DataFrame]:
        if hasattr(result, "to_frame"):
            return {"result": result.to_frame()}
        if isinstance(result, pd.DataFrame):
            return {"result": result}
        if hasattr(result, "to_json"):
            result = result.to_json()
        out = {}
        if isinstance(result, dict):
            for k, v in result.items():
                if isinstance(v, pd.DataFrame):
                    out[k] = v
                elif isinstance(v, list) and v and isinstance(v[0], dict):
                    out[k] = pd.DataFrame(v)
                elif isinstance(v, dict) and v and all(isinstance(x, dict) for x in v.values()):
                    out[k] = pd.DataFrame.from_dict(v, orient="index").reset_index(names=k)
                elif isinstance(v, dict) and v and all(isinstance(x, list) for x in v.values()):
                    for sub, items in v.items():
                        if items and isinstance(items[0], dict):
                            out[f"{k}: {sub}"] = pd.DataFrame(items)
            scalars = {k: v for k, v in result.items() if isinstance(v, int | float | str | bool)}
            if scalars:
                out["summary"] = pd.DataFrame([scalars])
        return out

    if st.button(f"Run {job}", key="spark_run", type="primary"):
        with st.status(f"Running {job} on {master}…", expanded=True) as status:
            bar = st.progress(0.0, text="starting Spark")
            started = dt.datetime.now()
            state = {"done": 0, "total": 0, "what": "starting Spark"}

            def progress(done, total, what=""):
                state.update(done=done, total=total, what=what)

            try:
                fn = getattr(jobs, job)
                args = (ctx.url, ctx.table_name, sql) if job == "evaluate" else (ctx.url, ctx.table_name)
                with concurrent.futures.ThreadPoolExecutor(1) as pool:
                    future = pool.submit(fn, *args, master=master, snapshot_id=ctx.snapshot_id,
                                         progress=progress)
                    while not future.done():
                        total = state["total"]
                        bar.progress(min(1.0, state["done"] / total) if total else 0.0,
                                     text=f"{state['what']} ({state['done']}/{total or '?'})")
                        time.sleep(0.25)
                    result = future.result()
                bar.progress(1.0, text="done")
                frames = _frames(result)
                status.update(label=f"{job} finished", state="complete")
                history.append({"job": job, "table": ctx.table_name, "snapshot": ctx.snapshot_id,
                                "where": sql if job == "evaluate" else None, "master": master,
                                "started": started, "seconds": (dt.datetime.now() - started).total_seconds(),
                                "ok": True, "frames": frames})
            except Exception as exc:  # Spark or the job failed: report it, keep the page alive
                status.update(label=f"{job} failed", state="error")
                st.error(f"{job} failed: {type(exc).__name__}: {exc}")
                history.append({"job": job, "table": ctx.table_name, "snapshot": ctx.snapshot_id,
                                "where": sql, "master": master, "started": started,
                                "seconds": (dt.datetime.now() - started).total_seconds(), "ok": False,
                                "frames": {}})

if history:
    with guard("Runs"):
        st.subheader("Runs in this session")
        runs = pd.DataFrame([{k: v for k, v in r.items() if k != "frames"} for r in history])
        show_frame(runs, "spark_runs")
        pick = st.selectbox("Show run", list(range(len(history)))[::-1], key="spark_pick",
                            format_func=lambda i: f"#{i + 1} {history[i]['job']} {history[i]['table']}")
        for name, frame in history[pick]["frames"].items():
            st.markdown(f"**{name}**")
            show_frame(frame, f"spark_{pick}_{name}")
            numeric = frame.select_dtypes("number").columns.tolist()
            if len(frame) > 1 and numeric:
                x = frame.columns[0]
                st.plotly_chart(figures.bar(frame, x, numeric[0], f"{name}: {numeric[0]}"), width="stretch")
