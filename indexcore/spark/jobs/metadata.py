"""The metadata work of one snapshot on Spark: plan, census of index heads, explain, health.

One Spark job per call, in two stages, with no Paimon rule of its own:

1. **Manifests read by tasks.** The driver reads only the snapshot, its manifest lists and its
   index manifest (:meth:`~indexcore.warehouse.table.Table.plan_head`). Each task of the first
   stage decodes some of the manifests to columns (:meth:`~indexcore.warehouse.table.Table.manifest_columns`,
   the in-process decoder) and sends each (partition, bucket) group's entries to its task as one
   Arrow batch of only the columns the work reads (:data:`_SHIPPED`: the census ships 11 of the
   24), uncompressed: Spark's shuffle compresses its blocks (lz4: about 230 bytes per entry at
   10,000 files, 340 with every column, where pickled entry objects took about 1 KB), and Arrow's
   own zstd cost about 1 ms per batch each way. Group ``i`` travels under the key Spark's hash
   partitioning sends to partition ``i`` (:func:`partition_keys`), one group per task.
2. **Plan and work per (partition, bucket) group.** A second-stage task plans its entries on
   columns exactly as one process plans a snapshot
   (:meth:`~indexcore.warehouse.table_plan_columns.TablePlanColumns.plan_of_entries`: Paimon's merge,
   paths, ``.index`` files, deletion vectors from the driver's index manifest) and runs the
   in-process function on that :class:`~indexcore.warehouse.plan_columns.PlanColumns`: ``$files``
   (:func:`indexcore.views.system.files`), the ``$file_indexes`` census
   (:func:`indexcore.views.census.file_indexes`), or explain's per-file decision
   (:func:`indexcore.scan.explainer.decide_files`, with explain's partition, bucket, all-files and
   verify options; a primary-key bucket is never split, so stats are decided per bucket as in one
   process). One columnar builder serves both places.

Every live key lands in exactly one group, so the union of the groups' live files is the plan.
Tables come back as Arrow (rows in manifest order, as the in-process plan lists them); explain
comes back as Arrow rows of its per-file records with the funnel summed over them
(:mod:`.explain_columns`), rebuilt into explain's own
:class:`~indexcore.scan.records.Explanation` only for a caller that lists every record. Health
(:func:`spark_health`) reduces each group's plan and census to a
:class:`~indexcore.analysis.health_parts.HealthPart` in its task (sums, per-bucket sums, the few
rows a page lists) and merges the parts on the driver from the plan head: neither the census
nor a per-file column comes back, and the driver plans no data file. Tasks open storage with the driver's storage options (:mod:`.tables`), as the
other Spark jobs do. Over Spark Connect results travel as Arrow IPC or JSON (:mod:`.plain`),
never as pickles.
"""

from __future__ import annotations

import io
import threading
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from indexcore import open_warehouse
from indexcore.analysis.health import TableHealth, health_rows, table_health
from indexcore.analysis.health_parts import health_part, merged_health
from indexcore.config import settings
from indexcore.errors import IndexCoreError
from indexcore.io import Fetch
from indexcore.scan.explainer import bind_predicate, decide_files, in_file_order
from indexcore.scan.partition import parse_partition
from indexcore.scan.records import Explanation
from indexcore.spark.jobs.explain_columns import (
    EXPLAIN_FILES,
    RECORD,
    ExplainColumns,
    decision_table,
    decode_records,
    encode_records,
    file_problems,
    in_explain_order,
    numbered,
    table_funnel,
)
from indexcore.spark.jobs.plain import plain_dumps, plain_loads
from indexcore.spark.jobs.run import JobCancelledError, job_failed, max_tasks
from indexcore.spark.jobs.tables import open_table
from indexcore.spark.jobs.workload_columns import (
    conditions_of,
    decisions_table,
    explanation,
    files_table,
    framed,
    lean_explanations,
    unframed,
)
from indexcore.spark.progress import JobWatch, Progress, spark_context
from indexcore.spark.session import get_session
from indexcore.views.census import ON_DISK, ON_PLAN, census_on_plan, file_indexes
from indexcore.views.census_rows import FILE_INDEXES
from indexcore.views.common import kept_view
from indexcore.views.system import FILES
from indexcore.views.system import files as files_view
from indexcore.warehouse.model import Problem
from indexcore.warehouse.plan_columns import ENTRY, LIVE, MERGE_KEY, PlanColumns

