"""Streamlit glue for Spark jobs a page starts: the process's shared Spark leases, who a job runs
for (the per-user limit), and a job run in a thread beside its progress bar. Used by the census on
Spark (:func:`pages.common.census_on_spark`) and the Spark pages (:mod:`pages.spark`,
:mod:`pages.spark_route`)."""

from __future__ import annotations

import concurrent.futures
import threading
import time

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from indexcore.spark.session import SparkSessions


@st.cache_resource
def spark_sessions(per_user: int, queue_seconds: float) -> SparkSessions:
    """The leases of the process's Spark context: one for every session of the server."""
    return SparkSessions(per_user, queue_seconds)


def spark_user() -> str:
    """Who runs a Spark job, for the per-user limit: the signed-in user, else this browser session."""
    if getattr(st.user, "is_logged_in", False):
        return f"user:{st.user.get('email') or st.user.get('sub')}"
    run = get_script_run_ctx()
    return f"session:{run.session_id if run is not None else 'bare'}"


def run_beside(work, bar, state: dict, cancel: threading.Event, label):
    """``work()``'s result (or its exception), run in a thread while ``bar`` is redrawn from
    ``state``'s done/total tasks (``label(state)`` its text); a script stopped meanwhile (a rerun,
    a page change) sets ``cancel``, so the job it started stops too."""
    pool = concurrent.futures.ThreadPoolExecutor(1)
    future = pool.submit(work)
    try:
        while not future.done():
            total = state["total"]
            bar.progress(min(1.0, state["done"] / total) if total else 0.0, text=label(state))
            time.sleep(0.25)
        return future.result()
    finally:
        if not future.done():
            cancel.set()
        pool.shutdown(wait=False)
