"""Full-table work on Spark: evaluate a predicate, audit indexes, try a hypothetical index.

Tasks cannot carry a :class:`~indexcore.io.Storage` (nor a planned ``LiveFile``), so each task
gets the warehouse URL, the table name, the snapshot and the paths of its data files, opens the
warehouse itself (cached per Python worker, so a worker plans a snapshot once) and returns
small dicts. The files of one partition/bucket always go to the same task: primary-key
tables decide stats pruning per bucket.

* :func:`evaluate` runs :func:`indexcore.evaluate.explain.explain` with ``verify=True`` on each
  task's files, so its per-file decisions equal the single-process explain.
* :func:`audit` runs :func:`indexcore.evaluate.audit.audit_file` per file in tasks and
  :func:`~indexcore.evaluate.audit.audit_table` on the driver.
* :func:`what_if` builds a hypothetical file index per data file into a scratch directory
  (never the warehouse) and reports its size and what it would prune per predicate.

A Spark worker needs nothing but ``pip install`` of this project.
"""

from __future__ import annotations

import os
import posixpath
import tempfile
import threading
import traceback
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import IndexCoreError
from .progress import JobWatch, spark_context

Progress = Callable[[int, int, str], None]
TASKS_PER_CORE = 4
_CACHE_SIZE = 8
_warehouses: OrderedDict[str, Any] = OrderedDict()
_lock = threading.Lock()


# ---------------------------------------------------------------------------------------
# Worker side


def open_table(url: str, name: str):
    """The table ``name`` of the warehouse at ``url``, from a small per-process cache."""
    from .. import open_warehouse

    with _lock:
        wh = _warehouses.get(url)
        if wh is None:
            wh = open_warehouse(url)
            _warehouses[url] = wh
            while len(_warehouses) > _CACHE_SIZE:
                _warehouses.popitem(last=False)
        else:
            _warehouses.move_to_end(url)
    return wh.table(name)


def _task_error(spec: dict, exc: BaseException) -> dict:
    return {"error": f"{type(exc).__name__}: {exc}", "paths": list(spec["paths"]),
            "trace": traceback.format_exc(limit=5)}


def evaluate_task(spec: dict) -> dict:
    """Explain with verification over the task's files (runs on a worker)."""
    from ..evaluate.explain import explain

    try:
        table = open_table(spec["url"], spec["table"])
        ex = explain(table, spec["where"], snapshot_id=spec["snapshot_id"], verify=True,
                     paths=spec["paths"])
        return {"snapshot": ex.snapshot_id, "files": [f.to_json(True) for f in ex.files],
                "violations": ex.violations}
    except Exception as exc:  # noqa: BLE001 - a task reports, the job goes on
        return _task_error(spec, exc)


def audit_task(spec: dict) -> dict:
    """Audit the task's files (runs on a worker)."""
    from ..evaluate.audit import ERROR, Finding, audit_file

    try:
        table = open_table(spec["url"], spec["table"])
        plan = table.plan(spec["snapshot_id"])
        by_path = {lf.path: lf for lf in plan.files}
        cache: dict = {}
        findings, files = [], []
        for path in spec["paths"]:
            lf = by_path.get(path)
            if lf is None:
                found = [Finding("plan", ERROR, path, "data file is not live in the task's snapshot")]
            else:
                try:
                    found = audit_file(table, lf, plan, cache)
                except Exception as exc:  # noqa: BLE001 - one file's failure is a finding
                    found = [Finding("audit", ERROR, path, f"{type(exc).__name__}: {exc}")]
            findings.extend(f.to_dict() for f in found)
            files.append({"path": path, "findings": len(found),
                          "errors": sum(1 for f in found if f.severity == ERROR)})
        return {"findings": findings, "files": files}
    except Exception as exc:  # noqa: BLE001
        return _task_error(spec, exc)


def what_if_task(spec: dict) -> dict:
    """Build the hypothetical index of each file of the task and test every predicate on it."""
    try:
        table = open_table(spec["url"], spec["table"])
        return {"files": [_what_if_file(table, spec, path) for path in spec["paths"]]}
    except Exception as exc:  # noqa: BLE001
        return _task_error(spec, exc)


