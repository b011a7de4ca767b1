"""Explain's per-file records as Arrow columns: what the Spark explain job's tasks send back.

A task decides its files with explain's own :func:`~indexcore.scan.explainer.decide_files` and
sends them as one Arrow table (:func:`decision_table`): the fields the funnel sums and a page
lists, as columns, and beside it its whole :class:`~indexcore.scan.records.FileDecision` records
as one encoded list (:func:`encode_records`: a pickle, or plain JSON over Spark Connect,
:mod:`.plain`). The driver sorts the tables of all tasks into explain's file order and sums the
funnel over the columns (:func:`~indexcore.scan.funnel.funnel_of_columns`), without a decision
object (:class:`ExplainColumns`); :meth:`ExplainColumns.explanation` decodes the records and
rebuilds explain's own :class:`~indexcore.scan.records.Explanation` only for a caller that lists
every file's record.
"""

from __future__ import annotations

import pickle
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from indexcore.expr import Predicate
from indexcore.formats.base import BitmapResult
from indexcore.scan.funnel import funnel_of_columns
from indexcore.scan.records import Explanation, FileDecision
from indexcore.spark.jobs.plain import plain_dumps, plain_loads
from indexcore.warehouse.model import LiveFile, Problem

ORDER_PARTITION = "_order_partition"  # str(partition values): explain's file order sorts on it first
RECORD = "_record"  # the file's place among all tasks' records (their lists concatenated in table order)
# one row per decided file: explain's order, the fields the funnel sums, the decisions, the record
EXPLAIN_FILES = pa.schema([
    (ORDER_PARTITION, pa.string()), ("path", pa.string()), ("partition_text", pa.string()),
    ("bucket", pa.int32()), ("level", pa.int32()), ("row_count", pa.int64()), ("file_size", pa.int64()),
    ("dv_bytes", pa.int64()), ("dv_cardinality", pa.int64()), ("rows_after_dv", pa.int64()),
    ("bytes_read", pa.int64()), ("requests", pa.int64()), ("matching_rows", pa.int64()),
    ("global_index_rows", pa.int64()), ("partition_decision", pa.string()), ("bucket_decision", pa.string()),
    ("level_decision", pa.string()), ("stats_decision", pa.string()), ("global_index_decision", pa.string()),
    ("index_decision", pa.string()), ("skipped_by", pa.string()), ("problems", pa.string()),
    (RECORD, pa.int64())])
_FIELDS = [f.name for f in EXPLAIN_FILES if f.name not in (ORDER_PARTITION, "index_decision", "skipped_by",
                                                           "problems", RECORD)]


def _text(value: Any) -> Any:
    """An enum field as its text (None stays None)."""
    return getattr(value, "value", value)


def _result_text(result: Any) -> str | None:
    """A file index result as short text: REMAIN, SKIP or ``N rows`` (a bitmap)."""
    if result is None:
        return None
    if isinstance(result, BitmapResult):
        return f"{len(result.bitmap)} rows"
    return str(result.to_json())


def decision_table(decisions: Sequence[FileDecision], ordered: Sequence[LiveFile]) -> pa.Table:
    """``decisions`` (explain's, in its file order: ``ordered`` are their live files) as
    :data:`EXPLAIN_FILES` rows (:data:`RECORD` numbers them from 0)."""
    cols: dict[str, list] = {name: [_text(getattr(f, name)) for f in decisions] for name in _FIELDS}
    cols[ORDER_PARTITION] = [str(lf.partition) for lf in ordered]
    cols["index_decision"] = [_result_text(f.index_decision) for f in decisions]
    cols["skipped_by"] = [_text(f.skipped_by) for f in decisions]
    cols["problems"] = [plain_dumps(list(f.problems)) if f.problems else None for f in decisions]
    cols[RECORD] = list(range(len(decisions)))
    return pa.Table.from_pydict({f.name: cols[f.name] for f in EXPLAIN_FILES}, schema=EXPLAIN_FILES)


