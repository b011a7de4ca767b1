"""The metadata work of one snapshot on Spark: plan, census of index heads, explain, health.

One Spark job per call, in two stages, with no Paimon rule of its own:

1. **Manifests read by tasks.** The driver reads only the snapshot, its manifest lists and its
   index manifest (:meth:`~indexcore.warehouse.table.Table.plan_head`). Each task of the first
   stage decodes some of the manifests (:meth:`~indexcore.warehouse.table.Table.read_manifest`,
   the in-process decoder) and sends every entry to the task of its (partition, bucket).
2. **Merge and work per (partition, bucket) group.** A second-stage task merges the entries it
   got in manifest order with Paimon's merge (:func:`~indexcore.warehouse.table_planning.merge_into`),
   makes the live files as :meth:`~indexcore.warehouse.table.Table.plan` does
   (:meth:`~indexcore.warehouse.table.Table.live_files`; deletion vectors from the driver's index
   manifest), and runs the work on them with the in-process function: ``$files``
   (:func:`indexcore.views.system.files`), the ``$file_indexes`` census
   (:func:`indexcore.views.census.file_indexes`) or explain's per-file decision
   (:func:`indexcore.scan.explainer.decide_files`; a primary-key bucket is never split, so stats
   are decided per bucket as in one process).

Every live key lands in exactly one group, so the union of the groups' live files is the plan.
Tables come back as Arrow (rows in manifest order, as the in-process plan lists them); explain
comes back as explain's own :class:`~indexcore.scan.records.Explanation`, its funnel made by
:func:`~indexcore.scan.explainer.explanation`. Health runs the census here and the rest of
:func:`~indexcore.analysis.health.table_health` on the driver over it. Tasks open storage with
the driver's storage options (:mod:`.tables`), as the other Spark jobs do. Over Spark Connect
results travel as Arrow IPC or JSON (:mod:`.plain`), never as pickles.
"""

from __future__ import annotations

import io
import pickle
import threading
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from indexcore import open_warehouse
from indexcore.analysis.health import TableHealth, health, table_health
from indexcore.config import settings
from indexcore.errors import IndexCoreError
from indexcore.scan.explainer import bind_predicate, decide_files, explanation, file_order, in_file_order
from indexcore.scan.records import Explanation, FileDecisions
from indexcore.spark.jobs.plain import plain_dumps, plain_loads
from indexcore.spark.jobs.run import JobCancelledError, max_tasks
from indexcore.spark.jobs.tables import open_table
from indexcore.spark.progress import JobWatch, Progress, spark_context
from indexcore.spark.session import get_session
from indexcore.views.census import FILE_INDEXES, file_indexes
from indexcore.views.common import kept_view
from indexcore.views.system import FILES
from indexcore.views.system import files as files_view
from indexcore.warehouse.model import Problem
from indexcore.warehouse.table_planning import merge_into

ORDER = "_manifest_order"  # the column that puts the groups' rows back in plan order
FILES_PER_GROUP = 500  # at least this many live files per second-stage task (fewer tasks on small tables)
_PLAN, _CENSUS, _EXPLAIN = "plan", "census", "explain"


@dataclass
class MetadataResult:
    """What a metadata job returns: its Arrow table (``$files`` or ``$file_indexes``) and the plan's
    problems (unreadable manifests and their like), with the snapshot it read."""

    table: pa.Table
    snapshot_id: int | None
    problems: list[Problem] = field(default_factory=list)
    tasks: int = 0


def live_file_estimate(table, snapshot_id: int | None = None) -> int:
    """The live files of a snapshot as its manifest lists count them (files added minus deleted),
    read without decoding a manifest: what decides whether the metadata work goes to Spark."""
    head = table.plan_head(snapshot_id)
    return max(0, sum(mf.num_added_files - mf.num_deleted_files for mf in head.manifests))


def metadata_master(table, snapshot_id: int | None = None, master: str | None = None) -> str | None:
    """The Spark master the metadata work of this snapshot runs on: ``master`` when asked, else the
    default master when the snapshot holds at least ``spark_metadata_files`` live files (the
    operator's setting; 0, the default, never), else None (in this process)."""
    if master:
        return master
    limit = settings().spark_metadata_files
    if limit > 0 and live_file_estimate(table, snapshot_id) >= limit:
        return settings().spark_master
    return None


def _group(part: bytes, bucket: int, groups: int) -> int:
    """The second-stage task of a (partition, bucket): the same in every Python worker."""
    return (zlib.crc32(part or b"") * 31 + int(bucket)) % groups