def _what_if_file(table, spec: dict, path: str) -> dict:
    from ..evaluate.explain import _field_map, and_all, conjuncts, devolved, explain, read_path_result
    from ..evaluate.file_index import blob_predicate
    from ..evaluate.metrics import file_schema
    from ..io import BytesSource
    from ..predicate import parse_where
    from ..warehouse.data import evolve_columns, read_raw
    from ..warehouse.values import to_internal
    from ..write.datafile import build_file_index

    plan = table.plan(spec["snapshot_id"])
    lf = next((f for f in plan.files if f.path == path), None)
    out: dict[str, Any] = {"path": path, "row_count": None, "size": 0, "predicates": []}
    if lf is None:
        out["error"] = "data file is not live in the task's snapshot"
        return out
    column, index_type = spec["column"], spec["index_type"]
    schema = table.schema()
    fs = file_schema(table, lf)
    fmap = _field_map(schema, fs)
    try:
        raw = read_raw(table.storage, lf.path, lf.file.file_format)
        fcol = fmap.get(column)
        dtype = schema.field(column).type
        if fcol:
            cols = evolve_columns(raw, fs, fs, [fcol], lf.partition_spec, lf.file.write_cols)
            values = to_internal(cols.column(fcol), fs.field(fcol).type)
            dtype = fs.field(fcol).type
        else:
            values = [None] * raw.num_rows
        blob = build_file_index(values, dtype, index_type, dict(spec["options"]))
    except IndexCoreError as exc:
        out["error"] = str(exc)
        return out
    out["row_count"] = len(values)
    out["size"] = len(blob)
    scratch = os.path.join(spec["scratch_dir"], posixpath.basename(lf.path) + f".{column}.{index_type}.index")
    with open(scratch, "wb") as fh:
        fh.write(blob)
    out["scratch_file"] = scratch
    deleted = None
    if lf.deletion_vector is not None:
        try:
            dv = table.deletion_vector(lf)
            deleted = None if dv is None else dv.positions
        except IndexCoreError:
            deleted = None
    alive = len(values) - (len(deleted) if deleted is not None else 0)
    for sql in spec["where"]:
        current = explain(table, sql, snapshot_id=spec["snapshot_id"], paths=[path]).files[0]
        pred = parse_where(sql, schema.row_type())
        pushed = and_all(devolved(conjuncts(pred), fmap))
        hyp_rows = alive
        pruned = False
        if pushed is not None:
            name = fmap.get(column) or column
            evaluator = blob_predicate(index_type, dtype, BytesSource(blob), dict(spec["options"]), column=name)
            decision = read_path_result(evaluator.evaluate(pushed), len(values), deleted, lf.bitmap64)
            pruned = not decision.remain()
            bitmap = getattr(decision, "bitmap", None)
            hyp_rows = 0 if pruned else (len(bitmap) if bitmap is not None else alive)
        cur_pruned = current.skipped_by == "index"
        cur_rows = current.rows_after_dv if current.read else 0
        stats_pruned = current.skipped_by in ("partition", "level", "stats")
        out["predicates"].append({
            "where": sql, "stats_pruned": stats_pruned, "current_pruned": cur_pruned,
            "current_rows": cur_rows, "hypothetical_pruned": pruned and not stats_pruned,
            "hypothetical_rows": 0 if stats_pruned else hyp_rows,
        })
    return out


# ---------------------------------------------------------------------------------------
# Driver side


def _session(master: str | None):
    from .session import get_session

    return get_session(master)


def _resolve(warehouse_url: str, table_name: str, snapshot_id: int | None):
    from .. import open_warehouse

    table = open_warehouse(warehouse_url).table(table_name)
    plan = table.plan(snapshot_id)
    return table, plan


def file_groups(files: Sequence, max_tasks: int) -> list[list[str]]:
    """Paths of the files, one partition/bucket per group, packed into at most ``max_tasks``
    groups of similar total size (largest buckets first)."""
    buckets: dict[tuple, list] = {}
    for lf in files:
        buckets.setdefault((repr(lf.partition), lf.bucket), []).append(lf)
    ordered = sorted(buckets.values(), key=lambda g: -sum(lf.file.file_size for lf in g))
    n = max(1, min(max_tasks, len(ordered)))
    groups: list[list[str]] = [[] for _ in range(n)]
    sizes = [0] * n
    for group in ordered:
        i = sizes.index(min(sizes))
        groups[i].extend(lf.path for lf in group)
        sizes[i] += sum(lf.file.file_size for lf in group) + 1
    return [g for g in groups if g]


