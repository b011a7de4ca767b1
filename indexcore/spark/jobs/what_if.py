"""Spark what-if: a hypothetical file index built on every live file and measured, in tasks.

Each task builds the index of its files with
:func:`indexcore.analysis.whatif.build_hypothetical_index`, keeps the bytes in a scratch
directory (never the warehouse) and compares pruning per predicate with
:func:`~indexcore.analysis.whatif.evaluate_hypothetical`, as the app and the CLI do.
:func:`what_if_measure` is the advisor's ``measure`` callback on top of it.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import re
import tempfile
import threading
from collections.abc import Sequence

import numpy as np

from indexcore import open_warehouse
from indexcore.analysis.advise_model import MEASURED, MeasuredFiles
from indexcore.analysis.whatif import build_hypothetical_index, evaluate_hypothetical
from indexcore.errors import IndexCoreError, PredicateError
from indexcore.expr import parse_where
from indexcore.formats.registry import FILE_INDEX_TYPES, check_writer_options
from indexcore.scan.records import Stage
from indexcore.spark.jobs.run import file_groups, max_tasks, run_tasks, size_groups, task_error
from indexcore.spark.jobs.tables import resolve, schema_ids, spec_table
from indexcore.spark.jobs.task_files import TaskPlanRows, task_file
from indexcore.spark.progress import Progress
from indexcore.spark.session import get_session
from indexcore.warehouse.plan_columns import PlanColumns, take_rows


def what_if_task(spec: dict) -> dict:
    """Build the hypothetical index of the task's files and compare pruning per predicate."""
    try:
        table = spec_table(spec)
        files = spec["files"]
        if isinstance(files, TaskPlanRows):  # rows of the plan's columns: the files made here
            files = files.live_files(table)
        hyps = [build_hypothetical_index(table, column, index_type, options, snapshot_id=spec["snapshot_id"],
                                         files=files)
                for column, index_type, options in [(spec["column"], spec["index_type"], spec["options"]),
                                                    *spec.get("also", ())]]
        hyp, also = hyps[0], hyps[1:]
        out: dict[str, dict] = {}
        for built in hyp.files:
            scratch = None
            size = 0
            for h in hyps:  # each part's blob in its own scratch file; the first one's path is reported
                mine = h.file(built.path)
                if mine is None or mine.blob is None:
                    continue
                size += mine.size
                name = os.path.join(spec["scratch_dir"], scratch_name(built.path, h.column, h.index_type))
                with open(name, "wb") as fh:
                    fh.write(mine.blob)
                scratch = scratch or name
            out[built.path] = {"path": built.path, "row_count": built.row_count, "size": size,
                               "scratch_file": scratch, "predicates": []}
        for p in (p for h in hyps for p in h.problems):
            out[p.path] = {"path": p.path, "row_count": None, "size": 0, "predicates": [],
                           "error": f"{p.structure}: {p.reason}"}
        for sql in spec["where"]:
            result = evaluate_hypothetical(hyp, sql, also=also)
            for wf in result.files:
                out[wf.path]["predicates"].append(_what_if_row(sql, wf))
        if spec.get("lean"):
            return _lean(spec, files, out)
        return {"files": [out[lf.path] for lf in files if lf.path in out]}
    except Exception as exc:  # noqa: BLE001
        return task_error(spec, exc)


def _lean(spec: dict, files: Sequence, out: dict[str, dict]) -> dict:
    """A task's files as the advisor reads them (:class:`~indexcore.analysis.advise_model.MeasuredFiles`):
    the place in the task's files of each file it reports, their bytes, and per predicate its
    answers as lists (plain values: over Spark Connect results travel as JSON)."""
    at = [i for i, lf in enumerate(files) if lf.path in out]
    reported = [out[files[i].path] for i in at]
    answers = []
    for q in range(len(spec["where"])):
        rows = [f["predicates"][q] if len(f["predicates"]) > q else None for f in reported]
        answers.append({"has": [r is not None for r in rows],
                        **{name: [int(r[name]) if r is not None else 0 for r in rows] for name in MEASURED}})
    return {"at": at, "size": sum(f["size"] for f in reported), "answers": answers}


