"""Spark: full-table evaluation (ground truth), index audit, and the metadata work (plan, census of
index heads, explain, health with manifests read by tasks) on a Spark session, with live progress.

Jobs of every session share the process's Spark context through one
:class:`~indexcore.spark.session.SparkSessions` (a job on another master queues until the
context is free, never stops it); a user runs at most ``spark_jobs_per_user`` jobs, cancels
their own (any click while it runs, or "Cancel"), and the session keeps its last
``spark_history`` runs.
"""

import datetime as dt
import threading
import traceback

import pandas as pd
import streamlit as st

from indexcore.analysis.health import health_frames
from indexcore.config import settings
from indexcore.errors import IndexCoreError
from indexcore.expr import quote_name
from indexcore.frames import figures
from indexcore.frames.suggestion import suggest_predicate
from indexcore.frames.text import code, fmt_count, md
from indexcore.frames.views import UNPARTITIONED, to_frame
from indexcore.scan.explainer import bind_predicate
from indexcore.scan.partition import parse_partition
from indexcore.spark.jobs.audit import audit
from indexcore.spark.jobs.evaluate import evaluate
from indexcore.spark.jobs.metadata import spark_census, spark_explain, spark_health, spark_plan
from pages.common import MASTER_KEY, guard, open_page
from pages.rows import show_frame
from pages.spark_lease import run_beside, spark_sessions, spark_user

JOBS = {"evaluate": "ground truth: which rows match, and which files the indexes keep",
        "audit": "every index of every live file checked against the data",
        "explain": "the plan and every file's pruning decision, manifests read by tasks",
        "plan": "the live files ($files), manifests read by tasks",
        "census": "every file index of every live file ($file_indexes), heads read by tasks",
        "health": "the table's health, its census of index heads read by tasks"}
WHERE_JOBS = ("evaluate", "explain")  # the jobs that take the predicate


def _plan_job(url: str, table: str, **kw) -> dict:
    r = spark_plan(url, table, **kw)
    return {"files": r.table.to_pandas(), "problems": [p.to_dict() for p in r.problems], "tasks": r.tasks}


def _census_job(url: str, table: str, **kw) -> dict:
    r = spark_census(url, table, **kw)
    return {"census": to_frame(r.table), "problems": [p.to_dict() for p in r.problems], "tasks": r.tasks}


def _explain_job(url: str, table: str, sql: str, **kw) -> dict:
    return spark_explain(url, table, sql, **kw).to_json()


def _health_job(url: str, table: str, master: str, snapshot_id=None, progress=None, cancel=None, **_kw) -> dict:
    # the page's own table: the census kept on it serves the other pages of this snapshot too
    h = spark_health(ctx.table, url, master, snapshot_id, progress, cancel)
    return {"score": h.score, "files": h.files, "frames": health_frames(h)}


RUN = {"evaluate": evaluate, "audit": audit, "explain": _explain_job, "plan": _plan_job, "census": _census_job,
       "health": _health_job}
HISTORY_KEY, RUN_NO_KEY = "spark_runs", "spark_run_no"


ctx = open_page("spark")
limits = settings()
history: list[dict] = st.session_state.setdefault(HISTORY_KEY, [])


def _records(value) -> pd.DataFrame:
    """A list of dicts (or a dict of dicts, keyed by its first column) as a frame."""
    if isinstance(value, dict):
        return pd.DataFrame([{"name": k, **v} for k, v in value.items() if isinstance(v, dict)])
    return pd.DataFrame(list(value or []))


def _partition(value) -> str:
    """A partition cell as every page writes it (``{v1, v2}``; an unpartitioned table's says so)."""
    return UNPARTITIONED if value in ({}, "", None, "{}") else str(value)


