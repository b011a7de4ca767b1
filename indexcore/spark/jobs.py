"""Full-table work on Spark: evaluate a predicate, audit indexes, try a hypothetical index.

The driver plans the snapshot once and ships each task its files as picklable
:class:`~indexcore.warehouse.model.LiveFile` records (:func:`task_file`: path, row count,
schema id, stats decoded, index location or embedded bytes, deletion-vector range, partition
and bucket). A task opens the warehouse (cached per Python worker; reopened when the table
has a schema the cache lacks) only to read files: it never plans. The files of one
primary-key bucket go to the same task of :func:`evaluate` (stats pruning is decided per bucket);
everything else is spread freely over ``TASKS_PER_CORE`` tasks per core.

* :func:`evaluate` runs explain's per-file decision (:func:`indexcore.scan.explain.decide_files`,
  verified) on each task's files; the driver assembles them with explain's own
  :func:`~indexcore.scan.explain.explanation`, so files and funnel equal the single-process explain.
* :func:`audit` runs :func:`indexcore.analysis.audit.audit_file` per file in tasks and
  :func:`~indexcore.analysis.audit.audit_table` on the driver.
* :func:`what_if` builds the hypothetical index per data file with
  :func:`indexcore.analysis.whatif.build_hypothetical_index`, keeps its bytes in a scratch
  directory (never the warehouse) and compares pruning with
  :func:`~indexcore.analysis.whatif.evaluate_hypothetical`, as the app and the CLI do.

A Spark worker needs nothing but ``pip install`` of this project.
"""

from __future__ import annotations

import dataclasses
import json
import os
import posixpath
import tempfile
import threading
import traceback
from collections.abc import Callable, Sequence
from typing import Any

from indexcore.cache import LRU
from indexcore.errors import IndexCoreError
from indexcore.spark.progress import JobWatch, spark_context

Progress = Callable[[int, int, str], None]
TASKS_PER_CORE = 2
# tables a Spark worker process keeps open across its tasks: per process by nature (a worker has
# no object that outlives a task), bounded
_TABLES = LRU(8)


class JobCancelledError(IndexCoreError):
    """A Spark job stopped because its ``cancel`` event was set."""


# ---------------------------------------------------------------------------------------
# Task records


class UnreadableStats:
    """Stands in for stats that did not decode on the driver: raises the same error when read,
    where the single-process engine would."""

    def __init__(self, exc: IndexCoreError):
        self.message, self.file, self.structure = exc.message, exc.file, exc.structure

    def _fail(self):
        raise IndexCoreError(self.message, file=self.file, structure=self.structure)

    min_values = property(lambda self: self._fail())
    max_values = property(lambda self: self._fail())
    null_counts = property(lambda self: self._fail())


def _plain_stats(stats):
    from indexcore.warehouse.model import SimpleStats

    try:
        return SimpleStats(tuple(stats.min_values), tuple(stats.max_values), tuple(stats.null_counts))
    except IndexCoreError as exc:
        return UnreadableStats(exc)


def _plain_key(key) -> tuple:
    try:
        return tuple(key)
    except IndexCoreError:
        return ()


def task_file(live_file, stats: bool = True):
    """A picklable copy of a planned live file for a Spark task: its lazily decoded stats and
    keys become plain tuples (``stats=False`` drops them, for jobs that read no stats)."""
    from indexcore.warehouse.model import SimpleStats

    meta = live_file.file
    if stats:
        meta = dataclasses.replace(meta, key_stats=_plain_stats(meta.key_stats),
                                   value_stats=_plain_stats(meta.value_stats),
                                   min_key=_plain_key(meta.min_key), max_key=_plain_key(meta.max_key))
    else:
        empty = SimpleStats.empty()
        meta = dataclasses.replace(meta, key_stats=empty, value_stats=empty, min_key=(), max_key=())
    return dataclasses.replace(live_file, file=meta)


# ---------------------------------------------------------------------------------------
# Worker side


def open_table(url: str, name: str, schema_ids: Sequence[int] = (), storage_options: dict | None = None):
    """The table ``name`` of the warehouse at ``url``, from a small per-process cache.

    ``schema_ids`` are schemas the task reads, the table's latest first: a cached table whose
    latest schema differs, or that lacks one of them, is opened afresh (schemas are immutable
    per id, so nothing else can go stale). Nothing is planned here. ``storage_options`` are
    the driver's fsspec options (endpoint, credentials...), shipped in the task spec.
    """
    from indexcore import open_warehouse

    key = (url, name, tuple(sorted((storage_options or {}).items())))
    table = _TABLES.get(key)
    if table is not None and schema_ids:
        known = {s.id for s in table.schemas()}
        if not known or max(known) != schema_ids[0] or not set(schema_ids) <= known:
            table = None
    if table is None:
        table = open_warehouse(url, storage_options=storage_options).table(name)
        _TABLES.put(key, table)
    return table