def run_tasks(spark, fn: Callable[[dict], dict], specs: list[dict], description: str,
              progress: Progress | None = None, cancel: threading.Event | None = None) -> list[dict]:
    """Run ``fn`` over ``specs``, one Spark task each; results in ``specs`` order."""
    if not specs:
        return []
    sc = spark_context(spark)
    with JobWatch(spark, description, progress, cancel, expected_tasks=len(specs)) as watch:
        try:
            if sc is not None:
                results = sc.parallelize(list(enumerate(specs)), len(specs)) \
                    .map(lambda item: (item[0], fn(item[1]))).collect()
            else:
                results = _run_connect(spark, fn, specs)
        except Exception as exc:
            if watch.cancelled or (cancel is not None and cancel.is_set()):
                raise IndexCoreError(f"{description}: cancelled") from None
            raise IndexCoreError(f"{description}: Spark job failed: {exc}") from exc
    if watch.cancelled:
        raise IndexCoreError(f"{description}: cancelled")
    return [r for _, r in sorted(results, key=lambda t: t[0])]


def _run_connect(spark, fn: Callable[[dict], dict], specs: list[dict]) -> list[tuple[int, dict]]:
    """Spark Connect has no RDDs: a DataFrame of JSON specs through ``mapInPandas``."""
    import json

    import pandas as pd

    def run(batches):
        for batch in batches:
            yield pd.DataFrame({"i": batch["i"], "result": [json.dumps(fn(json.loads(s)), default=str)
                                                            for s in batch["spec"]]})

    df = spark.createDataFrame([(i, json.dumps(s)) for i, s in enumerate(specs)], "i int, spec string")
    rows = df.repartition(len(specs)).mapInPandas(run, "i int, result string").collect()
    return [(r["i"], json.loads(r["result"])) for r in rows]


def _max_tasks(spark) -> int:
    sc = spark_context(spark)
    cores = sc.defaultParallelism if sc is not None else os.cpu_count() or 2
    return max(1, cores * TASKS_PER_CORE)


def _explain_order(files: Sequence) -> list[str]:
    return [lf.path for lf in sorted(files, key=lambda lf: (str(lf.partition), lf.bucket, -lf.file.level, lf.path))]


def funnel(files: list[dict], verified: bool = True) -> dict[str, dict[str, int]]:
    """The pruning funnel of explain, from per-file JSON records."""
    def stage(keep, rows) -> dict[str, int]:
        kept = [f for f in files if keep(f)]
        return {"files": len(kept), "rows": sum(rows(f) for f in kept)}

    def skipped(f: dict) -> str | None:
        return f["skipped_by"]

    def count(f: dict) -> int:
        return f["row_count"]

    out = {
        "all": stage(lambda f: True, count),
        "partition": stage(lambda f: f["partition_decision"] == "REMAIN", count),
        "level": stage(lambda f: f["partition_decision"] == "REMAIN" and f["level_decision"] == "REMAIN", count),
        "stats": stage(lambda f: skipped(f) not in ("partition", "level", "stats"), count),
        "index": stage(lambda f: skipped(f) is None, count),
        "read": stage(lambda f: skipped(f) is None, lambda f: f["rows_after_dv"]),
    }
    if verified:
        out["matching"] = stage(lambda f: bool(f.get("matching_rows")), lambda f: f.get("matching_rows") or 0)
    return out


def _false_positives(files: list[dict], pred_columns: set[str]) -> dict[str, dict[str, int]]:
    """Files and rows an index kept that hold no matching row, per index type of the
    predicate's columns (``none``: no index on them)."""
    out: dict[str, dict[str, int]] = {}
    for f in files:
        if f["skipped_by"] is not None or f.get("matching_rows") is None:
            continue
        kinds = sorted({t for c, ts in (f.get("index_types") or {}).items() if c in pred_columns for t in ts})
        extra = max(f["rows_after_dv"] - f["matching_rows"], 0)
        for kind in kinds or ["none"]:
            slot = out.setdefault(kind, {"files_kept": 0, "false_positive_files": 0, "false_positive_rows": 0})
            slot["files_kept"] += 1
            slot["false_positive_rows"] += extra
            if f["matching_rows"] == 0:
                slot["false_positive_files"] += 1
    return out


