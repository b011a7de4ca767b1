"""Frames of the Global indexes page: the row ids the table holds, the rows per key of one index
file, what a WHERE condition keeps through the global indexes (:mod:`indexcore.scan.global_index`
decides; :mod:`indexcore.analysis.coverage` lists the files and their coverage), and vector and
full-text searches (:mod:`indexcore.analysis.vector_search`, :mod:`indexcore.analysis.full_text`)."""

from __future__ import annotations

import pandas as pd

from indexcore.analysis.coverage import table_row_ranges
from indexcore.analysis.full_text import check_term, search_text
from indexcore.analysis.vector_search import parse_vector, recall_curve, search_vectors
from indexcore.errors import IndexCoreError
from indexcore.expr import parse_where
from indexcore.scan.global_index import global_index_scan
from indexcore.types import to_json_value
from indexcore.views.common import partition_label, partition_types
from indexcore.warehouse.global_index import global_index_files, open_reader


def cardinality_frame(table, file_name: str, snapshot_id: int | None = None, limit: int | None = None):
    """Rows per key (BTree) or per value (bitmap) of one global index file, most frequent first."""
    gif = next((g for g in global_index_files(table, snapshot_id) if g.entry.index_file.file_name == file_name), None)
    if gif is None:
        raise IndexCoreError(f"no global index file {file_name!r} in this snapshot")
    reader = open_reader(table, gif)
    if reader is None:
        raise IndexCoreError(f"{gif.index_type} indexes hold no per-key rows indexcore can list")
    dtype = gif.field.type
    rows = [{"key": str(to_json_value(dtype, k)), "rows": n} for k, n in reader.cardinalities()]
    nulls = len(reader.null_rows)
    if nulls:
        rows.append({"key": "NULL", "rows": nulls})
    frame = pd.DataFrame(rows, columns=["key", "rows"]).sort_values("rows", ascending=False, kind="stable")
    frame = frame.reset_index(drop=True)
    return frame.head(limit) if limit else frame


def predicate_keep_frame(table, sql: str, snapshot_id: int | None = None):
    """Per data file, the rows a WHERE condition keeps through the global indexes; and the totals."""

    plan = table.plan(snapshot_id)
    schema = table.read_schema(snapshot_id, plan.snapshot)
    predicate = parse_where(sql, schema.row_type())
    scan = global_index_scan(table, predicate, snapshot_id)
    types = partition_types(table)
    rows = []
    for lf in plan.files:
        f = lf.file
        if f.first_row_id is None:
            continue
        kept = f.row_count if scan is None else len(scan.kept_positions(f.first_row_id, f.row_count))
        rows.append({"file": f.file_name, "partition": partition_label(lf.partition, types, table.caches.labels),
                     "first_row_id": f.first_row_id, "rows": f.row_count, "kept_rows": kept,
                     "decision": "REMAIN" if kept else "SKIP"})
    frame = pd.DataFrame(rows, columns=["file", "partition", "first_row_id", "rows", "kept_rows", "decision"])
    totals = {"files": len(frame), "files_kept": int((frame["kept_rows"] > 0).sum()) if len(frame) else 0,
              "rows": int(frame["rows"].sum()) if len(frame) else 0,
              "rows_kept": int(frame["kept_rows"].sum()) if len(frame) else 0,
              "indexes_used": [] if scan is None else sorted({g.entry.index_file.file_name for g in scan.used}),
              "problems": [] if scan is None else [p.to_dict() for p in scan.problems]}
    return frame, totals


def vector_search_frame(table, vector_text: str, k: int = 10, width: int | None = None,
                        snapshot_id: int | None = None) -> pd.DataFrame:
    """The ``k`` rows nearest to the typed vector (a JSON list), by the table's vector indexes."""
    return search_vectors(table, parse_vector(vector_text), k, width, snapshot_id).to_pandas()


def recall_frame(table, k: int = 10, sample: int = 100, target: float = 0.95,
                 snapshot_id: int | None = None) -> tuple[pd.DataFrame, dict]:
    """recall@k per index file and search width, and the width reaching ``target`` per file."""
    curve = recall_curve(table, k, sample, target=target, snapshot_id=snapshot_id)
    return pd.DataFrame(curve["rows"]), curve["reaches"]


def text_search_frame(table, text: str, k: int = 10, snapshot_id: int | None = None) -> pd.DataFrame:
    """The best ``k`` rows matching ``text`` by the table's full-text indexes."""
    return search_text(table, text, k, snapshot_id).to_pandas()


def text_check(table, text: str, snapshot_id: int | None = None) -> dict:
    """Every index match of ``text`` against a scan of the text column."""
    return check_term(table, text, snapshot_id)


__all__ = ["cardinality_frame", "predicate_keep_frame", "recall_frame", "table_row_ranges", "text_check",
           "text_search_frame", "vector_search_frame"]