def _task_error(spec: dict, exc: BaseException) -> dict:
    return {"error": f"{type(exc).__name__}: {exc}", "paths": [lf.path for lf in spec["files"]],
            "trace": traceback.format_exc(limit=5)}


def _spec_table(spec: dict):
    return open_table(spec["url"], spec["table"], spec["schema_ids"], spec.get("storage_options"))


def evaluate_task(spec: dict) -> dict:
    """Explain's per-file decisions with verification over the task's files (runs on a worker)."""
    from indexcore.scan.explain import decide_files

    try:
        table = _spec_table(spec)
        return {"decided": decide_files(table, spec["predicate"], spec["files"], table.schema(spec["schema_id"]),
                                        verify=True)}
    except Exception as exc:  # noqa: BLE001 - a task reports, the job goes on
        return _task_error(spec, exc)


def audit_task(spec: dict) -> dict:
    """Audit the task's files (runs on a worker)."""
    from indexcore.analysis.audit import ERROR, Check, Finding, audit_file
    from indexcore.warehouse.table_planning import Plan

    try:
        table = _spec_table(spec)
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
        return _task_error(spec, exc)


def what_if_task(spec: dict) -> dict:
    """Build the hypothetical index of the task's files and compare pruning per predicate."""
    from indexcore.analysis.whatif import build_hypothetical_index, evaluate_hypothetical

    try:
        table = _spec_table(spec)
        column, index_type = spec["column"], spec["index_type"]
        hyp = build_hypothetical_index(table, column, index_type, spec["options"],
                                       snapshot_id=spec["snapshot_id"], files=spec["files"])
        out: dict[str, dict] = {}
        for built in hyp.files:
            scratch = None
            if built.blob is not None:
                scratch = os.path.join(spec["scratch_dir"], f"{posixpath.basename(built.path)}.{column}."
                                                            f"{index_type}.index")
                with open(scratch, "wb") as fh:
                    fh.write(built.blob)
            out[built.path] = {"path": built.path, "row_count": built.row_count, "size": built.size,
                               "scratch_file": scratch, "predicates": []}
        for p in hyp.problems:
            out[p.path] = {"path": p.path, "row_count": None, "size": 0, "predicates": [],
                           "error": f"{p.structure}: {p.reason}"}
        for sql in spec["where"]:
            result = evaluate_hypothetical(hyp, sql)
            for wf in result.files:
                out[wf.path]["predicates"].append(_what_if_row(sql, wf))
        return {"files": [out[lf.path] for lf in spec["files"] if lf.path in out]}
    except Exception as exc:  # noqa: BLE001
        return _task_error(spec, exc)


def _what_if_row(sql: str, wf) -> dict:
    """One file under one predicate: pruned before the index, by today's indexes, by the new one."""
    from indexcore.scan.explain import Stage

    e = wf.existing
    stats_pruned = e.pruned_before_index
    hyp = wf.hypothetical_decision
    return {"where": sql, "stats_pruned": stats_pruned, "current_pruned": e.skipped_by is Stage.INDEX,
            "current_rows": wf.rows_existing,
            "hypothetical_pruned": not stats_pruned and hyp is not None and not hyp.remain(),
            "hypothetical_rows": wf.rows_hypothetical, "combined_rows": wf.rows_combined,
            "file_size": wf.file_size, "current_bytes": wf.file_size if wf.rows_existing else 0,
            "hypothetical_bytes": wf.file_size if wf.rows_hypothetical else 0,
            "combined_bytes": wf.file_size if wf.rows_combined else 0,
            "current_index_bytes": e.bytes_read, "hypothetical_index_bytes": wf.index_bytes_hypothetical}


# ---------------------------------------------------------------------------------------
# Driver side


def _session(master: str | None):
    from indexcore.spark.session import get_session

    return get_session(master)


def _resolve(warehouse_url: str, table_name: str, snapshot_id: int | None, storage_options: dict | None = None):
    from indexcore import open_warehouse

    table = open_warehouse(warehouse_url, storage_options=storage_options).table(table_name)
    plan = table.plan(snapshot_id)
    return table, plan


def _schema_ids(table, files: Sequence, *more: int) -> list[int]:
    """The table's latest schema id first, then every other schema the files were written with."""
    latest = table.schema().id
    ids = {lf.file.schema_id for lf in files} | set(more)
    known = {s.id for s in table.schemas()}
    return [latest, *sorted(i for i in ids if i in known and i != latest)]