ORDER = "_manifest_order"  # the column that puts the groups' rows back in plan order
FILES_PER_GROUP = 500  # at least this many live files per second-stage task (fewer tasks on small tables)
_PLAN, _CENSUS, _EXPLAIN, _HEALTH = "plan", "census", "explain", "health"
_LIVE = "plan columns"  # the plan's own columns (LIVE rows), what advise reads of a snapshot's files
_WORKLOAD = "explain workload"  # many conditions explained in one job (the advisor's queries)
QUERY = "_query"  # the condition a row of the workload explain decides


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


_SHIP = pa.ipc.IpcWriteOptions(compression="zstd")  # a result's names and stats shrink 4-6x
# the shuffled entries go uncompressed: Spark's shuffle compresses its blocks (lz4) itself, and
# Arrow's zstd costs about 1 ms per small batch each way (codec work per buffer), 200 batches at 10k
_SHUFFLED = pa.ipc.IpcWriteOptions(compression=None)


def _arrow_bytes(table: pa.Table, compressed: bool = True) -> bytes:
    """``table`` as the Arrow IPC stream a task ships (zstd-compressed buffers unless not ``compressed``)."""
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, table.schema, options=_SHIP if compressed else _SHUFFLED) as writer:
        writer.write_table(table)
    return sink.getvalue()


def _arrow_table(data: bytes) -> pa.Table:
    return pa.ipc.open_stream(pa.BufferReader(data)).read_all()


# the manifest columns each work reads: stage 1 ships only these (None: every column)
_MERGED = ("_KIND", *MERGE_KEY, "_EXTRA_FILES")  # the merge's and the plan's paths (.index files)
_SHIPPED = {_PLAN: None, _EXPLAIN: None, _HEALTH: None, _WORKLOAD: None, _LIVE: None,
            _CENSUS: (*_MERGED, "_FILE_SIZE", "_ROW_COUNT", "_SCHEMA_ID", "_EMBEDDED_FILE_INDEX")}
# a census from the tasks beside the plan's columns: no text the driver's plan holds (census_on_plan)
_LEAN_CENSUS = pa.schema([*(f for f in FILE_INDEXES if f.name not in ON_PLAN), pa.field(ON_DISK, pa.bool_())])
_PLACE = "_place"  # an entry's place in the plan's manifest order: manifest << 32 | position
# the tasks' batches (``mapInArrow``: Arrow in and out, no pandas frame either side)
_READ = pa.schema([("k", pa.int32()), ("m", pa.int32()), ("blob", pa.binary()), ("problems", pa.binary())])
_MERGED_OUT = pa.schema([(name, pa.binary()) for name in ("problems", "payload", "extra", "records")])


def spark_hash_int(value: int, seed: int = 42) -> int:
    """Spark's ``hash()`` of an int column (Murmur3 x86 32-bit of its 4 bytes, seed 42): what its
    hash partitioning (``repartition(n, col)``) takes ``pmod`` of."""
    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (32 - r))) & 0xFFFFFFFF

    k = rotl((value & 0xFFFFFFFF) * 0xCC9E2D51 & 0xFFFFFFFF, 15) * 0x1B873593 & 0xFFFFFFFF
    h = (rotl(seed ^ k, 13) * 5 + 0xE6546B64) & 0xFFFFFFFF
    h ^= 4
    h = (h ^ (h >> 16)) * 0x85EBCA6B & 0xFFFFFFFF
    h = (h ^ (h >> 13)) * 0xC2B2AE35 & 0xFFFFFFFF
    h ^= h >> 16
    return h - (1 << 32) if h >= 1 << 31 else h