def _leaf_values(predicate, columns: list[str]) -> list:
    from ..evaluate.explain import leaves

    out = []
    for leaf in leaves(predicate):
        if leaf.field in columns:
            out.append({"column": leaf.field, "op": leaf.op, "literals": [_json(v) for v in leaf.literals]})
    return out


def _json(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, bytes):
        return value.hex()
    return str(value)


def evaluate(warehouse_url: str, table: str, where_sql: str, master: str | None = None,
             snapshot_id: int | None = None, progress: Progress | None = None,
             cancel: threading.Event | None = None, spark=None) -> dict:
    """Explain ``where_sql`` with verification over every live file, in Spark tasks.

    Returns explain's JSON (``files``, ``funnel``, ``violations``, ``problems``) plus totals:
    ``matching_rows``, ``rows_after_dv``, ``bytes_read``, ``false_positives`` per index type,
    and ``task_errors`` for tasks that failed as a whole.
    """
    from ..evaluate.explain import explain

    tbl, plan = _resolve(warehouse_url, table, snapshot_id)
    # the driver parses and checks the predicate (a bad one fails here, before Spark starts)
    probe = explain(tbl, where_sql, snapshot_id=snapshot_id, paths=[])
    spark = spark or _session(master)
    groups = file_groups(plan.files, _max_tasks(spark))
    specs = [{"url": warehouse_url, "table": table, "where": where_sql, "snapshot_id": snapshot_id,
              "paths": g} for g in groups]
    results = run_tasks(spark, evaluate_task, specs, f"indexcore evaluate {table}", progress, cancel)
    by_path: dict[str, dict] = {}
    violations: list[dict] = []
    task_errors = []
    expected = plan.snapshot.id if plan.snapshot else None
    for r in results:
        if "error" in r:
            task_errors.append(r)
            continue
        if r["snapshot"] != expected:
            task_errors.append({"error": f"task saw snapshot {r['snapshot']}, the driver {expected}",
                                "paths": [f["path"] for f in r["files"]]})
        for f in r["files"]:
            by_path[f["path"]] = f
        violations.extend(r["violations"])
    files = [by_path[p] for p in _explain_order(plan.files) if p in by_path]
    order = {p: i for i, p in enumerate(_explain_order(plan.files))}
    violations.sort(key=lambda v: order.get(v["path"], len(order)))
    for v in violations:
        cols = [c.strip() for c in (v.get("column") or "").split(",") if c.strip()]
        v["values"] = _leaf_values(probe.predicate, cols)
    problems = [p.to_dict() for p in plan.problems]
    for f in files:
        problems.extend(f["problems"])
    read = [f for f in files if f["skipped_by"] is None]
    return {
        "table": table, "snapshot": expected, "where": probe.sql,
        "files": files, "funnel": funnel(files),
        "matching_rows": sum(f.get("matching_rows") or 0 for f in files),
        "rows_after_dv": sum(f["rows_after_dv"] for f in read),
        "files_read": len(read),
        "bytes_read": sum(f["bytes_read"] for f in files),
        "false_positives": _false_positives(files, set(probe.predicate.fields())),
        "violations": violations, "problems": problems, "task_errors": task_errors,
    }