def file_groups(files: Sequence, max_tasks: int, whole_buckets: bool = True) -> list[list]:
    """The files packed into at most ``max_tasks`` groups of similar total size (largest units
    first). With ``whole_buckets`` a partition/bucket is one unit, never split across groups."""
    units: dict[tuple, list] = {}
    for lf in files:
        key = (repr(lf.partition), lf.bucket) if whole_buckets else (lf.path,)
        units.setdefault(key, []).append(lf)
    ordered = sorted(units.values(), key=lambda g: -sum(lf.file.file_size for lf in g))
    n = max(1, min(max_tasks, len(ordered)))
    groups: list[list] = [[] for _ in range(n)]
    sizes = [0] * n
    for group in ordered:
        i = sizes.index(min(sizes))
        groups[i].extend(group)
        sizes[i] += sum(lf.file.file_size for lf in group) + 1
    return [g for g in groups if g]


def run_tasks(spark, fn: Callable[[dict], dict], specs: list[dict], description: str,
              progress: Progress | None = None, cancel: threading.Event | None = None) -> list[dict]:
    """Run ``fn`` over ``specs``, one Spark task each; results in ``specs`` order.

    Raises :class:`JobCancelledError` when ``cancel`` is set before the job ends.
    """
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
                raise JobCancelledError(f"{description}: cancelled") from None
            raise IndexCoreError(f"{description}: Spark job failed: {exc}") from exc
    if watch.cancelled or (cancel is not None and cancel.is_set()):  # set before the watcher saw the job
        raise JobCancelledError(f"{description}: cancelled")
    return [r for _, r in sorted(results, key=lambda t: t[0])]


def _run_connect(spark, fn: Callable[[dict], dict], specs: list[dict]) -> list[tuple[int, dict]]:
    """Spark Connect has no RDDs: a DataFrame of pickled specs through ``mapInPandas``.

    Results come back as JSON text (:func:`plain_dumps`), never as pickles: unpickling bytes
    from a remote server would let that server run code here.
    """
    import pickle

    import pandas as pd

    def run(batches):
        for batch in batches:
            yield pd.DataFrame({"i": batch["i"], "result": [plain_dumps(fn(pickle.loads(s))) for s in batch["spec"]]})

    df = spark.createDataFrame([(i, pickle.dumps(s)) for i, s in enumerate(specs)], "i int, spec binary")
    rows = df.repartition(len(specs)).mapInPandas(run, "i int, result string").collect()
    return [(int(r["i"]), plain_loads(r["result"])) for r in rows]


_PLAIN_TAG = "__indexcore__"


def plain_dumps(value: Any) -> str:
    """A task result as JSON; tuples, bytes, decimals, dates and sets keep their type."""
    import base64
    import datetime as dt
    import decimal
    from enum import Enum

    from indexcore.formats.base import REMAIN, SKIP, BitmapResult

    def tag(v: Any) -> Any:
        if isinstance(v, Enum):
            return {_PLAIN_TAG: "enum", "type": _type_name(v), "value": v.value}
        if v is REMAIN or v is SKIP:
            return {_PLAIN_TAG: "result", "name": v.name}
        if isinstance(v, BitmapResult):
            return {_PLAIN_TAG: "bitmap", "b64": base64.b64encode(v.bitmap.serialize()).decode()}
        if dataclasses.is_dataclass(v) and not isinstance(v, type):
            return {_PLAIN_TAG: "dataclass", "type": _type_name(v),
                    "fields": {f.name: tag(getattr(v, f.name)) for f in dataclasses.fields(v)}}
        if isinstance(v, dict):
            if all(isinstance(k, str) for k in v):
                return {k: tag(x) for k, x in v.items()}
            return {_PLAIN_TAG: "dict", "items": [[tag(k), tag(x)] for k, x in v.items()]}
        if isinstance(v, list):
            return [tag(x) for x in v]
        if isinstance(v, tuple):
            return {_PLAIN_TAG: "tuple", "items": [tag(x) for x in v]}
        if isinstance(v, set | frozenset):
            return {_PLAIN_TAG: "set", "items": [tag(x) for x in v]}
        if isinstance(v, bytes | bytearray):
            return {_PLAIN_TAG: "bytes", "b64": base64.b64encode(bytes(v)).decode()}
        if isinstance(v, decimal.Decimal):
            return {_PLAIN_TAG: "decimal", "text": str(v)}
        if isinstance(v, dt.datetime | dt.date | dt.time):
            return {_PLAIN_TAG: type(v).__name__, "text": v.isoformat()}
        if isinstance(v, float) and (v != v or v in (float("inf"), float("-inf"))):
            return {_PLAIN_TAG: "float", "text": repr(v)}
        if v is None or isinstance(v, str | int | float | bool):
            return v
        raise TypeError(f"a Spark task result holds a {type(v).__name__}, not plain data")

    return json.dumps(tag(value), allow_nan=False)