def _flat(frame: pd.DataFrame) -> pd.DataFrame:
    """Nested cells (dicts, lists) as text, so st.dataframe shows them; the partition in the one format."""
    out = frame.copy()
    if "partition_text" in out:  # explain's per-file records carry the partition as values and as text
        out["partition"] = out.pop("partition_text")
    if "partition" in out:
        out["partition"] = out["partition"].map(_partition)
    for col in out.columns:
        if out[col].map(lambda v: isinstance(v, dict | list | tuple)).any():
            out[col] = out[col].map(lambda v: ", ".join(f"{k}={x}" for k, x in v.items()) if isinstance(v, dict)
                                    else ", ".join(map(str, v)) if isinstance(v, list | tuple) else v)
    return out


def _refusal(sql: str, partition: str | None = None) -> str | None:
    """Why the predicate (or explain's partition) cannot be used (columns and partition keys resolved
    against the schema the read uses), or None: checked before any Spark job starts, so a typo costs
    no JVM start."""
    try:
        snap = ctx.table.snapshot(ctx.snapshot_id) if ctx.snapshot_id is not None else None
        schema = ctx.table.read_schema(ctx.snapshot_id, snap)
        bind_predicate(ctx.table, schema, sql)
        parse_partition(schema, partition)
    except IndexCoreError as exc:
        return str(exc)
    return None


def _explain_options() -> dict:
    """Explain's restrictions and checks, as explain and ``explain --master`` take them: a partition
    (``k=v,k2=v2``), a bucket, ``verify`` (the tasks read the data) and ``all_files``."""
    c = st.columns(4)
    partition = c[0].text_input("Partition (k=v,...)", key="spark_partition", placeholder="every partition",
                                help="Explain only this partition's files, e.g. dt=2024-06-02")
    bucket = c[1].number_input("Bucket", value=None, step=1, format="%d", key="spark_bucket",
                               placeholder="every bucket", help="Explain only this bucket's files")
    verify = c[2].checkbox("Verify against the data", key="spark_verify",
                           help="The tasks read every kept or pruned file's rows and report files or rows "
                                "pruned although they match")
    all_files = c[3].checkbox("Consult every file index", key="spark_all_files",
                              help="Also ask the file indexes of files an earlier stage pruned")
    return {"partition": partition.strip() or None, "bucket": None if bucket is None else int(bucket),
            "verify": verify, "all_files": all_files}


def _run(job: str, sql: str, master: str, options: dict | None = None) -> dict:
    """Run one job in a worker thread under a lease of the shared Spark context; the script thread
    draws its progress until it ends. The record joins the history at once (capped at
    ``spark_history``), so a job stopped by a rerun stays listed as cancelled. ``options``: the
    job's own keywords (explain's partition, bucket, verify, all_files)."""
    options = options or {}
    started = dt.datetime.now()
    st.session_state[RUN_NO_KEY] = st.session_state.get(RUN_NO_KEY, 0) + 1
    record = {"run": st.session_state[RUN_NO_KEY], "job": job, "table": ctx.table_name, "snapshot": ctx.snapshot_id,
              "where": sql if job in WHERE_JOBS else None, "master": master,
              **{k: v for k, v in options.items() if v is not None and v is not False},
              "started": started.strftime("%H:%M:%S"), "seconds": None, "ok": False,
              "error": "cancelled: the page was rerun or left while it ran", "details": None, "result": None}
    history.append(record)
    del history[:-max(1, limits.spark_history)]
    refused = _refusal(sql, options.get("partition")) if job in WHERE_JOBS else None
    if refused is not None:
        what = f"the predicate {sql!r}" + (f" or the partition {options['partition']!r}" if options.get("partition")
                                           else "")
        record.update(error=refused, details=f"{what} was refused before Spark started:\n{refused}", seconds=0.0)
        return record
    state = {"done": 0, "total": 0, "what": "starting Spark"}
    cancel = threading.Event()
    sessions, user = spark_sessions(limits.spark_jobs_per_user, limits.spark_queue_seconds), spark_user()

    def progress(done: int, total: int, what: str = "") -> None:
        state.update(done=done, total=total, what=what)

    def work() -> dict:
        with sessions.lease(master, user, cancel, queued=lambda message: state.update(what=message)) as reserved:
            state["what"] = "starting Spark (the first run starts a JVM)"
            return RUN[job](*args, master=reserved, snapshot_id=ctx.snapshot_id, progress=progress, cancel=cancel,
                            storage_options=dict(ctx.options) or None, **options)

    with st.status(f"Running {job} on {code(master)}…", expanded=True) as status:
        bar = st.progress(0.0, text="starting Spark (the first run starts a JVM)")
        st.button("Cancel", key="spark_cancel", help="Stops this job (any click on the page does too)")
        args = (ctx.url, ctx.table_name, sql) if job in WHERE_JOBS else (ctx.url, ctx.table_name)
        try:
            record["result"] = run_beside(work, bar, state, cancel,
                                          lambda s: md(f"{s['what']} ({s['done']}/{s['total'] or '?'} tasks)"))
            record["ok"], record["error"] = True, None
            bar.progress(1.0, text="done")
            status.update(label=f"{job} finished", state="complete", expanded=False)
        except Exception as exc:  # Spark or the job failed: report it, keep the page alive
            record["error"] = str(exc) if isinstance(exc, IndexCoreError) else f"{type(exc).__name__}: {exc}"
            record["details"] = "".join(traceback.format_exception(exc, limit=8))
            status.update(label=f"{job} failed", state="error", expanded=True)
        finally:
            record["seconds"] = round((dt.datetime.now() - started).total_seconds(), 1)
    return record