def audit(warehouse_url: str, table: str, master: str | None = None, snapshot_id: int | None = None,
          progress: Progress | None = None, cancel: threading.Event | None = None, spark=None) -> dict:
    """Audit every index of every live file in Spark tasks, plus the table-level checks.

    Returns ``findings`` (every non-OK finding), ``health`` (OK/ERROR/WARNING/NOT_CHECKED
    counts per table, partition and bucket, as lists of records), ``files`` and ``task_errors``.
    """
    from ..evaluate.audit import ERROR, OK, Finding, audit_table, health_frames

    tbl, plan = _resolve(warehouse_url, table, snapshot_id)
    sid = plan.snapshot.id if plan.snapshot else None
    spark = spark or _session(master)
    groups = file_groups(plan.files, _max_tasks(spark))
    specs = [{"url": warehouse_url, "table": table, "snapshot_id": sid, "paths": g} for g in groups]
    results = run_tasks(spark, audit_task, specs, f"indexcore audit {table}", progress, cancel)
    findings = [Finding.from_dict(d) for r in results for d in r.get("findings", ())]
    task_errors = [r for r in results if "error" in r]
    for r in task_errors:
        findings.extend(Finding("audit", ERROR, p, r["error"]) for p in r["paths"])
    findings.extend(audit_table(tbl, plan))
    health = {k: v.to_dict("records") for k, v in health_frames(findings).items()}
    return {
        "table": table, "snapshot": sid, "files_audited": sum(len(r.get("files", ())) for r in results),
        "checks_passed": sum(1 for f in findings if f.severity == OK),
        "findings": [f.to_dict() for f in findings if f.severity != OK],
        "health": health,
        "task_errors": task_errors,
    }


def what_if(warehouse_url: str, table: str, column: str, index_type: str, options: dict[str, str] | None,
            where_sqls: Sequence[str], master: str | None = None, scratch_dir: str | None = None,
            snapshot_id: int | None = None, progress: Progress | None = None,
            cancel: threading.Event | None = None, spark=None) -> dict:
    """Build a hypothetical ``index_type`` index on ``column`` for every live file (into
    ``scratch_dir``, a new temporary directory by default; never the warehouse) and report its
    total size and, per predicate, the files and rows it would prune against the current indexes.
    """
    from ..errors import PredicateError
    from ..formats import FILE_INDEX_TYPES
    from ..predicate import parse_where

    if index_type not in FILE_INDEX_TYPES:
        raise IndexCoreError(f"unknown file index type {index_type!r} (one of {', '.join(FILE_INDEX_TYPES)})")
    tbl, plan = _resolve(warehouse_url, table, snapshot_id)
    schema = tbl.schema()
    if column not in schema.field_names:
        raise PredicateError(f"unknown column {column!r} in table {table}")
    for sql in where_sqls:
        parse_where(sql, schema.row_type())
    scratch = scratch_dir or tempfile.mkdtemp(prefix="indexcore-whatif-")
    _check_scratch(scratch, warehouse_url)
    os.makedirs(scratch, exist_ok=True)
    spark = spark or _session(master)
    groups = file_groups(plan.files, _max_tasks(spark))
    specs = [{"url": warehouse_url, "table": table, "snapshot_id": snapshot_id, "paths": g,
              "column": column, "index_type": index_type, "options": dict(options or {}),
              "where": list(where_sqls), "scratch_dir": scratch} for g in groups]
    results = run_tasks(spark, what_if_task, specs, f"indexcore what-if {table}", progress, cancel)
    files = [f for r in results for f in r.get("files", ())]
    summary = []
    for i, sql in enumerate(where_sqls):
        rows = [f["predicates"][i] for f in files if len(f["predicates"]) > i]
        summary.append({
            "where": sql,
            "files": len(rows),
            "stats_pruned_files": sum(r["stats_pruned"] for r in rows),
            "current_pruned_files": sum(r["current_pruned"] for r in rows),
            "hypothetical_pruned_files": sum(r["hypothetical_pruned"] for r in rows),
            "current_rows": sum(r["current_rows"] for r in rows),
            "hypothetical_rows": sum(r["hypothetical_rows"] for r in rows),
        })
    return {
        "table": table, "column": column, "index_type": index_type, "options": dict(options or {}),
        "scratch_dir": scratch, "files": len(files),
        "total_size": sum(f["size"] for f in files),
        "predicates": summary,
        "file_results": files,
        "task_errors": [r for r in results if "error" in r],
    }


def _check_scratch(scratch: str, warehouse_url: str) -> None:
    from fsspec.core import url_to_fs

    try:
        _, root = url_to_fs(warehouse_url)
    except (ValueError, ImportError, OSError):
        return
    a, b = os.path.realpath(scratch), os.path.realpath(root)
    if a == b or a.startswith(b.rstrip("/") + "/"):
        raise IndexCoreError(f"scratch directory {scratch} is inside the warehouse; refusing to write there")