def _type_name(value: Any) -> str:
    cls = type(value)
    return f"{cls.__module__}:{cls.__qualname__}"


def _our_type(name: str) -> type:
    """A class named in a task result: only indexcore's own, looked up, never imported by path."""
    import importlib

    module, _, qualname = name.partition(":")
    if not module.startswith("indexcore.") or not qualname.isidentifier():
        raise TypeError(f"{name!r} is not an indexcore type")
    cls = getattr(importlib.import_module(module), qualname, None)
    if not isinstance(cls, type):
        raise TypeError(f"{name!r} is not a class")
    return cls


def plain_loads(text: str) -> Any:
    """The inverse of :func:`plain_dumps`; anything else in the text is an error, not code."""
    import base64
    import datetime as dt
    import decimal
    from enum import Enum

    from pyroaring import BitMap

    from indexcore.formats.base import REMAIN, SKIP, BitmapResult

    def dataclass_of(o: dict) -> Any:
        cls = _our_type(o["type"])
        if not dataclasses.is_dataclass(cls):
            raise TypeError(f"{o['type']} is not a dataclass")
        return cls(**{k: untag(x) for k, x in o["fields"].items()})

    def enum_of(o: dict) -> Any:
        cls = _our_type(o["type"])
        if not issubclass(cls, Enum):
            raise TypeError(f"{o['type']} is not an enum")
        return cls(o["value"])

    kinds = {"dataclass": dataclass_of, "enum": enum_of,
             "result": lambda o: {"REMAIN": REMAIN, "SKIP": SKIP}[o["name"]],
             "bitmap": lambda o: BitmapResult(BitMap.deserialize(base64.b64decode(o["b64"]))),
             "tuple": lambda o: tuple(untag(x) for x in o["items"]),
             "set": lambda o: {untag(x) for x in o["items"]},
             "dict": lambda o: {untag(k): untag(x) for k, x in o["items"]},
             "bytes": lambda o: base64.b64decode(o["b64"]),
             "decimal": lambda o: decimal.Decimal(o["text"]),
             "datetime": lambda o: dt.datetime.fromisoformat(o["text"]),
             "date": lambda o: dt.date.fromisoformat(o["text"]),
             "time": lambda o: dt.time.fromisoformat(o["text"]),
             "float": lambda o: float(o["text"])}

    def untag(v: Any) -> Any:
        if isinstance(v, list):
            return [untag(x) for x in v]
        if isinstance(v, dict):
            kind = v.get(_PLAIN_TAG)
            if kind is None:
                return {k: untag(x) for k, x in v.items()}
            return kinds[kind](v)
        return v

    try:
        return untag(json.loads(text))
    except (ValueError, KeyError, TypeError) as exc:
        raise IndexCoreError(f"a Spark task returned a result that is not plain data: {exc}") from exc


def _max_tasks(spark) -> int:
    sc = spark_context(spark)
    cores = sc.defaultParallelism if sc is not None else os.cpu_count() or 2
    return max(1, cores * TASKS_PER_CORE)


NO_USABLE_INDEX = "no usable index"


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
    from indexcore.expr import leaves

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
    from indexcore.scan.explain import bind_predicate, explanation

    tbl, plan = _resolve(warehouse_url, table, snapshot_id, storage_options)
    schema = tbl.read_schema(snapshot_id, plan.snapshot)
    # the driver binds the predicate (a bad one fails here, before Spark starts)
    predicate, sql = bind_predicate(tbl, schema, where_sql)
    spark = spark or _session(master)
    # primary-key tables decide stats per bucket: keep a bucket in one task
    groups = file_groups(plan.files, _max_tasks(spark), whole_buckets=bool(schema.primary_keys))
    base = {"url": warehouse_url, "storage_options": tbl.storage.storage_options, "table": table,
            "predicate": predicate, "schema_id": schema.id}
    specs = [{**base, "files": [task_file(lf) for lf in g],
              "schema_ids": _schema_ids(tbl, g, schema.id)} for g in groups]
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


