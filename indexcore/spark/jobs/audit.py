"""Spark audit: every index of every live file checked against the data, in tasks.

Tasks run :func:`indexcore.analysis.audit.audit_file` per file (one file's failure is a
finding); the driver adds :func:`~indexcore.analysis.audit.audit_table`'s table-level checks
and the health counts per table, partition and bucket.
"""

from __future__ import annotations

import threading

from indexcore.analysis.audit import ERROR, OK, Check, Finding, audit_file, audit_table, health_frames
from indexcore.spark.jobs.run import file_groups, max_tasks, run_tasks, task_error
from indexcore.spark.jobs.tables import resolve, schema_ids, spec_table
from indexcore.spark.jobs.task_files import task_file
from indexcore.spark.progress import Progress
from indexcore.spark.session import get_session
from indexcore.warehouse.table_planning import Plan


def audit_task(spec: dict) -> dict:
    """Audit the task's files (runs on a worker)."""
    try:
        table = spec_table(spec)
        plan = Plan(None, hash_indexes=spec["hash_indexes"])
        cache: dict = {}
        findings, files = [], []
        for lf in table.iter_prefetched(spec["files"], data=True):
            try:
                found = audit_file(table, lf, plan, cache)
            except Exception as exc:  # noqa: BLE001 - one file's failure is a finding
                found = [Finding(Check.AUDIT, ERROR, lf.path, f"{type(exc).__name__}: {exc}")]
            findings.extend(f.to_dict() for f in found)
            files.append({"path": lf.path, "findings": len(found),
                          "errors": sum(1 for f in found if f.severity == ERROR)})
        return {"findings": findings, "files": files}
    except Exception as exc:  # noqa: BLE001
        return task_error(spec, exc)


def audit(warehouse_url: str, table: str, master: str | None = None, snapshot_id: int | None = None,
          progress: Progress | None = None, cancel: threading.Event | None = None, spark=None,
          storage_options: dict | None = None) -> dict:
    """Audit every index of every live file in Spark tasks, plus the table-level checks.

    Returns ``findings`` (every non-OK finding), ``health`` (OK/ERROR/WARNING/NOT_CHECKED
    counts per table, partition and bucket, as lists of records), ``files`` and ``task_errors``.
    """
    tbl, plan = resolve(warehouse_url, table, snapshot_id, storage_options)
    sid = plan.snapshot.id if plan.snapshot else None
    spark = spark or get_session(master)
    groups = file_groups(plan.files, max_tasks(spark), whole_buckets=False)
    specs = []
    for g in groups:
        keys = {(lf.partition, lf.bucket) for lf in g}
        specs.append({"url": warehouse_url, "storage_options": tbl.storage.storage_options,
                      "table": table, "schema_ids": schema_ids(tbl, g),
                      "files": [task_file(lf, stats=False) for lf in g],
                      "hash_indexes": {k: v for k, v in plan.hash_indexes.items() if k in keys}})
    results = run_tasks(spark, audit_task, specs, f"indexcore audit {table}", progress, cancel)
    findings = [Finding.from_dict(d) for r in results for d in r.get("findings", ())]
    task_errors = [r for r in results if "error" in r]
    for r in task_errors:
        findings.extend(Finding(Check.AUDIT, ERROR, p, r["error"]) for p in r["paths"])
    findings.extend(audit_table(tbl, plan))
    health = {k: v.to_dict("records") for k, v in health_frames(findings).items()}
    return {
        "table": table, "snapshot": sid, "files_audited": sum(len(r.get("files", ())) for r in results),
        "checks_passed": sum(1 for f in findings if f.severity == OK),
        "findings": [f.to_dict() for f in findings if f.severity != OK],
        "health": health,
        "task_errors": task_errors,
    }
