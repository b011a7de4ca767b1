"""Explain a predicate over a table file by file, the way Paimon's batch read path decides.

A small explainer passes batches of files through one stage object per Paimon stage, in
Paimon's order (``AbstractFileStoreScan`` then ``RawFileSplitRead``): :mod:`.partition`,
:mod:`.bucket`, :mod:`.level`, :mod:`.stats` (schema evolution included), :mod:`.dv` (deletion
vectors, which the file index takes out of its selection), :mod:`.file_index` and
:mod:`.global_index` (row-tracking tables; first in the funnel, decided last since a file keeps
the fewest rows of both). Each stage decides a whole batch and records why in its files' notes
and problems.

``verify=True`` reads the data and flags every file pruned although it holds a matching row,
and every matching row missing from an index bitmap, naming the leaf columns to blame
(:mod:`.verify`).
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from itertools import islice
from types import MappingProxyType
from typing import Any

from indexcore.errors import PredicateError
from indexcore.expr import Predicate, conjuncts, parse_where, predicate_to_sql
from indexcore.scan.bucket import BucketStage
from indexcore.scan.decision_columns import DecisionColumns
from indexcore.scan.dv import DeletionVectorStage
from indexcore.scan.file_index import FileIndexStage
from indexcore.scan.funnel import funnel, funnel_of_columns
from indexcore.scan.global_index import GlobalIndexStage
from indexcore.scan.level import LevelStage
from indexcore.scan.partition import PartitionStage, parse_partition
from indexcore.scan.plan_stages import decide_on_plan, file_order_rows, plan_applies, selected_rows
from indexcore.scan.records import Batch, Explanation, FileDecisions
from indexcore.scan.stats import Pushdowns, StatsStage
from indexcore.scan.verify import Verifier
from indexcore.types import to_json_value
from indexcore.views.common import partition_text_cached
from indexcore.warehouse.model import LiveFile, Problem, TableSchema
from indexcore.warehouse.plan_columns import PlanColumns
from indexcore.warehouse.table_manifests import gc_paused

Progress = Callable[[int, int, str], None]


class Explainer:
    """Paimon's read path over some planned files: each batch passes through the stages in order,
    each deciding the whole batch and recording why in its files' notes and problems.

    The stages are built over every planned file (a partition pass over all of them, the
    primary-key whole-bucket value filter across batches, the snapshot's global index scan);
    the deletion vectors come before the file index, which takes them out of its selection, and
    the global index after it (a file keeps the fewest rows of both)."""

    def __init__(self, table, predicate: Predicate, table_schema: TableSchema, files: Sequence[LiveFile],
                 verify: bool = False, all_files: bool = False, kept: bool = False,
                 global_indexes: bool = False, snapshot_id: int | None = None):
        self.table = table
        self.record_template = _RECORD
        self.partition_types = [f.type for f in table_schema.partition_fields]
        parts = conjuncts(predicate)
        self.pushdowns = Pushdowns(table_schema, parts)
        self.bucket = BucketStage(table_schema, predicate)
        partition = PartitionStage(table_schema, parts, files)
        stats = StatsStage(table, table_schema, predicate, self.pushdowns, files)
        self.index = FileIndexStage(table, table_schema, predicate, all_files, kept, verify)
        self.global_index = GlobalIndexStage(table, predicate, files, snapshot_id, global_indexes, verify)
        self.stages = (partition, self.bucket, LevelStage(table_schema), stats,
                       DeletionVectorStage(table, verify), self.index, self.global_index)

    def batch(self, files: list[LiveFile]) -> Batch:
        """The files with their records set to what needs no stage (each stage fills its fields)."""
        records = []
        schemas = []
        labels, types, fresh = self.table.caches.labels, self.partition_types, _RECORD.copy
        for lf in files:
            problems: list[Problem] = []
            schemas.append(self.table.file_schema(lf, problems))
            f = lf.file
            dv_range = lf.deletion_vector
            # a copy of the template and the file's own fields: a dict(...) call of 26 keywords costs 4x
            record = fresh()
            record["path"] = lf.path
            record["partition"] = lf.partition_spec  # read only; its JSON form replaces it once decided
            record["bucket"] = lf.bucket
            record["level"] = f.level
            record["partition_text"] = partition_text_cached(lf.partition, types, labels)
            record["row_count"] = record["rows_after_dv"] = f.row_count
            record["index_types"] = {}
            record["problems"] = problems
            record["notes"] = []
            record["file_size"] = f.file_size
            record["dv_bytes"] = dv_range.length + 8 if dv_range is not None else 0
            records.append(record)
        pushdowns = self.pushdowns
        none = [None] * len(files)
        return Batch(files, records, schemas, [pushdowns(fs) for fs in schemas], none, list(none), list(none))

    def decide(self, files: list[LiveFile]) -> Batch:
        """Every stage's decision on ``files``, in the stages' order."""
        batch = self.batch(files)
        for stage in self.stages:
            stage.decide(batch)
        return batch

    def close(self) -> None:
        """Release what the stages hold across batches (the index stage's read-ahead threads)."""
        self.index.close()


# a batch's record before any stage: what :meth:`Explainer.batch` copies for each file and fills in
_RECORD: Mapping[str, Any] = MappingProxyType(dict(
    path=None, partition=None, bucket=0, level=0, partition_text="", row_count=0, partition_decision=None,
    bucket_decision=None, level_decision=None, stats_decision=None, raw_index_result=None, index_decision=None,
    index_types=None, index_location=None, dv_cardinality=0, rows_after_dv=0, bytes_read=0, requests=0,
    problems=None, notes=None, global_index_decision=None, global_index_rows=None, file_size=0, dv_bytes=0,
    stats=None, pruning_index_types=()))


def _batches(files: Iterable[LiveFile], size: int) -> Iterator[list[LiveFile]]:
    it = iter(files)
    while chunk := list(islice(it, size)):
        yield chunk


def file_order(lf: LiveFile) -> tuple:
    """The order explain lists files in: partition, bucket, highest level first, path."""
    return str(lf.partition), lf.bucket, -lf.file.level, lf.path


def in_file_order(files: Iterable[LiveFile]) -> list[LiveFile]:
    """``files`` sorted by :func:`file_order`, each partition's text made once (a few hundred
    partitions over 50,000 files)."""
    texts: dict[Any, str] = {}

    def key(lf: LiveFile) -> tuple:
        try:
            text = texts.get(lf.partition)
            if text is None:
                text = texts[lf.partition] = str(lf.partition)
        except TypeError:  # a value that cannot be a key
            text = str(lf.partition)
        return text, lf.bucket, -lf.file.level, lf.path

    return sorted(files, key=key)


def bind_predicate(table, schema: TableSchema, predicate_or_sql: Predicate | str) -> tuple[Predicate, str]:
    """The predicate over ``schema`` and its SQL text; an unknown column is a :class:`PredicateError`."""
    if isinstance(predicate_or_sql, str):
        sql = predicate_or_sql
        predicate = parse_where(sql, schema.row_type())
    else:
        predicate = predicate_or_sql
        sql = predicate_to_sql(predicate, schema.row_type())
    unknown = predicate.fields() - set(schema.field_names)
    if unknown:
        raise PredicateError(f"unknown column(s) {', '.join(sorted(unknown))} in table {table.name}")
    return predicate, sql


def explain(table, predicate_or_sql: Predicate | str, snapshot_id: int | None = None,
            partition: Mapping[str, Any] | str | None = None, bucket: int | None = None,
            verify: bool = False, progress: Progress | None = None, all_files: bool = False,
            paths: Sequence[str] | None = None) -> Explanation:
    """Explain ``predicate_or_sql`` over the live files of a snapshot (latest by default).

    ``partition`` / ``bucket`` restrict which files are explained (not a pruning stage).
    ``all_files`` consults the file index even for files pruned earlier (its bytes are counted
    in ``bytes_read`` but the funnel stays Paimon's). ``paths`` restricts to these data files.
    Unreadable parts become problems; nothing here raises for a bad file.
    """
    plan = table.plan_columns_alone(snapshot_id)  # the columnar plan, when the table keeps it alone
    if plan is not None and not verify and not all_files:
        schema = table.read_schema(snapshot_id, plan.snapshot)
        schemas = plan_applies(table, schema, plan)
        if schemas is not None:  # the early stages on the columns: a live file only for what they keep
            predicate, sql = bind_predicate(table, schema, predicate_or_sql)
            rows = selected_rows(plan, parse_partition(schema, partition), bucket, paths)
            sid = plan.snapshot.id if plan.snapshot else None
            with gc_paused():  # as decide_files
                part = _decide_on_plan(table, predicate, plan, rows, schema, schemas, progress, sid)
            out = explanation(table.name, sid, predicate, sql, [part], False)
            out.problems[:0] = plan.problems
            return out
    files, snapshot, problems = table.planned_objects(snapshot_id)  # the plan the table keeps
    schema = table.read_schema(snapshot_id, snapshot)
    predicate, sql = bind_predicate(table, schema, predicate_or_sql)
    wanted = parse_partition(schema, partition)
    if wanted:
        files = [lf for lf in files if all(lf.partition_spec.get(k) == v for k, v in wanted.items())]
    if bucket is not None:
        files = [lf for lf in files if lf.bucket == int(bucket)]
    if paths is not None:
        chosen = set(paths)
        files = [lf for lf in files if lf.path in chosen]
    out = explain_files(table, predicate, files, schema=schema, verify=verify, progress=progress,
                        all_files=all_files, snapshot_id=snapshot.id if snapshot else None)
    out.sql = sql
    out.problems[:0] = problems
    return out


def decide_files(table, predicate: Predicate, files: Sequence[LiveFile], schema: TableSchema,
                 verify: bool = False, all_files: bool = False,
                 progress: Progress | None = None, snapshot_id: int | None = None,
                 global_indexes: bool = False, kept: bool = False) -> FileDecisions:
    """The per-file decision: every stage for each of ``files``, in :func:`file_order`.

    ``predicate`` is bound to ``schema`` (the table schema the read goes through); ``files``
    are planned live files (a primary-key bucket passed whole: its files decide stats
    together). ``table`` is only read from (schemas, file indexes, deletion vectors, data).
    ``global_indexes`` adds the global index stage of row-tracking tables (the snapshot's
    BTree / bitmap global indexes narrow each file's row range). ``kept`` reads file indexes
    through the table's kept heads and readers (:meth:`Table.index_container`): for trying many
    predicates on the same files, whose index bytes then count only what was not read before.
    """
    with gc_paused():  # deciding builds 10,000s of long-lived records, as planning does
        return _decide_files(table, predicate, in_file_order(files), schema, verify, all_files, progress,
                             snapshot_id, global_indexes, kept)


def _decide_files(table, predicate: Predicate, files: list[LiveFile], schema: TableSchema, verify: bool,
                  all_files: bool, progress: Progress | None, snapshot_id: int | None, global_indexes: bool,
                  kept: bool) -> FileDecisions:
    """:func:`decide_files` over ``files`` in :func:`file_order`."""
    io_before = table.storage.stats.snapshot()
    ex = Explainer(table, predicate, schema, files, verify, all_files, kept, global_indexes, snapshot_id)
    verifier = Verifier(table, schema, predicate, ex.bucket.selector,
                        ex.global_index.scan.used if ex.global_index.scan is not None else ())
    violations: list[dict[str, Any]] = []
    decisions = DecisionColumns()
    ptypes = {f.name: f.type for f in schema.partition_fields}
    partitions: dict[tuple, dict] = {}  # partition values -> their JSON form (a few hundred over 50,000 files)
    # the batches Table.iter_prefetched fetches ahead, so each is decided from bytes already fetched
    size = table.prefetch_batch(data=verify)
    prefetched = table.iter_prefetched(files, index=ex.index.enabled, data=verify)
    try:
        _collect(ex, verifier, verify, progress, len(files), _batches(prefetched, size), ptypes, partitions,
                 violations, decisions)
    finally:
        ex.close()
    return FileDecisions(decisions, violations, ex.index.at_read, ex.global_index.problems,
                         table.storage.stats.bytes_read - io_before[0], table.storage.stats.requests - io_before[1],
                         *ex.global_index.io)


def _collect(ex: Explainer, verifier: Verifier, verify: bool, progress: Progress | None, total: int,
             batches: Iterable[list[LiveFile]], ptypes: dict, partitions: dict[tuple, dict],
             violations: list[dict[str, Any]], decisions: DecisionColumns) -> None:
    """Decide each batch and add its files' decisions (and verify's violations) in order, as columns."""
    for batch in map(ex.decide, batches):
        if verify:
            verifier.verify(batch, violations)
        done = len(decisions)
        _add_records(batch.records, ptypes, partitions, decisions)
        if progress is not None:
            for i, lf in enumerate(batch.files, done + 1):
                progress(i, total, posixpath.basename(lf.path))


def _add_records(records: list[dict[str, Any]], ptypes: dict, partitions: dict[tuple, dict],
                 decisions: DecisionColumns) -> None:
    """Decided records as a decision takes them (:func:`_as_decided`), added to ``decisions`` in order."""
    _as_decided(records, ptypes, partitions)
    decisions.extend(records)


def _as_decided(records: list[dict[str, Any]], ptypes: dict, partitions: dict[tuple, dict]) -> None:
    """Each record as a decision takes it, in place: partition in JSON form (one dict per distinct
    partition, from ``partitions``), problems and notes as tuples."""
    for record in records:
        spec = record["partition"]
        try:
            key = tuple(spec.items())
            as_json = partitions.get(key)
        except TypeError:  # a value that cannot be a key
            key = as_json = None
        if as_json is None:
            as_json = {k: (None if v is None or k not in ptypes else to_json_value(ptypes[k], v))
                       for k, v in spec.items()}
            if key is not None:
                partitions[key] = as_json
        record["partition"] = as_json  # read only: the files of a partition share it
        record["problems"] = tuple(record["problems"])
        record["notes"] = tuple(record["notes"])


def _decide_on_plan(table, predicate: Predicate, plan: PlanColumns, rows, schema: TableSchema,
                    schemas: dict, progress: Progress | None, snapshot_id: int | None) -> FileDecisions:
    """:func:`decide_files` of plan ``rows``, the stages before the file index decided on the
    columns (:func:`~indexcore.scan.plan_stages.decide_on_plan`)."""
    io_before = table.storage.stats.snapshot()
    ex = Explainer(table, predicate, schema, [], global_indexes=True, snapshot_id=snapshot_id)
    decisions = DecisionColumns()
    ptypes = {f.name: f.type for f in schema.partition_fields}
    partitions: dict[tuple, dict] = {}
    try:
        decide_on_plan(table, ex, plan, file_order_rows(plan, rows), schemas, decisions,
                       lambda records: _as_decided(records, ptypes, partitions), progress)
    finally:
        ex.close()
    return FileDecisions(decisions, [], ex.index.at_read, ex.global_index.problems,
                         table.storage.stats.bytes_read - io_before[0], table.storage.stats.requests - io_before[1],
                         *ex.global_index.io)


def explanation(table_name: str, snapshot_id: int | None, predicate: Predicate, sql: str,
                parts: Iterable[FileDecisions], verified: bool,
                planned: Sequence[LiveFile] = ()) -> Explanation:
    """An :class:`Explanation` from decided parts (one, or one per Spark task): the funnel by
    :func:`funnel`, the files' problems; files and violations in :func:`file_order` of
    ``planned`` when parts come from several tasks."""
    parts = list(parts)
    violations = [v for part in parts for v in part.violations]
    global_io = (sum(p.global_index_bytes for p in parts), sum(p.global_index_requests for p in parts))
    if len(parts) == 1 and isinstance(parts[0].files, DecisionColumns):  # in process: no object per file
        files = parts[0].files
        return Explanation(table=table_name, snapshot_id=snapshot_id, predicate=predicate, sql=sql, files=files,
                           funnel=funnel_of_columns(files.funnel_columns(), verified, global_io),
                           violations=violations, problems=[*parts[0].problems, *files.problems()],
                           verified=verified, index_used=parts[0].index_used, bytes_read=parts[0].bytes_read,
                           requests=parts[0].requests)
    files = [f for part in parts for f in part.files]
    if planned:
        rank = {lf.path: i for i, lf in enumerate(in_file_order(planned))}
        files.sort(key=lambda f: rank.get(f.path, len(rank)))
        violations.sort(key=lambda v: rank.get(v["path"], len(rank)))
    return Explanation(table=table_name, snapshot_id=snapshot_id, predicate=predicate, sql=sql, files=files,
                       funnel=funnel(files, verified, global_io),
                       violations=violations,
                       problems=[p for part in parts for p in part.problems] + [p for f in files for p in f.problems],
                       verified=verified,
                       index_used=all(part.index_used for part in parts),
                       bytes_read=sum(part.bytes_read for part in parts),
                       requests=sum(part.requests for part in parts))


def explain_files(table, predicate: Predicate | str, files: Sequence[LiveFile], schema: TableSchema | None = None,
                  verify: bool = False, progress: Progress | None = None, all_files: bool = False,
                  snapshot_id: int | None = None, kept: bool = False) -> Explanation:
    """Explain ``predicate`` over already planned live files, without planning the table.

    ``schema`` is the table schema the predicate and stats are read through (default: the
    latest). A primary-key bucket should be passed whole: its files decide stats together.
    Only the files' own problems are listed (not the plan's). ``snapshot_id`` is reported as is.
    ``kept``: as :func:`decide_files`.
    """
    schema = schema or table.schema()
    predicate, sql = bind_predicate(table, schema, predicate)
    part = decide_files(table, predicate, files, schema, verify=verify, all_files=all_files, progress=progress,
                        snapshot_id=snapshot_id, global_indexes=True, kept=kept)
    return explanation(table.name, snapshot_id, predicate, sql, [part], verify)