def _show_failure(run: dict) -> None:
    """A failed run in plain sight: its message as an error, the details open below it."""
    st.error(md(f"Run #{run['run']}, {run['job']} of {run['table']}, failed: {run['error']}"))
    with st.expander("Error details", expanded=True):
        st.code(run.get("details") or run["error"], language=None)


def _show_evaluate(result: dict, key: str) -> None:
    files = _records(result.get("files"))
    c = st.columns(5)
    c[0].metric("Live files", fmt_count(len(files)))
    c[1].metric("Files read", fmt_count(result.get("files_read", 0)))
    c[2].metric("Matching rows", f"{int(result.get('matching_rows') or 0):,}")
    c[3].metric("Rows read (after DV)", f"{int(result.get('rows_after_dv') or 0):,}")
    c[4].metric("Violations", fmt_count(len(result.get("violations") or [])))
    funnel = result.get("funnel") or {}
    left, right = st.columns(2)
    left.plotly_chart(figures.funnel([(k, v.get("files", 0)) for k, v in funnel.items()],
                                     f"Files per stage for {result.get('where')}"), width="stretch", key=f"{key}_fun")
    fp = _records(result.get("false_positives")).rename(columns={"name": "index"})
    if not fp.empty and "false_positive_rows" in fp:
        right.plotly_chart(figures.bar(fp, "index", "false_positive_rows",
                                       "Rows read that do not match, by the index that could have skipped "
                                       "their file", color="index"), width="stretch", key=f"{key}_fp")
        right.caption("A file is blamed on an index kind only when that index could have skipped it "
                      "(the predicate is answerable by the file's indexes); files kept because, e.g., an "
                      "OR branch is on an unindexed column count as *no usable index*.")
    if result.get("violations"):
        st.error("Files or rows pruned although they match the predicate:")
        show_frame(_flat(_records(result["violations"])), f"{key}_violations")
    st.markdown("**Per file** (Spark tasks, verified against the data)")
    if not files.empty:
        shown = files.drop(columns=[c for c in ("path", "problems", "notes") if c in files])
        shown.insert(0, "file", files["path"].map(lambda p: p.rsplit("/", 1)[-1]))
        show_frame(_flat(shown), f"{key}_files")
    if not fp.empty:
        st.markdown("**False positives per index type**")
        show_frame(fp, f"{key}_fp_table")