def partition_keys(groups: int) -> list[int]:
    """For each group ``i``, the least int key that Spark's hash partitioning into ``groups``
    partitions sends to partition ``i``: with the group numbers themselves as keys, 3 of 4 groups
    shared one task on ``local[2]`` (keys 0, 1 and 3 hash to partition 3), so one task did 3/4 of
    the census and its reads ran at one task's concurrency."""
    keys: list[int | None] = [None] * groups
    k, left = 0, groups
    while left:
        p = spark_hash_int(k) % groups
        if keys[p] is None:
            keys[p], left = k, left - 1
        k += 1
    return keys


def _groups_of(entries: pa.Table, groups: int) -> np.ndarray:
    """The second-stage task of each entry: the CRC-32 of its partition's bytes and its bucket,
    hashed the same in every Python worker."""
    raw = entries.column("_PARTITION").combine_chunks()
    distinct = pc.unique(raw)
    crc = np.array([zlib.crc32(p or b"") for p in distinct.to_pylist()], np.int64)
    at = pc.index_in(raw, distinct).to_numpy(zero_copy_only=False).astype(np.int64)
    return (crc[at] * 31 + entries.column("_BUCKET").to_numpy().astype(np.int64)) % groups


def _chosen(t, entries: pa.Table, partition: dict | None, bucket: int | None) -> pa.Table:
    """The entries of the files explain is asked about (its ``partition`` and ``bucket``)."""
    if bucket is not None:
        entries = entries.filter(pc.equal(entries.column("_BUCKET"), int(bucket)))
    if partition:
        distinct = pc.unique(entries.column("_PARTITION"))
        keep = [raw for raw in distinct.to_pylist()
                if all(t.partition(raw)[1].get(k) == v for k, v in partition.items())]
        entries = entries.filter(pc.is_in(entries.column("_PARTITION"), pa.array(keep, pa.binary())))
    return entries


