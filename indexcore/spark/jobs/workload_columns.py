"""The workload explain's decisions as advise reads them: what a Spark task ships per condition.

advise (:func:`~indexcore.analysis.advise.advise`) reads of each query's explanation only columns
of its files (each stage's decision, the integer fields, the index's answer and kinds on the files
reaching it) and the raw index results of the files it samples; a whole
:class:`~indexcore.scan.records.FileDecision` per file is read only for ``details``. So without
details each second-stage task ships, once, its files in explain's order (:func:`files_table`:
the order's keys and the paths) and, per condition, one Arrow table of those columns
(:func:`decisions_table`; a bitmap answer as its portable roaring bytes, the kinds as JSON texts).
The driver sorts the tasks' files into explain's order once (:class:`ExplainOrder`) and makes each
condition's :class:`~indexcore.scan.decision_columns.DecisionColumns` from its tables as advise
asks for it (:func:`decisions_of`): arrays, and sequences that decode a file's answer when read,
no object per file. At 1,000,000 files the pickled records of every file and condition did not
fit the driver (issue 29).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from indexcore.analysis.advise_existing import Taken
from indexcore.errors import IndexCoreError
from indexcore.scan.decision_columns import CODED_FIELDS, INT_FIELDS, DecisionColumns
from indexcore.scan.funnel import funnel_of_columns
from indexcore.scan.index_results import IndexResults
from indexcore.scan.records import Explanation
from indexcore.spark.jobs.explain_columns import ORDER_PARTITION
from indexcore.spark.jobs.plain import plain_dumps, plain_loads
from indexcore.warehouse.model import LiveFile, Problem

_RESULTS = ("index_decision", "raw_index_result")
_NULLABLE = ("matching_rows", "global_index_rows")  # ints or None


def files_table(ordered: Sequence[LiveFile]) -> pa.Table:
    """A task's files in explain's order (:func:`~indexcore.scan.explainer.in_file_order`): the
    keys that order them among all tasks' files, and their paths."""
    return pa.table({ORDER_PARTITION: pa.array([str(lf.partition) for lf in ordered], pa.string()),
                     "bucket": pa.array([lf.bucket for lf in ordered], pa.int32()),
                     "level": pa.array([lf.file.level for lf in ordered], pa.int32()),
                     "path": pa.array([lf.path for lf in ordered], pa.string())})


def decisions_table(decided: DecisionColumns) -> pa.Table:
    """One condition's decisions of a task's files (in its :func:`files_table` order) as the columns
    advise reads: integer fields, stage codes, the index's answers and kinds, problems."""
    cols: dict[str, pa.Array] = {name: pa.array(decided.ints(name), pa.int64()) for name in INT_FIELDS}
    cols.update({name: pa.array(decided.codes(name), pa.int8()) for name in CODED_FIELDS})
    cols["index_skip"] = pa.array(IndexResults.of(decided.objects("index_decision")).skips(), pa.bool_())
    for name in _RESULTS:  # a kind per file and each bitmap's rows (IndexResults.to_arrow)
        cols[f"{name}_kind"], cols[name] = IndexResults.of(decided.objects(name)).to_arrow()
    for name in _NULLABLE:
        cols[name] = pa.array(decided.objects(name), pa.int64())
    memo: dict[int, str | None] = {}  # equal kinds are one shared dict: its JSON made once
    texts = []
    for types in decided.index_types():
        key = id(types)
        if key not in memo:
            memo[key] = None if types is None else json.dumps({c: list(k) for c, k in types.items()})
        texts.append(memo[key])
    cols["index_types"] = pa.array(texts, pa.string()).dictionary_encode()
    cols["problems"] = pa.array([plain_dumps(list(p)) if p else None for p in decided.objects("problems")],
                                pa.string())
    return pa.table(cols)


class ExplainOrder:
    """All tasks' files in explain's order (partition, bucket, highest level first, path), worked out
    once for every condition: ``order`` takes the tasks' rows (concatenated in task order) into it,
    ``paths`` are the files' paths in it."""

    def __init__(self, tables: Sequence[pa.Table]):
        whole = pa.concat_tables(tables) if tables else files_table([])
        self.order = pc.sort_indices(whole, [(ORDER_PARTITION, "ascending"), ("bucket", "ascending"),
                                             ("level", "descending"), ("path", "ascending")])
        self.paths: list[str] = whole.column("path").take(self.order).to_pylist()


class _Decoded(Sequence):
    """An Arrow column's values by position, each made (and ``decode``-d when not null) when read."""

    def __init__(self, column: pa.Array, decode: Callable[[Any], Any] | None = None, null: Any = None):
        self.column, self.decode, self.null = column, decode, null

    def __len__(self) -> int:
        return len(self.column)

    def __getitem__(self, at):
        if isinstance(at, slice):
            return [self[i] for i in range(len(self))[at]]
        value = self.column[int(at)].as_py()
        if value is None:
            return self.null
        return self.decode(value) if self.decode is not None else value


def _kinds(column: pa.ChunkedArray) -> Taken:
    """The index kinds column (JSON texts, a dictionary each task) as positions in its few dicts."""
    plain = column.cast(pa.string()).combine_chunks() if pa.types.is_dictionary(column.type) \
        else column.combine_chunks()
    encoded = pc.dictionary_encode(plain)
    values = [json.loads(t) for t in encoded.dictionary.to_pylist()] + [None]  # -1 (a null) reads None
    at = pc.fill_null(encoded.indices, -1).to_numpy(zero_copy_only=False).astype(np.int32)
    return Taken(values, at)