def audit(warehouse_url: str, table: str, master: str | None = None, snapshot_id: int | None = None,
          progress: Progress | None = None, cancel: threading.Event | None = None, spark=None,
          storage_options: dict | None = None) -> dict:
    """Audit every index of every live file in Spark tasks, plus the table-level checks.

    Returns ``findings`` (every non-OK finding), ``health`` (OK/ERROR/WARNING/NOT_CHECKED
    counts per table, partition and bucket, as lists of records), ``files`` and ``task_errors``.
    """
    from indexcore.analysis.audit import ERROR, OK, Check, Finding, audit_table, health_frames

    tbl, plan = _resolve(warehouse_url, table, snapshot_id, storage_options)
    sid = plan.snapshot.id if plan.snapshot else None
    spark = spark or _session(master)
    groups = file_groups(plan.files, _max_tasks(spark), whole_buckets=False)
    specs = []
    for g in groups:
        keys = {(lf.partition, lf.bucket) for lf in g}
        specs.append({"url": warehouse_url, "storage_options": tbl.storage.storage_options,
                      "table": table, "schema_ids": _schema_ids(tbl, g),
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


def what_if_measure(warehouse_url: str, table: str, master: str | None = None,
                    snapshot_id: int | None = None, storage_options: dict | None = None):
    """The advisor's ``measure`` callback (:data:`indexcore.analysis.advise.Measure`): each
    candidate built and measured by :func:`what_if` on every live file of ``table``."""

    def measure(column: str, index_type: str, options: dict, wheres: list[str]) -> dict:
        return what_if(warehouse_url, table, column, index_type, options, wheres, master=master,
                       snapshot_id=snapshot_id, storage_options=storage_options)

    return measure


def what_if(warehouse_url: str, table: str, column: str, index_type: str, options: dict[str, str] | None,
            where_sqls: Sequence[str], master: str | None = None, scratch_dir: str | None = None,
            snapshot_id: int | None = None, progress: Progress | None = None,
            cancel: threading.Event | None = None, spark=None, storage_options: dict | None = None) -> dict:
    """Build a hypothetical ``index_type`` index on ``column`` for every live file (into
    ``scratch_dir``, a new temporary directory by default; never the warehouse) and report its
    total size and, per predicate, the files and rows it would prune against the current indexes.

    Per file and predicate, ``combined_rows`` is what the new index and today's ones keep together.
    """
    from indexcore.errors import PredicateError
    from indexcore.expr import parse_where
    from indexcore.formats import FILE_INDEX_TYPES, check_writer_options

    if index_type not in FILE_INDEX_TYPES:
        raise IndexCoreError(f"unknown file index type {index_type!r} (one of {', '.join(FILE_INDEX_TYPES)})")
    tbl, plan = _resolve(warehouse_url, table, snapshot_id, storage_options)
    # tasks plan the driver's snapshot (not whatever is latest when they run), read as whatif does
    sid = plan.snapshot.id if plan.snapshot else None
    schema = tbl.read_schema(sid, plan.snapshot)
    if column not in schema.field_names:
        raise PredicateError(f"unknown column {column!r} in table {table}")
    options = {k: str(v) for k, v in (options or {}).items()}
    check_writer_options(index_type, options, schema.field(column).type)  # bad options fail before Spark starts
    for sql in where_sqls:
        parse_where(sql, schema.row_type())
    if scratch_dir is None:  # our own scratch directory: gone when the job ends or fails
        with tempfile.TemporaryDirectory(prefix="indexcore-whatif-") as scratch:
            out = what_if(warehouse_url, table, column, index_type, options, where_sqls, master, scratch,
                          snapshot_id, progress, cancel, spark)
        return {**out, "scratch_dir": None, "file_results": [{**f, "scratch_file": None}
                                                             for f in out["file_results"]]}
    scratch = scratch_dir
    _check_scratch(scratch, warehouse_url)
    os.makedirs(scratch, exist_ok=True)
    spark = spark or _session(master)
    groups = file_groups(plan.files, _max_tasks(spark), whole_buckets=False)
    specs = [{"url": warehouse_url, "storage_options": tbl.storage.storage_options, "table": table,
              "snapshot_id": sid,
              "schema_ids": _schema_ids(tbl, g, schema.id), "files": [task_file(lf, stats=False) for lf in g],
              "column": column, "index_type": index_type, "options": options,
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
            "combined_rows": sum(r["combined_rows"] for r in rows),
            **{k: sum(r.get(k, 0) for r in rows) for k in (
                "file_size", "current_bytes", "hypothetical_bytes", "combined_bytes", "current_index_bytes",
                "hypothetical_index_bytes")},
        })
    return {
        "table": table, "column": column, "index_type": index_type, "options": options,
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
