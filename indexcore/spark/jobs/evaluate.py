"""Spark evaluate: explain's verified per-file decision over every live file, in tasks.

Tasks run explain's per-file decision (:func:`~indexcore.scan.explain.decide_files`, verified
against the data); the driver assembles them with explain's own
:func:`~indexcore.scan.explain.explanation`, so files, funnel and violations equal the
single-process ``explain --verify``. The files of one primary-key bucket stay in one task
(stats pruning is decided per bucket).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from indexcore.expr import leaves
from indexcore.scan.explainer import bind_predicate, decide_files, explanation
from indexcore.spark.jobs.run import file_groups, max_tasks, run_tasks, task_error
from indexcore.spark.jobs.tables import resolve, schema_ids, spec_table
from indexcore.spark.jobs.task_files import task_file
from indexcore.spark.progress import Progress
from indexcore.spark.session import get_session

NO_USABLE_INDEX = "no usable index"


def evaluate_task(spec: dict) -> dict:
    """Explain's per-file decisions with verification over the task's files (runs on a worker)."""
    try:
        table = spec_table(spec)
        return {"decided": decide_files(table, spec["predicate"], spec["files"], table.schema(spec["schema_id"]),
                                        verify=True)}
    except Exception as exc:  # noqa: BLE001 - a task reports, the job goes on
        return task_error(spec, exc)


def _false_positives(files: Sequence) -> dict[str, dict[str, int]]:
    """Files read and their rows that hold no match, per index kind that could have skipped the
    file (explain's :func:`~indexcore.scan.explain.pruning_index_types`); a file no index
    could skip (none on the predicate's columns, an OR branch on an unindexed column, an index
    the read path ignores or could not read) counts under :data:`NO_USABLE_INDEX`."""
    out: dict[str, dict[str, int]] = {}
    for f in files:
        if not f.read or f.matching_rows is None:
            continue
        extra = max(f.rows_after_dv - f.matching_rows, 0)
        for kind in f.pruning_index_types or (NO_USABLE_INDEX,):
            slot = out.setdefault(kind, {"files_kept": 0, "false_positive_files": 0, "false_positive_rows": 0})
            slot["files_kept"] += 1
            slot["false_positive_rows"] += extra
            if f.matching_rows == 0:
                slot["false_positive_files"] += 1
    return out


def _leaf_values(predicate, columns: list[str]) -> list:
    out = []
    for leaf in leaves(predicate):
        if leaf.field in columns:
            out.append({"column": leaf.field, "op": leaf.function.name, "literals": [_json(v) for v in leaf.literals]})
    return out


def _json(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, bytes):
        return value.hex()
    return str(value)


def evaluate(warehouse_url: str, table: str, where_sql: str, master: str | None = None,
             snapshot_id: int | None = None, progress: Progress | None = None,
             cancel: threading.Event | None = None, spark=None, storage_options: dict | None = None) -> dict:
    """Explain ``where_sql`` with verification over every live file, in Spark tasks.

    Tasks run explain's per-file decision (:func:`~indexcore.scan.explain.decide_files`);
    the driver assembles them with explain's own :func:`~indexcore.scan.explain.explanation`,
    so files, funnel and violations are explain's by construction. Returns explain's JSON
    (``files``, ``funnel``, ``violations``, ``problems``) plus totals: ``matching_rows``,
    ``rows_after_dv``, ``bytes_read``, ``false_positives`` per index type, and ``task_errors``
    for tasks that failed as a whole.
    """
    tbl, plan = resolve(warehouse_url, table, snapshot_id, storage_options)
    schema = tbl.read_schema(snapshot_id, plan.snapshot)
    # the driver binds the predicate (a bad one fails here, before Spark starts)
    predicate, sql = bind_predicate(tbl, schema, where_sql)
    spark = spark or get_session(master)
    # primary-key tables decide stats per bucket: keep a bucket in one task
    groups = file_groups(plan.files, max_tasks(spark), whole_buckets=bool(schema.primary_keys))
    base = {"url": warehouse_url, "storage_options": tbl.storage.storage_options, "table": table,
            "predicate": predicate, "schema_id": schema.id}
    specs = [{**base, "files": [task_file(lf) for lf in g],
              "schema_ids": schema_ids(tbl, g, schema.id)} for g in groups]
    results = run_tasks(spark, evaluate_task, specs, f"indexcore evaluate {table}", progress, cancel)
    task_errors = [r for r in results if "error" in r]
    ex = explanation(table, plan.snapshot.id if plan.snapshot else None, predicate, sql,
                     [r["decided"] for r in results if "error" not in r], verified=True, planned=plan.files)
    ex.problems[:0] = plan.problems
    out = ex.to_json()
    for v in out["violations"]:
        cols = [c.strip() for c in (v.get("column") or "").split(",") if c.strip()]
        v["values"] = _leaf_values(predicate, cols)
    read = [f for f in ex.files if f.read]
    out.update({
        "matching_rows": sum(f.matching_rows or 0 for f in ex.files),
        "rows_after_dv": sum(f.rows_after_dv for f in read),
        "files_read": len(read),
        "bytes_read": sum(f.bytes_read for f in ex.files),
        "requests": ex.requests,
        "false_positives": _false_positives(ex.files),
        "task_errors": task_errors,
    })
    return out