def _measured(results: list[dict], positions: list[np.ndarray], wheres: int) -> MeasuredFiles:
    """The lean tasks' results (:func:`_lean`, in task order) as one :class:`MeasuredFiles`, each
    file at its plan position (``positions``: each task's files' positions)."""
    done = [(r, positions[g]) for g, r in enumerate(results) if "at" in r]
    at = [mine[np.asarray(r["at"], np.int64)] for r, mine in done]
    answers = tuple({name: np.concatenate([np.asarray(r["answers"][q][name], bool if name == "has" else np.int64)
                                           for r, _m in done]) if done else np.zeros(0, np.int64)
                     for name in ("has", *MEASURED)} for q in range(wheres))
    return MeasuredFiles(np.concatenate(at) if at else np.zeros(0, np.int64), answers)


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def scratch_name(path: str, column: str, index_type: str) -> str:
    """The scratch file name of one data file's hypothetical index: the file's base name, the
    column and the kind with anything but letters, digits, ``.``, ``_`` and ``-`` replaced and each part
    capped (a column name comes from the table's schema, which a hostile warehouse writes), plus a
    digest of the three as given, so two names that clean up alike stay apart."""
    digest = hashlib.sha256("\0".join((path, column, index_type)).encode("utf-8", "surrogatepass")).hexdigest()[:16]
    parts = (posixpath.basename(path)[:80], column[:60], index_type[:30])
    return ".".join(_UNSAFE.sub("_", part) or "_" for part in parts) + f".{digest}.index"


def _what_if_row(sql: str, wf) -> dict:
    """One file under one predicate: pruned before the index, by today's indexes, by the new one."""
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


def what_if_measure(warehouse_url: str, table: str, master: str | None = None,
                    snapshot_id: int | None = None, storage_options: dict | None = None, plan=None):
    """The advisor's ``measure`` callback (:data:`indexcore.analysis.advise_candidates.Measure`): each
    candidate built and measured by :func:`what_if` on every live file of ``table`` (``plan``: the
    snapshot's files already planned, as :func:`what_if` takes them). The snapshot is planned (when
    ``plan`` is None) and its files packed into task groups (:func:`packed_files`: a live file and a
    task copy per file) once, on the first candidate, for every candidate of the run."""
    packed: list = []  # this run's (plan, task groups, their files' plan positions), made by the first candidate

    def measure(column: str, index_type: str, options: dict, wheres: list[str], also=()) -> dict:
        if not packed:
            tbl, planned = (resolve(warehouse_url, table, snapshot_id, storage_options) if plan is None
                            else (open_warehouse(warehouse_url, storage_options=storage_options).table(table), plan))
            groups = packed_files(tbl, planned, max_tasks(get_session(master)))
            index_of = getattr(planned, "index_of", None)  # advise's planned files: answers by plan position
            positions = None if index_of is None else \
                [files if isinstance(files, np.ndarray) else planned.rows_of([f.path for f in files])
                 for _ids, files in groups]
            packed.append((planned, groups, positions))
        planned, groups, positions = packed[0]
        return what_if(warehouse_url, table, column, index_type, options, wheres, master=master,
                       snapshot_id=snapshot_id, storage_options=storage_options, also=also, plan=planned,
                       packed=groups, positions=positions)

    return measure


def packed_files(tbl, plan, tasks: int) -> list[tuple[list[int], list | np.ndarray]]:
    """The snapshot's live files (``plan.files``) packed into at most ``tasks`` groups as what-if's
    tasks take them: each group's schema ids (with the snapshot's read schema) and picklable task
    copies of its files, without stats (what-if reads none). Of advise's files from plan columns
    (``plan.inventory`` a :class:`PlanColumns` of ``plan.files``), each group is its files' plan rows
    (an array; a spec ships them as :class:`TaskPlanRows`): no object per file here."""
    sid = plan.snapshot.id if plan.snapshot else None
    schema = tbl.read_schema(sid, plan.snapshot)
    columns = getattr(plan, "inventory", None)
    if isinstance(columns, PlanColumns) and columns.num_files == len(plan.files):
        ids = columns.files.column("_SCHEMA_ID").to_numpy()
        return [(schema_ids(tbl, (), schema.id, *np.unique(ids[rows]).tolist()), rows)
                for rows in size_groups(columns.files.column("_FILE_SIZE").to_numpy(), tasks)]
    return [(schema_ids(tbl, g, schema.id), [task_file(lf, stats=False) for lf in g])
            for g in file_groups(plan.files, tasks, whole_buckets=False)]


def _task_files(plan, files):
    """What a spec ships of a group's files: their copies, or the rows of advise's plan columns."""
    if isinstance(files, np.ndarray):
        columns = plan.inventory
        return TaskPlanRows(PlanColumns(columns.snapshot, take_rows(columns.files, files), columns.partitions,
                                        bitmap64=columns.bitmap64))
    return files