def _show_audit(result: dict, key: str) -> None:
    findings = _records(result.get("findings"))
    c = st.columns(4)
    c[0].metric("Files audited", fmt_count(result.get("files_audited", 0)))
    c[1].metric("Checks passed", fmt_count(result.get("checks_passed", 0)))
    c[2].metric("Findings", fmt_count(len(findings)))
    c[3].metric("Errors", fmt_count(int((findings["severity"] == "ERROR").sum()) if "severity" in findings else 0))
    health = result.get("health") or {}
    for level, rows in health.items():
        frame = pd.DataFrame(rows)
        if frame.empty:
            continue
        counts = [c for c in ("OK", "WARNING", "ERROR", "NOT_CHECKED") if c in frame]
        if counts and "partition" in frame:
            labels = frame["partition"].map(_partition)
            if "bucket" in frame:
                labels = labels + " / bucket " + frame["bucket"].astype(str)
            where = "partition / bucket" if "bucket" in frame else "partition"
            long = frame.assign(**{where: labels}).melt(id_vars=[where], value_vars=counts, var_name="result",
                                                        value_name="checks")
            st.plotly_chart(figures.bar(long, where, "checks", f"Audit checks per {where}", color="result"),
                            width="stretch", key=f"{key}_health_{level}")
        with st.expander(f"Health per {level}"):
            show_frame(_flat(frame), f"{key}_health_{level}_table")
    if findings.empty:
        st.success("Every index agrees with the data.")
    else:
        st.markdown("**Findings** (every check that did not pass)")
        show_frame(_flat(findings), f"{key}_findings")


def _show_explain(result: dict, key: str) -> None:
    files = _records(result.get("files"))
    funnel = result.get("funnel") or {}
    c = st.columns(3)
    c[0].metric("Live files", fmt_count(len(files)))
    c[1].metric("Files read", fmt_count((funnel.get("read") or {}).get("files", 0)))
    c[2].metric("Rows read (after DV)", f"{int((funnel.get('read') or {}).get('rows') or 0):,}")
    st.plotly_chart(figures.funnel([(k, v.get("files", 0)) for k, v in funnel.items()],
                                   f"Files per stage for {result.get('where')}"), width="stretch", key=f"{key}_fun")
    if files.empty or "matching_rows" not in files:
        pass
    elif result.get("violations"):
        st.error(f"Verified against the data in the tasks: {len(result['violations'])} file(s) or rows pruned "
                 "although they match the predicate:")
        show_frame(_flat(_records(result["violations"])), f"{key}_violations")
    else:
        st.success(f"Verified against the data in the tasks: no file or row that matches was pruned "
                   f"({int(files['matching_rows'].fillna(0).sum()):,} matching rows).")
    st.markdown("**Per file** (planned and decided in Spark tasks, as explain decides them)")
    if not files.empty:
        shown = files.drop(columns=[c for c in ("path", "problems", "notes") if c in files])
        shown.insert(0, "file", files["path"].map(lambda p: p.rsplit("/", 1)[-1]))
        show_frame(_flat(shown), f"{key}_files")


def _show_plan(result: dict, key: str) -> None:
    files = result["files"]
    c = st.columns(3)
    c[0].metric("Live files", f"{len(files):,}")
    c[1].metric("Data bytes", f"{int(files['file_size_in_bytes'].sum()) if len(files) else 0:,}")
    c[2].metric("Spark tasks", fmt_count(result.get("tasks", 0)))
    show_frame(_flat(files), f"{key}_plan")