def decisions_of(tables: Sequence[pa.Table], order: ExplainOrder) -> tuple[DecisionColumns, dict[str, np.ndarray],
                                                                           list[Problem]]:
    """One condition's :class:`DecisionColumns` in explain's order from the tasks' tables (in task
    order), what :func:`~indexcore.scan.funnel.funnel_of_columns` sums, and the files' problems."""
    whole = pa.concat_tables(tables).unify_dictionaries().take(order.order) if tables else None
    n = len(order.paths)

    def ints(name: str) -> np.ndarray:
        return whole.column(name).to_numpy().astype(np.int64) if whole is not None else np.zeros(0, np.int64)

    def codes(name: str) -> np.ndarray:
        return whole.column(name).to_numpy().astype(np.int8) if whole is not None else np.zeros(0, np.int8)

    if whole is None:
        whole = decisions_table(DecisionColumns())
    objects: dict[str, Sequence] = {"path": order.paths}
    for name in _RESULTS:
        objects[name] = IndexResults.of_arrow(whole.column(f"{name}_kind").combine_chunks(),
                                              whole.column(name).combine_chunks())
    for name in _NULLABLE:
        objects[name] = _Decoded(whole.column(name).combine_chunks())
    problems = whole.column("problems").combine_chunks()
    objects["problems"] = _Decoded(problems, plain_loads, [])
    decided = DecisionColumns.of_columns(n, {name: ints(name) for name in INT_FIELDS},
                                         {name: codes(name) for name in CODED_FIELDS},
                                         whole.column("index_skip").to_numpy(), objects, _kinds(whole.column("index_types")))
    funnel = {name: decided.ints(name) for name in ("row_count", "file_size", "rows_after_dv", "dv_bytes",
                                                    "bytes_read", "requests")}
    funnel["skipped_by"] = decided.skipped_by()
    funnel["matching_rows"] = pc.fill_null(whole.column("matching_rows"), 0).to_numpy().astype(np.int64)
    funnel["global_index_rows"] = pc.coalesce(whole.column("global_index_rows"),
                                              whole.column("row_count")).to_numpy().astype(np.int64)
    funnel["global_index"] = decided.codes("global_index_decision") != 0
    found = [p for text in pc.drop_null(problems).to_pylist() for p in plain_loads(text)]
    return decided, funnel, found


def lean_explanations(table: str, bound: list, head, results: list) -> Iterator[Explanation | IndexCoreError]:
    """:func:`~.metadata.spark_explain_workload`'s explanations from lean tasks' tables, a condition's decoded
    as it is asked for and its bytes dropped then (the driver holds the rest still encoded). Empties
    ``results``: each task's bytes are held once, split per condition or not."""
    order = ExplainOrder([t for t, _e, _r in results])
    extras_of = [e["queries"] for _t, e, _r in results]
    parts = []  # per task, each condition's Arrow bytes
    for i, (_t, _e, r) in enumerate(results):
        results[i] = None  # its framed bytes gone once split
        parts.append(unframed(r))
        del r  # not kept by this generator's frame while the conditions are read
    results.clear()
    for q, predicate, sql in conditions_of(bound):
        if q is None:  # a condition that does not bind: its error
            yield predicate
            continue
        tables = [pa.ipc.open_stream(pa.BufferReader(task[q])).read_all() for task in parts]
        for task in parts:
            task[q] = b""  # read: let it go
        decided, funnel, found = decisions_of(tables, order)
        del tables
        yield explanation(table, head, predicate, sql, [e[q] for e in extras_of], decided,
                          partial(funnel_of_columns, funnel, False), found)
        del decided, funnel, found  # summarised: gone before the next condition's are made


def conditions_of(bound: list) -> Iterator[tuple]:
    """The workload's conditions as the job numbers them: ``(q, predicate, sql)`` for one it asked
    about, ``(None, error, None)`` for one that does not bind (not asked)."""
    q = 0
    for b in bound:
        if isinstance(b, IndexCoreError):
            yield None, b, None
        else:
            yield q, *b
            q += 1


def explanation(table: str, head, predicate, sql: str, extras: list[dict], files: Sequence,
                funnel: Callable[[tuple[int, int]], dict], found: list[Problem]) -> Explanation:
    """explain's :class:`Explanation` of one condition of the workload job: its ``files``, the
    tasks' ``extras`` (problems, index use, I/O; the global indexes' read once, so their most),
    ``funnel(global index I/O)`` and the files' problems ``found``, after the plan's."""
    seen: set[Problem] = set()
    part_problems = [p for e in extras for p in e["problems"] if not (p in seen or seen.add(p))]
    global_io = (max((e["io"][2] for e in extras), default=0), max((e["io"][3] for e in extras), default=0))
    return Explanation(table=table, snapshot_id=head.snapshot.id if head and head.snapshot else None,
                       predicate=predicate, sql=sql, files=files, funnel=funnel(global_io),
                       problems=[*(head.problems if head else []), *part_problems, *found],
                       index_used=all(e["index_used"] for e in extras),
                       bytes_read=sum(e["io"][0] for e in extras), requests=sum(e["io"][1] for e in extras))


def framed(parts: list[bytes]) -> bytes:
    """``parts`` as one byte string, each after its length (what :func:`unframed` splits)."""
    return b"".join(len(p).to_bytes(8, "little") + p for p in parts)


def unframed(data: bytes) -> list[bytes]:
    """The parts :func:`framed` joined."""
    parts, at = [], 0
    while at < len(data):
        n = int.from_bytes(data[at:at + 8], "little")
        parts.append(data[at + 8:at + 8 + n])
        at += 8 + n
    return parts