def _run(warehouse_url: str, table: str, work: str, args: dict, master: str | None, snapshot_id: int | None,
         progress: Progress | None, cancel: threading.Event | None, spark, storage_options: dict | None):
    """The two-stage job of ``work`` over the live files of a snapshot: (driver plan head, each
    group's (Arrow table, what else it sent, explain's encoded records), tasks run, whether
    results are plain JSON)."""
    tbl = open_warehouse(warehouse_url, storage_options=storage_options).table(table)
    head = tbl.plan_head(snapshot_id)
    if head.snapshot is None:
        return tbl, head, [], 0, False
    problems = head.problems
    snap, index_entries = head.snapshot, tuple(head.index_entries)
    spark = spark or get_session(master)
    manifests = list(head.manifests)
    live = max(0, sum(mf.num_added_files - mf.num_deleted_files for mf in manifests))
    readers = max(1, min(len(manifests), max_tasks(spark)))
    groups = max(1, min(max_tasks(spark), live // FILES_PER_GROUP + 1))
    schema_ids = [tbl.schema().id, *sorted(s.id for s in tbl.schemas() if s.id != tbl.schema().id)]
    opened = (warehouse_url, table, schema_ids, tbl.storage.storage_options)
    connect = spark_context(spark) is None
    shipped = _SHIPPED[work]
    keys = partition_keys(groups)  # group i's shuffle key: Spark's hash puts it in partition i

    def read(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """Stage 1: decode manifests to columns; each entry goes to the group of its (partition,
        bucket), as an Arrow batch of the columns the work reads."""
        t = open_table(*opened)
        for batch in batches:
            out = {"k": [], "m": [], "blob": [], "problems": []}
            # the batch's manifests fetched side by side (an object store's request each), as one process does
            ids = batch.column("id").to_pylist()
            t.storage.prefetch([Fetch(t.manifest_path(manifests[m].file_name)) for m in ids])
            for m in ids:
                m = int(m)
                found: list[Problem] = []
                try:
                    entries = t.manifest_columns(manifests[m].file_name)
                except IndexCoreError as exc:  # an unreadable manifest: its problem travels with group 0
                    found.append(Problem(t.manifest_path(manifests[m].file_name), "manifest", exc.message))
                    entries = ENTRY.empty_table()
                entries = entries.append_column(_PLACE, pa.array(np.arange(entries.num_rows, dtype=np.int64)
                                                                 + (m << 32)))
                if work == _EXPLAIN:
                    entries = _chosen(t, entries, args["partition"], args["bucket"])
                if shipped is not None:
                    entries = entries.select([*shipped, _PLACE])
                at = _groups_of(entries, groups)
                order = np.argsort(at, kind="stable")  # each group's entries together, in manifest order
                entries, at = entries.take(pa.array(order)), at[order]
                ks, starts, counts = np.unique(at, return_index=True, return_counts=True)
                shares = {int(k): (int(lo), int(c)) for k, lo, c in zip(ks, starts, counts, strict=True)}
                if found:
                    shares.setdefault(0, (0, 0))
                for k, (lo, c) in sorted(shares.items()):
                    out["k"].append(keys[k])
                    out["m"].append(m)
                    out["blob"].append(_arrow_bytes(entries.slice(lo, c), compressed=False))
                    out["problems"].append(plain_dumps(found if k == 0 else []).encode())
            yield pa.RecordBatch.from_pydict(out, _READ)

    def merge(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """Stage 2: plan a group's entries on columns (manifest order), do the work on that plan."""
        parts = [(int(m), bytes(blob), bytes(found)) for batch in batches
                 for m, blob, found in zip(batch.column("m").to_pylist(), batch.column("blob").to_pylist(),
                                           batch.column("problems").to_pylist(), strict=True)]
        if not parts:
            return
        t = open_table(*opened)
        found: list[Problem] = []
        tables = []
        for _m, blob, problems_here in sorted(parts, key=lambda p: p[0]):
            found.extend(p for p in plain_loads(problems_here.decode()) if p not in found)
            tables.append(_arrow_table(blob))
        entries = pa.concat_tables(tables)
        places = entries.column(_PLACE).to_numpy()
        plan, rows = t.plan_of_entries(snap, entries.drop_columns([_PLACE]), index_entries, found)
        table_out, extra = _work(t, work, plan, places[rows], snap.id, args, connect)
        records = extra.pop("records", b"")  # explain's whole records: bytes of their own, not in the JSON
        yield pa.RecordBatch.from_pydict({"problems": [plain_dumps(list(plan.problems)).encode()],
                                          "payload": [_arrow_bytes(table_out)],
                                          "extra": [plain_dumps(extra).encode()], "records": [records]}, _MERGED_OUT)

    if not manifests:
        return tbl, head, [], 0, connect
    df = spark.range(0, len(manifests), numPartitions=readers)
    out = (df.mapInArrow(read, "k int, m int, blob binary, problems binary").repartition(groups, "k")
           .mapInArrow(merge, "problems binary, payload binary, extra binary, records binary"))
    with JobWatch(spark, f"indexcore {work} {table}", progress, cancel, expected_tasks=readers + groups) as watch:
        try:
            rows = out.collect()
        except Exception as exc:
            if watch.cancelled or (cancel is not None and cancel.is_set()):
                raise JobCancelledError(f"indexcore {work} {table}: cancelled") from None
            raise job_failed(f"indexcore {work} {table}", exc) from exc
    if watch.cancelled or (cancel is not None and cancel.is_set()):
        raise JobCancelledError(f"indexcore {work} {table}: cancelled")
    results = []
    for i, row in enumerate(rows):
        rows[i] = None  # each group's bytes let go once decoded: not every encoded part beside every decoded one
        for p in plain_loads(bytes(row["problems"]).decode()):
            if p not in problems:
                problems.append(p)
        results.append((_arrow_table(row["payload"]), plain_loads(bytes(row["extra"]).decode()),
                        bytes(row["records"])))
    return tbl, head, results, readers + groups, connect


def _work(table, work: str, plan: PlanColumns, places: np.ndarray, snapshot_id: int, args: dict,
          plain: bool) -> tuple[pa.Table, dict]:
    """One group's share of ``work`` over its columnar plan (runs in a second-stage task): its
    Arrow table and what else the driver needs of it (explain: its encoded records under "records")."""
    if work == _EXPLAIN:
        files = plan.live_files(table)
        decided = decide_files(table, args["predicate"], files, table.schema(args["schema_id"]),
                               verify=args["verify"], all_files=args["all_files"], snapshot_id=snapshot_id,
                               global_indexes=True)
        extra = {"violations": decided.violations, "problems": decided.problems, "index_used": decided.index_used,
                 "io": [decided.bytes_read, decided.requests, decided.global_index_bytes,
                        decided.global_index_requests]}
        extra["records"] = encode_records(decided.files, plain)
        return decision_table(decided.files, in_file_order(files)), extra
    if work == _WORKLOAD:  # each condition decided over the group's files, as explain decides it alone
        files = plan.live_files(table)
        ordered, schema = in_file_order(files), table.schema(args["schema_id"])
        tables, records, extras = [], [], []
        for q, predicate in enumerate(args["predicates"]):
            decided = decide_files(table, predicate, files, schema, snapshot_id=snapshot_id, global_indexes=True)
            extras.append({"problems": decided.problems, "index_used": decided.index_used,
                           "io": [decided.bytes_read, decided.requests, decided.global_index_bytes,
                                  decided.global_index_requests]})
            if not args["whole"]:  # the columns advise reads, in the files' order of files_table
                records.append(_arrow_bytes(decisions_table(decided.files)))
                continue
            t = decision_table(decided.files, ordered)  # RECORD: the place among this query's records
            tables.append(t.append_column(QUERY, pa.array(np.full(t.num_rows, q, np.int32))))
            records.append(encode_records(decided.files, plain))
        if not args["whole"]:
            return files_table(ordered), {"queries": extras, "records": framed(records)}
        out = pa.concat_tables(tables) if tables else EXPLAIN_FILES.append(pa.field(QUERY, pa.int32())).empty_table()
        return out, {"queries": extras, "records": framed(records)}
    if work == _HEALTH:  # only the part's sums and few rows travel back, not the census
        census = file_indexes(table, snapshot_id, plan=plan)
        part = health_part(table, plan, census, table.schema(args["schema_id"]), places, args["small_limit"],
                           args["live_cap"])
        return pa.table({ORDER: pa.array([], pa.int64())}), {"health": part}
    if work == _PLAN:
        out = files_view(table, snapshot_id, stats=True, plan=plan)
        at = places
    elif work == _LIVE:  # partition ids are the group's own: the driver numbers them again
        out, at = plan.files, places
        if args.get("census"):  # the group's census beside it, in plan order too (bytes of their own)
            census = file_indexes(table, snapshot_id, plan=plan)
            rows = places[pc.index_in(census["file_path"], plan.files.column("path")).to_numpy(zero_copy_only=False)]
            lean = census.drop_columns(list(ON_PLAN)).append_column(ON_DISK, pc.is_valid(census["index_file_path"]))
            return (out.append_column(ORDER, pa.array(np.asarray(at, np.int64))),  # texts the driver's plan has: not sent
                    {"records": _arrow_bytes(lean.append_column(ORDER, pa.array(np.asarray(rows, np.int64))))})
    else:
        out = file_indexes(table, snapshot_id, plan=plan)
        at = places[pc.index_in(out["file_path"], plan.files.column("path")).to_numpy(zero_copy_only=False)]
    return out.append_column(ORDER, pa.array(np.asarray(at, np.int64))), {}


def _in_plan_order(tables: list[pa.Table], schema: pa.Schema) -> tuple[pa.Table, np.ndarray]:
    """The groups' rows in the plan's manifest order (a file's rows keep their order), each column
    one chunk: the tasks' dictionary columns (the census's texts) over one dictionary, so a group-by
    or a filter of the result sees one dictionary, as of the census one process makes. Empties
    ``tables`` and orders a column at a time, each let go once ordered: where the caller holds no
    other reference the driver holds the rows once and one column twice, not all of them twice
    (at 1,000,000 files the plan's columns are about 1.3 GB). With the rows' :data:`ORDER` values,
    ascending (their places in the plan)."""
    if not tables:
        return schema.empty_table(), np.zeros(0, np.int64)
    whole = pa.concat_tables(tables).unify_dictionaries()
    tables.clear()
    order = pc.sort_indices(whole[ORDER])
    places = whole[ORDER].take(order).to_numpy()
    columns = []
    for f in schema:
        # the column's parts made one array (the parts let go: nothing else holds them), then ordered:
        # at most two copies of it at once (Arrow's take of a column in parts joins them first: three)
        column = whole.column(f.name)
        whole = whole.drop_columns([f.name])
        column = column.combine_chunks()
        columns.append(column.take(order).cast(f.type))
        del column
    return pa.Table.from_arrays(columns, schema=schema), places


def spark_plan(warehouse_url: str, table: str, master: str | None = None, snapshot_id: int | None = None,
               progress: Progress | None = None, cancel: threading.Event | None = None, spark=None,
               storage_options: dict | None = None) -> MetadataResult:
    """The snapshot's plan with its manifests read by Spark tasks, as ``$files`` (every field of
    every live file, in plan order) and the plan's problems."""
    _tbl, head, results, tasks, _plain = _run(warehouse_url, table, _PLAN, {}, master, snapshot_id, progress,
                                              cancel, spark, storage_options)
    return MetadataResult(_in_plan_order([t for t, _e, _r in results], FILES)[0],
                          head.snapshot.id if head.snapshot else None, head.problems, tasks)


def spark_plan_columns(warehouse_url: str, table: str, master: str | None = None, snapshot_id: int | None = None,
                       progress: Progress | None = None, cancel: threading.Event | None = None, spark=None,
                       storage_options: dict | None = None) -> PlanColumns:
    """The snapshot's :class:`PlanColumns` (what :meth:`~indexcore.warehouse.table.Table.plan_columns`
    plans in one process) with its manifests read and merged by Spark tasks: each group's live rows
    come back as Arrow, put in plan order here and their partitions numbered in first-seen order, as
    one process numbers them; the driver reads only the plan head."""
    return spark_plan_and_census(warehouse_url, table, master, snapshot_id, progress, cancel, spark, storage_options,
                                 census=False)[0]


def spark_plan_and_census(warehouse_url: str, table: str, master: str | None = None, snapshot_id: int | None = None,
                          progress: Progress | None = None, cancel: threading.Event | None = None, spark=None,
                          storage_options: dict | None = None,
                          census: bool = True) -> tuple[PlanColumns, pa.Table | None]:
    """:func:`spark_plan_columns` and, in the same job (the manifests read once), the snapshot's
    ``$file_indexes`` census as :func:`spark_census` gives it (None for a snapshot-less table or
    with ``census`` off)."""
    tbl, head, results, _tasks, _plain = _run(warehouse_url, table, _LIVE, {"census": census}, master, snapshot_id,
                                              progress, cancel, spark, storage_options)
    if head.snapshot is None:
        return PlanColumns(None, LIVE.empty_table()), None
    tables, encoded_census = [t for t, _e, _r in results], [r for _t, _e, r in results]
    results.clear()  # each part held once: _in_plan_order lets them go as it orders them
    lean, census_places = _in_plan_order([_arrow_table(r) for r in encoded_census], _LEAN_CENSUS) if census else \
        (None, None)
    del encoded_census
    files, file_places = _in_plan_order(tables, LIVE)
    encoded = files.column("_PARTITION").combine_chunks().dictionary_encode()
    partitions = tuple(tbl.partition(p) for p in encoded.dictionary.to_pylist())
    files = files.set_column(files.schema.get_field_index("partition_id"), "partition_id",
                             pa.array(encoded.indices.to_numpy(zero_copy_only=False).astype(np.int32), pa.int32()))
    plan = PlanColumns(head.snapshot, files, partitions, tuple(head.index_entries), tuple(head.problems),
                       tbl.core_options.deletion_vectors_bitmap64, tuple(head.manifests))
    if lean is None:
        return plan, None
    # each census row's file by its place: every census file is a live file, each place once
    file_rows = np.searchsorted(file_places, census_places)
    if not (file_rows < len(file_places)).all() or not np.array_equal(file_places[file_rows], census_places):
        raise IndexCoreError(f"{table}: the census from Spark names files its plan does not list")
    return plan, census_on_plan(lean, plan, file_rows)


def spark_census(warehouse_url: str, table: str, master: str | None = None, snapshot_id: int | None = None,
                 progress: Progress | None = None, cancel: threading.Event | None = None, spark=None,
                 storage_options: dict | None = None) -> MetadataResult:
    """The ``$file_indexes`` census of the snapshot's index heads, read by Spark tasks (rows in plan
    order, each file's in head order, as in one process)."""
    _tbl, head, results, tasks, _plain = _run(warehouse_url, table, _CENSUS, {}, master, snapshot_id, progress,
                                              cancel, spark, storage_options)
    return MetadataResult(_in_plan_order([t for t, _e, _r in results], FILE_INDEXES)[0],
                          head.snapshot.id if head.snapshot else None, head.problems, tasks)


def spark_explain_columns(warehouse_url: str, table: str, where_sql: str, master: str | None = None,
                          snapshot_id: int | None = None, progress: Progress | None = None,
                          cancel: threading.Event | None = None, spark=None, storage_options: dict | None = None,
                          partition: dict | str | None = None, bucket: int | None = None, verify: bool = False,
                          all_files: bool = False) -> ExplainColumns:
    """Explain ``where_sql`` planned and decided in Spark tasks, as :func:`~indexcore.scan.explainer.explain`
    with the same options (``partition`` / ``bucket`` restrict the files; ``verify`` reads their
    data in the tasks; ``all_files`` consults every file index): every file's record as Arrow rows
    in explain's order and the funnel summed over them (:class:`ExplainColumns`)."""
    tbl = open_warehouse(warehouse_url, storage_options=storage_options).table(table)
    snap = tbl.snapshot(snapshot_id)
    schema = tbl.read_schema(snapshot_id, snap)
    predicate, sql = bind_predicate(tbl, schema, where_sql)  # a bad predicate fails before Spark starts
    args = {"predicate": predicate, "schema_id": schema.id, "partition": parse_partition(schema, partition),
            "bucket": bucket, "verify": verify, "all_files": all_files}
    _tbl, head, results, _tasks, plain = _run(warehouse_url, table, _EXPLAIN, args, master,
                                              snap.id if snap else None, progress, cancel, spark, storage_options)
    files = in_explain_order(numbered([t for t, _e, _r in results]))
    extras = [e for _t, e, _r in results]
    rank = {p: i for i, p in enumerate(files.column("path").to_pylist())}
    violations = sorted((v for e in extras for v in e["violations"]), key=lambda v: rank.get(v["path"], len(rank)))
    seen: set[Problem] = set()
    part_problems = [p for e in extras for p in e["problems"] if not (p in seen or seen.add(p))]
    global_io = (max((e["io"][2] for e in extras), default=0), max((e["io"][3] for e in extras), default=0))
    return ExplainColumns(table, head.snapshot.id if head.snapshot else None, predicate, sql, files,
                          table_funnel(files, verify, global_io), violations,
                          [*head.problems, *part_problems, *file_problems(files)], verify,
                          all(e["index_used"] for e in extras), sum(e["io"][0] for e in extras),
                          sum(e["io"][1] for e in extras), [r for _t, _e, r in results], plain)


def spark_explain(warehouse_url: str, table: str, where_sql: str, master: str | None = None,
                  snapshot_id: int | None = None, progress: Progress | None = None,
                  cancel: threading.Event | None = None, spark=None, storage_options: dict | None = None,
                  partition: dict | str | None = None, bucket: int | None = None, verify: bool = False,
                  all_files: bool = False) -> Explanation:
    """:func:`spark_explain_columns` as explain's own :class:`Explanation` (files in explain's order,
    its funnel, the plan's problems first): for a caller that lists every file's record."""
    return spark_explain_columns(warehouse_url, table, where_sql, master, snapshot_id, progress, cancel, spark,
                                 storage_options, partition, bucket, verify, all_files).explanation()


def spark_explain_workload(warehouse_url: str, table: str, conditions: list, master: str | None = None,
                           snapshot_id: int | None = None, progress: Progress | None = None,
                           cancel: threading.Event | None = None, spark=None,
                           storage_options: dict | None = None,
                           whole: bool = True) -> Iterator[Explanation | IndexCoreError]:
    """Each of ``conditions`` (predicates or SQL) explained as :func:`~indexcore.scan.explainer.explain`
    explains it alone, all in one Spark job: its manifests read once by the tasks, each group's files
    decided for every condition in its task. Yields, in ``conditions``' order, explain's own
    :class:`Explanation` (decoded from the tasks' records as it is asked for, so a caller that
    summarises each and drops it holds one at a time) or the :class:`IndexCoreError` of a condition
    that does not bind to the table (checked before Spark starts). Not ``whole``: each explanation's
    files are the columns advise reads (:mod:`.workload_columns`: no whole record per file, no
    statistics), for a caller that lists no file's record."""
    tbl = open_warehouse(warehouse_url, storage_options=storage_options).table(table)
    snap = tbl.snapshot(snapshot_id)
    schema = tbl.read_schema(snapshot_id, snap)
    bound: list[tuple | IndexCoreError] = []
    for c in conditions:
        try:
            bound.append(bind_predicate(tbl, schema, c))
        except IndexCoreError as exc:
            bound.append(exc)
    asked = [b for b in bound if not isinstance(b, IndexCoreError)]
    results, plain, head = [], False, None
    if asked:
        args = {"predicates": [p for p, _sql in asked], "schema_id": schema.id, "whole": whole}
        _tbl, head, results, _tasks, plain = _run(warehouse_url, table, _WORKLOAD, args, master,
                                                  snap.id if snap else None, progress, cancel, spark, storage_options)
    if not whole:
        yield from lean_explanations(table, bound, head, results)
        return
    records = [unframed(r) for _t, _e, r in results]  # per task, each condition's encoded records
    for q, predicate, sql in conditions_of(bound):
        if q is None:  # a condition that does not bind: its error
            yield predicate
            continue
        mine = numbered([t.filter(pc.equal(t.column(QUERY), q)).drop_columns([QUERY]) for t, _e, _r in results])
        files = in_explain_order(mine)
        decoded = [f for task in records for f in decode_records(task[q], plain)]  # this condition's only
        yield explanation(table, head, predicate, sql, [e["queries"][q] for _t, e, _r in results],
                          [decoded[i] for i in files.column(RECORD).to_pylist()],
                          partial(table_funnel, files, False), file_problems(files))


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
    """:func:`~indexcore.analysis.health.table_health` measured in Spark tasks: each second-stage task
    reduces its groups' plan and census to a :class:`~indexcore.analysis.health_parts.HealthPart`
    and the driver adds them up (:func:`~indexcore.analysis.health_parts.merged_health`) from the
    plan head, planning no data file (except where that module says)."""
    snap = table.snapshot(snapshot_id)
    if snap is None:
        return table_health(table, snapshot_id)
    schema = table.read_schema(snapshot_id, snap)
    cap = settings().live_rows_merge_files
    args = {"schema_id": schema.id, "small_limit": schema.core_options.small_file_threshold(bool(schema.primary_keys)),
            "live_cap": cap}
    _tbl, head, results, _tasks, _plain = _run(warehouse_url, table.name, _HEALTH, args, master, snap.id, progress,
                                               cancel, spark, table.storage.storage_options)
    return merged_health(table, head, schema, [e["health"] for _t, e, _r in results], head.problems, cap)


def spark_health_view(table, warehouse_url: str, master: str, snapshot_id: int | None = None, spark=None) -> pa.Table:
    """``$health`` (Arrow) measured on Spark (:func:`spark_health`)."""
    return health_rows(spark_health(table, warehouse_url, master, snapshot_id, spark=spark))