def what_if(warehouse_url: str, table: str, column: str, index_type: str, options: dict[str, str] | None,
            where_sqls: Sequence[str], master: str | None = None, scratch_dir: str | None = None,
            snapshot_id: int | None = None, progress: Progress | None = None,
            cancel: threading.Event | None = None, spark=None, storage_options: dict | None = None,
            also: Sequence[tuple[str, str, dict]] = (), plan=None, packed: list | None = None,
            positions: list | None = None) -> dict:
    """Build a hypothetical ``index_type`` index on ``column`` for every live file (into
    ``scratch_dir``, a new temporary directory by default; never the warehouse) and report its
    total size and, per predicate, the files and rows it would prune against the current indexes.

    ``also``: more ``(column, index_type, options)`` built beside it, answering together with it
    (the advisor's pairs for OR queries); sizes are then theirs summed. Per file and predicate,
    ``combined_rows`` is what the new indexes and today's ones keep together. ``plan``: the
    snapshot's files planned already (its ``snapshot`` and ``files``: advise's
    :class:`~indexcore.analysis.advise.PlannedFiles` from Spark tasks), else the driver plans them;
    ``packed``: those files already packed for tasks (:func:`packed_files` of ``plan``), else packed here;
    ``positions``: each packed group's files' places in the plan, for the advisor: then the files'
    results are its :class:`~indexcore.analysis.advise_model.MeasuredFiles` (columns, no dict per
    file; no per-predicate summary, no scratch file kept).
    """
    if index_type not in FILE_INDEX_TYPES:
        raise IndexCoreError(f"unknown file index type {index_type!r} (one of {', '.join(FILE_INDEX_TYPES)})")
    if plan is None:
        tbl, plan = resolve(warehouse_url, table, snapshot_id, storage_options)
    else:
        tbl = open_warehouse(warehouse_url, storage_options=storage_options).table(table)
    # tasks plan the driver's snapshot (not whatever is latest when they run), read as whatif does
    sid = plan.snapshot.id if plan.snapshot else None
    schema = tbl.read_schema(sid, plan.snapshot)
    parts = []
    for col, kind, opts in [(column, index_type, options), *also]:
        if kind not in FILE_INDEX_TYPES:
            raise IndexCoreError(f"unknown file index type {kind!r} (one of {', '.join(FILE_INDEX_TYPES)})")
        if col not in schema.field_names:
            raise PredicateError(f"unknown column {col!r} in table {table}")
        opts = {k: str(v) for k, v in (opts or {}).items()}
        check_writer_options(kind, opts, schema.field(col).type)  # bad options fail before Spark starts
        parts.append((col, kind, opts))
    options, also = parts[0][2], [list(p) for p in parts[1:]]
    for sql in where_sqls:
        parse_where(sql, schema.row_type())
    if scratch_dir is None:  # our own scratch directory: gone when the job ends or fails
        with tempfile.TemporaryDirectory(prefix="indexcore-whatif-") as scratch:
            out = what_if(warehouse_url, table, column, index_type, options, where_sqls, master, scratch,
                          snapshot_id, progress, cancel, spark, storage_options, also, plan, packed, positions)
        if positions is not None:
            return {**out, "scratch_dir": None}
        return {**out, "scratch_dir": None, "file_results": [{**f, "scratch_file": None}
                                                             for f in out["file_results"]]}
    scratch = scratch_dir
    _check_scratch(scratch, tbl.storage)
    os.makedirs(scratch, exist_ok=True)
    spark = spark or get_session(master)
    groups = packed if packed is not None else packed_files(tbl, plan, max_tasks(spark))
    specs = [{"url": warehouse_url, "storage_options": tbl.storage.storage_options, "table": table,
              "snapshot_id": sid, "schema_ids": ids, "files": _task_files(plan, files),
              "column": column, "index_type": index_type, "options": options, "also": also,
              "where": list(where_sqls), "scratch_dir": scratch, "lean": positions is not None} for ids, files in groups]
    results = run_tasks(spark, what_if_task, specs, f"indexcore what-if {table}", progress, cancel)
    if positions is not None:
        measured = _measured(results, positions, len(where_sqls))
        return {"table": table, "column": column, "index_type": index_type, "options": options,
                "scratch_dir": scratch, "files": len(measured), "total_size": sum(r.get("size", 0) for r in results),
                "predicates": [], "file_results": measured, "task_errors": [r for r in results if "error" in r]}
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
        **({"also": [{"column": c, "index_type": k, "options": o} for c, k, o in also]} if also else {}),
        "scratch_dir": scratch, "files": len(files),
        "total_size": sum(f["size"] for f in files),
        "predicates": summary,
        "file_results": files,
        "task_errors": [r for r in results if "error" in r],
    }


def _check_scratch(scratch: str, storage) -> None:
    """Refuse a local scratch directory inside a local warehouse (the warehouse's own opened
    storage, with its options: no second filesystem is made without them)."""
    if storage.protocol != "file":
        return  # the scratch directory is local: it cannot lie inside an object store
    a, b = os.path.realpath(scratch), os.path.realpath(storage.root)
    if a == b or a.startswith(b.rstrip("/") + "/"):
        raise IndexCoreError(f"scratch directory {scratch} is inside the warehouse; refusing to write there")