def _arrow_bytes(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue()


def _arrow_table(data: bytes) -> pa.Table:
    return pa.ipc.open_stream(pa.BufferReader(data)).read_all()


def _run(warehouse_url: str, table: str, work: str, args: dict, master: str | None, snapshot_id: int | None,
         progress: Progress | None, cancel: threading.Event | None, spark, storage_options: dict | None):
    """The two-stage job of ``work`` over the live files of a snapshot: (driver plan head, group
    results as Python values, tasks run)."""
    tbl = open_warehouse(warehouse_url, storage_options=storage_options).table(table)
    head = tbl.plan_head(snapshot_id)
    if head.snapshot is None:
        return tbl, head, [], 0
    problems = head.problems
    dvs = tbl.deletion_vector_ranges(head.index_entries, problems)
    spark = spark or get_session(master)
    manifests = list(head.manifests)
    live = max(0, sum(mf.num_added_files - mf.num_deleted_files for mf in manifests))
    readers = max(1, min(len(manifests), max_tasks(spark)))
    groups = max(1, min(max_tasks(spark), live // FILES_PER_GROUP + 1))
    schema_ids = [tbl.schema().id, *sorted(s.id for s in tbl.schemas() if s.id != tbl.schema().id)]
    opened = (warehouse_url, table, schema_ids, tbl.storage.storage_options)
    connect = spark_context(spark) is None
    sid = head.snapshot.id

    def read(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        """Stage 1: decode manifests; each entry goes to the group of its (partition, bucket)."""
        t = open_table(*opened)
        for batch in batches:
            out = {"k": [], "m": [], "blob": []}
            for m in batch["id"]:
                found: list = []
                entries = t.read_manifest(manifests[int(m)], found)
                by_group: dict[int, tuple[list, list]] = {}  # group -> (its entries, their places in the manifest)
                for p, e in enumerate(entries or ()):
                    es, ps = by_group.setdefault(_group(e[2], e[3], groups), ([], []))
                    es.append(e)
                    ps.append(p)
                if found:  # an unreadable manifest: its problem travels with group 0
                    by_group.setdefault(0, ([], []))
                for k, (es, ps) in by_group.items():
                    out["k"].append(k)
                    out["m"].append(int(m))
                    out["blob"].append(pickle.dumps((es, ps, found if k == 0 else [])))
            yield pd.DataFrame(out)

    def merge(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        """Stage 2: merge a group's entries in manifest order, make its live files, do the work."""
        parts = [(int(m), blob) for batch in batches for m, blob in zip(batch["m"], batch["blob"], strict=True)]
        if not parts:
            return
        t = open_table(*opened)
        found: list[Problem] = []
        order: dict[int, int] = {}  # id(entry) -> its place in the plan's manifest order
        live_entries: dict[tuple, tuple] = {}
        for m, blob in sorted(parts, key=lambda p: p[0]):
            entries, places, problems_here = pickle.loads(blob)
            found.extend(problems_here)
            for p, e in zip(places, entries, strict=True):
                order[id(e)] = (m << 32) | p
            merge_into(live_entries, entries)
        places = [order[id(e)] for e in live_entries.values()]
        files = t.live_files(live_entries.values(), dvs, found)
        place = {lf.path: at for lf, at in zip(files, places, strict=True)}
        result = _work(t, work, files, place, sid, args)
        payload = result if isinstance(result, bytes) else (
            plain_dumps(result).encode() if connect else pickle.dumps(result))
        yield pd.DataFrame({"problems": [plain_dumps(found).encode()], "payload": [payload]})

    df = spark.range(0, len(manifests), numPartitions=readers) if manifests else None
    if df is None:
        return tbl, head, [], 0
    out = (df.mapInPandas(read, "k int, m int, blob binary").repartition(groups, "k")
           .mapInPandas(merge, "problems binary, payload binary"))
    with JobWatch(spark, f"indexcore {work} {table}", progress, cancel, expected_tasks=readers + groups) as watch:
        try:
            rows = out.collect()
        except Exception as exc:
            if watch.cancelled or (cancel is not None and cancel.is_set()):
                raise JobCancelledError(f"indexcore {work} {table}: cancelled") from None
            raise IndexCoreError(f"indexcore {work} {table}: Spark job failed: {exc}") from exc
    if watch.cancelled or (cancel is not None and cancel.is_set()):
        raise JobCancelledError(f"indexcore {work} {table}: cancelled")
    results = []
    for row in rows:
        for p in plain_loads(bytes(row["problems"]).decode()):
            if p not in problems:
                problems.append(p)
        payload = bytes(row["payload"])
        if work in (_PLAN, _CENSUS):
            results.append(_arrow_table(payload))
        else:
            results.append(plain_loads(payload.decode()) if connect else pickle.loads(payload))
    return tbl, head, results, readers + groups


def _work(table, work: str, files: list, place: dict[str, int], snapshot_id: int, args: dict):
    """One group's share of ``work`` (runs in a second-stage task)."""
    if work == _EXPLAIN:
        decided = decide_files(table, args["predicate"], files, table.schema(args["schema_id"]),
                               snapshot_id=snapshot_id, global_indexes=True)
        return {"decided": decided, "order": [list(file_order(lf)) for lf in in_file_order(files)]}
    if work == _PLAN:
        out = files_view(table, snapshot_id, stats=True, live=files)
    else:
        out = file_indexes(table, snapshot_id, files=files)
    at = pa.array([place[p] for p in out["file_path"].to_pylist()], pa.int64())
    return _arrow_bytes(out.append_column(ORDER, at))


def _in_plan_order(tables: list[pa.Table], schema: pa.Schema) -> pa.Table:
    """The groups' rows in the plan's manifest order (a file's rows keep their order)."""
    if not tables:
        return schema.empty_table()
    whole = pa.concat_tables(tables)
    whole = whole.take(pc.sort_indices(whole[ORDER]))
    return whole.drop_columns([ORDER]).cast(schema)


def spark_plan(warehouse_url: str, table: str, master: str | None = None, snapshot_id: int | None = None,
               progress: Progress | None = None, cancel: threading.Event | None = None, spark=None,
               storage_options: dict | None = None) -> MetadataResult:
    """The snapshot's plan with its manifests read by Spark tasks, as ``$files`` (every field of
    every live file, in plan order) and the plan's problems."""
    _tbl, head, results, tasks = _run(warehouse_url, table, _PLAN, {}, master, snapshot_id, progress, cancel,
                                      spark, storage_options)
    return MetadataResult(_in_plan_order(results, FILES), head.snapshot.id if head.snapshot else None,
                          head.problems, tasks)


def spark_census(warehouse_url: str, table: str, master: str | None = None, snapshot_id: int | None = None,
                 progress: Progress | None = None, cancel: threading.Event | None = None, spark=None,
                 storage_options: dict | None = None) -> MetadataResult:
    """The ``$file_indexes`` census of the snapshot's index heads, read by Spark tasks (rows in plan
    order, each file's in head order, as in one process)."""
    _tbl, head, results, tasks = _run(warehouse_url, table, _CENSUS, {}, master, snapshot_id, progress, cancel,
                                      spark, storage_options)
    return MetadataResult(_in_plan_order(results, FILE_INDEXES), head.snapshot.id if head.snapshot else None,
                          head.problems, tasks)


def spark_explain(warehouse_url: str, table: str, where_sql: str, master: str | None = None,
                  snapshot_id: int | None = None, progress: Progress | None = None,
                  cancel: threading.Event | None = None, spark=None,
                  storage_options: dict | None = None) -> Explanation:
    """Explain ``where_sql`` over every live file, planned and decided in Spark tasks: explain's own
    :class:`Explanation` (files in explain's order, its funnel, the plan's problems first)."""
    tbl = open_warehouse(warehouse_url, storage_options=storage_options).table(table)
    snap = tbl.snapshot(snapshot_id)
    schema = tbl.read_schema(snapshot_id, snap)
    predicate, sql = bind_predicate(tbl, schema, where_sql)  # a bad predicate fails before Spark starts
    _tbl, head, results, _tasks = _run(warehouse_url, table, _EXPLAIN, {"predicate": predicate, "schema_id": schema.id},
                                       master, snap.id if snap else None, progress, cancel, spark, storage_options)
    ranked = sorted(((tuple(key), f) for r in results for key, f in zip(r["order"], r["decided"].files, strict=True)),
                    key=lambda kf: kf[0])
    parts: list[FileDecisions] = [r["decided"] for r in results]
    seen: set[Problem] = set()
    part_problems = [p for part in parts for p in part.problems if not (p in seen or seen.add(p))]
    whole = FileDecisions([f for _, f in ranked], [], all(p.index_used for p in parts), part_problems,
                          sum(p.bytes_read for p in parts), sum(p.requests for p in parts),
                          max((p.global_index_bytes for p in parts), default=0),
                          max((p.global_index_requests for p in parts), default=0))
    out = explanation(table, head.snapshot.id if head.snapshot else None, predicate, sql, [whole], verified=False)
    out.problems[:0] = head.problems
    return out


def seed_census(table, warehouse_url: str, master: str, snapshot_id: int | None = None,
                progress: Progress | None = None, cancel: threading.Event | None = None, spark=None) -> int | None:
    """Run the census of ``table``'s snapshot (``table`` opened from ``warehouse_url``) on Spark and
    keep it on the table as its ``$file_indexes`` view, so health, the index inventory and advise
    read it instead of reading every head in this process. Returns the snapshot id (None for a
    table without one)."""
    snap = table.snapshot(snapshot_id)
    if snap is None:
        return None
    result = spark_census(warehouse_url, table.name, master, snap.id, progress, cancel, spark,
                          table.storage.storage_options)
    kept_view(table, "file_indexes", snap.id, lambda: result.table)
    return snap.id


def spark_health(table, warehouse_url: str, master: str, snapshot_id: int | None = None,
                 progress: Progress | None = None, cancel: threading.Event | None = None, spark=None) -> TableHealth:
    """:func:`~indexcore.analysis.health.table_health` with its census of index heads run on Spark
    (:func:`seed_census`); the aggregates over it are health's own, on the driver."""
    sid = seed_census(table, warehouse_url, master, snapshot_id, progress, cancel, spark)
    return table_health(table, sid)


def spark_health_view(table, warehouse_url: str, master: str, snapshot_id: int | None = None, spark=None) -> pa.Table:
    """``$health`` (Arrow) with the census on Spark (:func:`seed_census`)."""
    sid = seed_census(table, warehouse_url, master, snapshot_id, spark=spark)
    return health(table, sid)
