"""Past the operator's ``spark_metadata_files`` live files, the metadata work a page shows runs on
Spark: the census of index heads (every page, :func:`pages.common.census_on_spark`), the table's
health (Table page, :func:`health_on_spark`), the health of every such table of the warehouse
(Warehouse page, :func:`warehouse_health_on_spark`), explain (What-if page, :func:`explain_on_spark`)
and the advisor's plan and the explains of its queries (Advisor page, :func:`advise_planner`,
:func:`advise_explainer`).

Each runs on the default master under a lease of the shared Spark context, in a status box, and
the page says that Spark ran it. Below the setting (and by default) nothing runs here and the
pages work in this process; when Spark fails the page says so and works in this process too.
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Callable
from functools import partial
from typing import Any

import streamlit as st

from indexcore.analysis.advise import PlannedFiles, explained_here, planned_here
from indexcore.analysis.health import TableHealth, health_frames, table_health, warehouse_health
from indexcore.config import settings
from indexcore.errors import IndexCoreError
from indexcore.frames.text import code, md
from indexcore.scan.explainer import bind_predicate
from indexcore.spark.jobs.metadata import (
    metadata_master,
    spark_explain,
    spark_explain_workload,
    spark_health,
    spark_plan_columns,
)
from indexcore.spark.jobs.planned import planned_of_columns
from pages.common import Context
from pages.spark_lease import run_beside, spark_sessions, spark_user

LOG = logging.getLogger("indexcore.app")


def spark_route(ctx: Context) -> str | None:
    """The master the picked snapshot's metadata work runs on (the operator's threshold reached),
    else None (this process)."""
    if not settings().spark_metadata_files or ctx.table is None:  # off (the default)
        return None
    try:
        return metadata_master(ctx.table, ctx.snapshot_id)
    except IndexCoreError:  # an unreadable head: the page reports it its own way
        return None


def on_spark(master: str, what: str, work: Callable[[str, Callable, threading.Event], Any]) -> Any | None:
    """``work(master, progress, cancel)`` under a lease of the shared context, drawn in a status box
    (``what``: the work, as the label names it); None when Spark failed (said in the box)."""
    limits, state = settings(), {"done": 0, "total": 0}
    sessions, cancel = spark_sessions(limits.spark_jobs_per_user, limits.spark_queue_seconds), threading.Event()

    def run() -> Any:
        with sessions.lease(master, spark_user(), cancel) as reserved:
            return work(reserved, lambda d, t, _m="": state.update(done=d, total=t), cancel)

    with st.status(md(f"{what} on Spark ({master}): past {limits.spark_metadata_files:,} live files this server "
                      "runs it there"), expanded=False) as status:
        try:
            out = run_beside(run, st.progress(0.0), state, cancel, lambda s: f"{s['done']}/{s['total'] or '?'} tasks")
        except Exception as exc:  # noqa: BLE001 - Spark failed: the page works in this process
            LOG.warning("%s on Spark failed: %s", what, exc)
            status.update(label=md(f"{what} on Spark failed ({exc}); this page works in this process"),
                          state="error")
            return None
        status.update(label=md(f"{what}: ran on Spark ({master})"), state="complete")
    return out


def health_on_spark(ctx: Context):
    """The picked snapshot's :class:`~indexcore.analysis.health.TableHealth` measured on Spark
    (:func:`~indexcore.spark.jobs.metadata.spark_health`) past the threshold, kept on the table for
    every session of that snapshot; None below it or when Spark failed."""
    master = spark_route(ctx)
    if master is None:
        return None
    table = ctx.table
    snap = table.snapshot(ctx.snapshot_id)
    if snap is None:
        return None
    key = _health_key(snap.id)
    kept = table.caches.derived.get(key)
    if kept is None:
        kept = on_spark(master, "Measuring this table's health",
                        lambda m, progress, cancel: spark_health(table, ctx.url, m, snap.id, progress, cancel))
        if kept is None:
            return None
        table.caches.derived.put(key, kept)
    st.caption(f"Health measured in Spark tasks on {code(master)}: this snapshot's "
               f"{kept.files:,} live files are past the server's {settings().spark_metadata_files:,}.")
    return kept


def _health_key(snapshot_id: int) -> tuple:
    """Where a table keeps its health measured on Spark (Table and Warehouse pages share it)."""
    return ("spark", "health", snapshot_id)


def warehouse_health_on_spark(ctx: Context) -> tuple[int, dict] | None:
    """The Warehouse page's (score, frames) with every table past the threshold measured in Spark
    tasks (:func:`~indexcore.spark.jobs.metadata.spark_health`, in one status box, each kept on
    its table as the Table page keeps it) and the others in this process. None when no table is
    past it (the page's own cached frames) or when Spark failed for all of them."""
    limit = settings().spark_metadata_files
    if not limit or ctx.warehouse is None:  # off (the default)
        return None
    routed: dict[str, tuple] = {}  # table -> (table, master, snapshot id)
    for name in ctx.warehouse.tables():
        try:
            table = ctx.warehouse.table(name)
            master = metadata_master(table)
            snap = table.snapshot() if master else None
        except IndexCoreError:  # the overview reports an unreadable table its own way
            continue
        if snap is not None:
            routed[name] = (table, master, snap.id)
    if not routed:
        return None
    kept = {name: table.caches.derived.get(_health_key(sid)) for name, (table, _m, sid) in routed.items()}
    todo = [name for name, h in kept.items() if h is None]
    master = next(iter(routed.values()))[1]  # the default master: the same for every routed table
    if todo:
        def work(m: str, progress, cancel) -> dict[str, TableHealth]:
            return {name: spark_health(routed[name][0], ctx.url, m, routed[name][2], progress, cancel)
                    for name in todo}

        got = on_spark(master, f"Measuring the health of {len(todo)} table(s)", work) or {}
        for name, h in got.items():
            routed[name][0].caches.derived.put(_health_key(routed[name][2]), h)
            kept[name] = h
    measured = {name: h for name, h in kept.items() if h is not None}
    if not measured:
        return None
    h = warehouse_health(ctx.warehouse, measure=partial(_measured, measured))
    st.caption(f"Health of {len(measured)} table(s) measured in Spark tasks on {code(master)}: past the server's "
               f"{limit:,} live files; the other {len(h.tables) - len(measured)} in this process.")
    return h.score, health_frames(h)


def _measured(measured: dict[str, TableHealth], table) -> TableHealth:
    """A table's health measured on Spark, else measured here."""
    return measured.get(table.name) or table_health(table)


def explain_on_spark(ctx: Context, master: str, sql: str, verify: bool = False):
    """Explain ``sql`` on the picked snapshot planned and decided in Spark tasks (explain's own
    :class:`~indexcore.scan.records.Explanation`); None when Spark failed. A predicate that does
    not bind is explain's error here, before Spark starts."""
    table = ctx.table
    bind_predicate(table, table.read_schema(ctx.snapshot_id, table.snapshot(ctx.snapshot_id)), sql)
    return on_spark(master, "Explaining", lambda m, progress, cancel: spark_explain(
        ctx.url, ctx.table_name, sql, m, ctx.snapshot_id, progress, cancel,
        storage_options=dict(ctx.options) or None, verify=verify))


def advise_planner(ctx: Context):
    """advise's ``planned`` past the threshold: the snapshot's plan columns from Spark tasks
    (:func:`~indexcore.spark.jobs.metadata.spark_plan_columns`) under a lease, in a status box, so
    this process plans nothing for advise; planned here when Spark fails. None below the threshold."""
    master = spark_route(ctx)
    if master is None:
        return None

    def planned(snapshot_id: int | None) -> PlannedFiles:
        columns = on_spark(master, "Planning the table", lambda m, progress, cancel: spark_plan_columns(
            ctx.url, ctx.table_name, m, snapshot_id, progress, cancel, storage_options=dict(ctx.options) or None))
        if columns is None:
            return planned_here(ctx.table, snapshot_id)
        st.caption(f"The table was planned in Spark tasks on {code(master)}: this snapshot is past the server's "
                   f"{settings().spark_metadata_files:,} live files.")
        return planned_of_columns(ctx.table, columns)

    return planned


def advise_explainer(ctx: Context):
    """advise's ``explain_all`` past the threshold: the workload's conditions explained in one Spark
    job (:func:`~indexcore.spark.jobs.metadata.spark_explain_workload`) under a lease, in a status
    box, each explanation decoded as advise asks for it; in this process when Spark fails. None
    below the threshold (advise explains in this process)."""
    master = spark_route(ctx)
    if master is None:
        return None

    def explain_all(conditions: list, snapshot_id: int | None, whole: bool = True):
        def work(m: str, progress, cancel):
            explained = spark_explain_workload(ctx.url, ctx.table_name, conditions, m, snapshot_id, progress, cancel,
                                               storage_options=dict(ctx.options) or None, whole=whole)
            return next(explained, None), explained  # the job runs (and ends) for the first one, under the lease

        got = on_spark(master, "Explaining the workload's queries", work)
        if got is None:
            return explained_here(ctx.table, conditions, snapshot_id, whole)
        st.caption(f"The workload's queries were explained in Spark tasks on {code(master)}: this snapshot is "
                   f"past the server's {settings().spark_metadata_files:,} live files.")
        first, rest = got
        return itertools.chain([first], rest) if first is not None else rest

    return explain_all