def encode_records(decisions: Sequence[FileDecision], plain: bool) -> bytes:
    """A task's decisions as one encoded list: plain JSON (Spark Connect) or a pickle."""
    return plain_dumps(list(decisions)).encode() if plain else pickle.dumps(list(decisions))


def decode_records(data: bytes, plain: bool) -> list[FileDecision]:
    """The inverse of :func:`encode_records`."""
    return plain_loads(data.decode()) if plain else pickle.loads(data)


def numbered(tables: Sequence[pa.Table]) -> list[pa.Table]:
    """The tasks' tables with :data:`RECORD` counted across them (the second's records after the first's)."""
    out, base = [], 0
    for t in tables:
        out.append(t.set_column(t.schema.get_field_index(RECORD), RECORD, pc.add(t.column(RECORD), base)))
        base += t.num_rows
    return out


def in_explain_order(tables: Sequence[pa.Table]) -> pa.Table:
    """The tasks' tables as one, in explain's file order (partition, bucket, highest level first, path)."""
    whole = pa.concat_tables(tables) if tables else EXPLAIN_FILES.empty_table()
    order = pc.sort_indices(whole, [(ORDER_PARTITION, "ascending"), ("bucket", "ascending"),
                                    ("level", "descending"), ("path", "ascending")])
    return whole.take(order)


def table_funnel(files: pa.Table, verified: bool, global_index_io: tuple[int, int]) -> dict[str, dict[str, int]]:
    """Explain's funnel summed over :data:`EXPLAIN_FILES` columns (no decision object)."""

    def ints(name: str, fill) -> np.ndarray:
        return pc.fill_null(files.column(name), fill).to_numpy().astype(np.int64)

    columns = {name: ints(name, 0) for name in ("row_count", "file_size", "rows_after_dv", "dv_bytes",
                                                 "bytes_read", "requests", "matching_rows")}
    columns["global_index_rows"] = pc.coalesce(files.column("global_index_rows"),
                                               files.column("row_count")).to_numpy().astype(np.int64)
    columns["global_index"] = pc.is_valid(files.column("global_index_decision")).to_numpy()
    columns["skipped_by"] = files.column("skipped_by").to_numpy(zero_copy_only=False).astype(object)
    return funnel_of_columns(columns, verified, global_index_io)


@dataclass
class ExplainColumns:
    """Explain's result as the Spark job brings it back: every file's record as Arrow rows in
    explain's order (:data:`EXPLAIN_FILES`), the funnel summed over them, verify's violations and
    the problems (the plan's first), with the I/O of the tasks."""

    table: str
    snapshot_id: int | None
    predicate: Predicate
    sql: str
    files: pa.Table
    funnel: dict[str, dict[str, int]]
    violations: list[dict[str, Any]] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    verified: bool = False
    index_used: bool = True
    bytes_read: int = 0
    requests: int = 0
    records: list[bytes] = field(default_factory=list, repr=False)  # each task's encode_records
    plain: bool = False  # the records are plain JSON (Spark Connect), not pickles

    def decisions(self) -> list[FileDecision]:
        """Every file's :class:`FileDecision` in :attr:`files`' order, decoded from the tasks' records."""
        every = [f for data in self.records for f in decode_records(data, self.plain)]
        return [every[i] for i in self.files.column(RECORD).to_pylist()]

    def explanation(self) -> Explanation:
        """Explain's own :class:`Explanation` (what the CLI prints and a page lists)."""
        return Explanation(table=self.table, snapshot_id=self.snapshot_id, predicate=self.predicate, sql=self.sql,
                           files=self.decisions(), funnel=self.funnel, violations=list(self.violations),
                           problems=list(self.problems), verified=self.verified, index_used=self.index_used,
                           bytes_read=self.bytes_read, requests=self.requests)


def file_problems(files: pa.Table) -> list[Problem]:
    """The problems of the files of an :data:`EXPLAIN_FILES` table, in its order."""
    return [p for text in files.column("problems").to_pylist() if text is not None for p in plain_loads(text)]