def _show_census(result: dict, key: str) -> None:
    census = result["census"]
    c = st.columns(4)
    c[0].metric("Files with a file index", f"{census['file_path'].nunique() if len(census) else 0:,}")
    c[1].metric("Index entries", f"{len(census):,}")
    c[2].metric("Unusable entries", f"{int(census['error'].notna().sum()) if len(census) else 0:,}")
    c[3].metric("Index bytes", f"{int(census['index_size_in_bytes'].sum()) if len(census) else 0:,}")
    show_frame(_flat(census), f"{key}_census")


def _show_health(result: dict, key: str) -> None:
    c = st.columns(2)
    c[0].metric("Health score", fmt_count(result["score"]))
    c[1].metric("Live files", f"{result['files']:,}")
    for name, frame in result["frames"].items():
        if not frame.empty:
            st.markdown(f"**{md(name)}**")
            show_frame(_flat(frame), f"{key}_health_{name}")


SHOW = {"evaluate": _show_evaluate, "audit": _show_audit, "explain": _show_explain, "plan": _show_plan,
        "census": _show_census, "health": _show_health}

master = st.session_state.get(MASTER_KEY) or "local[*]"
st.caption(f"Session: {code(master)} (change it in the sidebar). Table {code(ctx.table_name)}, "
           f"snapshot {ctx.snapshot_id}. Each task opens the warehouse itself; nothing is written.")
job = st.radio("Job", list(JOBS), horizontal=True, key="spark_job", captions=list(JOBS.values()))
picked = (ctx.url, ctx.table_name, ctx.snapshot_id)
if st.session_state.get("spark_sql_for") != picked or "spark_sql" not in st.session_state:
    suggestion = None
    with guard("Suggested predicate"):
        suggestion = ctx.frame(suggest_predicate)
    names = ctx.table.schema().field_names
    st.session_state["spark_sql"] = suggestion["sql"] if suggestion else f"{quote_name(names[0])} IS NOT NULL"
    st.session_state["spark_sql_for"] = picked
sql = st.text_input("Predicate (SQL WHERE, for evaluate and explain)", key="spark_sql", disabled=job not in WHERE_JOBS)
job_options = _explain_options() if job == "explain" else {}
if st.button(f"Run {job}", key="spark_run", type="primary"):
    _run(job, sql, master, job_options)
    if history[-1]["ok"]:
        st.session_state["spark_pick"] = history[-1]["run"]  # show the run that just ended
if history and not history[-1]["ok"]:
    _show_failure(history[-1])

if history:
    with guard("Runs"):
        st.subheader("Runs in this session")
        runs = pd.DataFrame([{k: v for k, v in r.items() if k not in ("result", "details")} for r in history])
        show_frame(runs, "spark_runs")
        if st.session_state.get(RUN_NO_KEY, 0) > len(history):
            st.caption(f"The last {len(history)} of {st.session_state[RUN_NO_KEY]} runs (this server keeps "
                       f"{limits.spark_history} per session).")
        done = {r["run"]: r for r in history if r["ok"]}
        if done:
            if st.session_state.get("spark_pick") not in done:
                st.session_state["spark_pick"] = max(done)
            labels = {n: f"#{n} {r['job']} · {r['table']} · snapshot {r['snapshot']}" for n, r in done.items()}
            # a bound method, not a lambda: a widget's format_func kept by Streamlit holds a page lambda's globals
            pick = st.selectbox("Show run", sorted(done, reverse=True), key="spark_pick",
                                format_func=labels.__getitem__)
            run = done[pick]
            st.subheader(md(f"Run #{pick}: {run['job']} of {run['table']}"))
            if run["result"].get("task_errors"):
                st.warning(f"{len(run['result']['task_errors'])} Spark task(s) failed as a whole:")
                show_frame(_flat(_records(run["result"]["task_errors"])), f"spark_{pick}_task_errors")
            if run["result"].get("problems"):
                st.warning(f"{len(run['result']['problems'])} unreadable part(s):")
                show_frame(_flat(_records(run["result"]["problems"])), f"spark_{pick}_problems")
            SHOW[run["job"]](run["result"], f"spark_{pick}")
