"""Frames of the What-if page: explain (per file, the funnel, why files were read, grouped) and a
hypothetical index's effect, with the index options the page takes as ``k=v, k=v`` text."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from indexcore.analysis.whatif import (
    SERVER,
    SESSION,
    ByteBudget,
    build_hypothetical_index,
    check_hypothetical,
    evaluate_hypothetical,
)
from indexcore.config import parse_pairs
from indexcore.expr import predicate_to_sql
from indexcore.formats.registry import FILE_INDEX_TYPES, check_writer_options, supported_index_types
from indexcore.frames.progress import Progress
from indexcore.scan.decision_columns import DecisionColumns
from indexcore.scan.explainer import explain
from indexcore.scan.file_index import pruning_index_types
from indexcore.scan.funnel import FUNNEL_KEYS
from indexcore.scan.index_results import BITMAP, NONE, result_kind
from indexcore.scan.records import Stage
from indexcore.views.common import UNPARTITIONED, partition_types


def funnel_frame(funnel: dict[str, dict[str, int]]) -> pd.DataFrame:
    """An explain funnel (stage -> files, rows, bytes kept and skipped, index bytes) as a frame in stage order."""
    return pd.DataFrame([{"stage": k, **{c: v.get(c, 0) for c in FUNNEL_KEYS}} for k, v in funnel.items()],
                        columns=["stage", *FUNNEL_KEYS])


def explain_frames(table, sql: str, snapshot_id: int | None = None, verify: bool = False,
                   progress: Progress | None = None) -> dict[str, Any]:
    """:func:`.explain.explain` as frames: ``files``, ``funnel``, ``problems``, ``violations``."""
    return explanation_frames(table, explain(table, sql, snapshot_id=snapshot_id, verify=verify, progress=progress))


def explanation_frames(table, ex) -> dict[str, Any]:
    """An :class:`~indexcore.scan.records.Explanation` as :func:`explain_frames`'s frames, wherever it was
    decided (in this process, or in Spark tasks: :func:`indexcore.spark.jobs.metadata.spark_explain`)."""
    files = cells_as_text(ex.to_frame())
    if not partition_types(table):
        files["partition"] = files["partition"].replace("{}", UNPARTITIONED)
    return {"files": files, "funnel": funnel_frame(ex.funnel), "sql": ex.sql, "why": why_read(ex),
            "problems": pd.DataFrame([p.to_dict() for p in ex.problems], columns=["path", "structure", "reason"]),
            "violations": pd.DataFrame(ex.violations), "index_used": ex.index_used}


# why a file was skipped: the stage that pruned it
SKIPPED_BECAUSE = {
    Stage.PARTITION: "its partition does not match", Stage.BUCKET: "its bucket cannot hold the key",
    Stage.LEVEL: "a level-0 file the batch read skips", Stage.STATS: "min/max statistics exclude the value",
    Stage.GLOBAL_INDEX: "the global index finds no row", Stage.INDEX: "the file index finds no row"}
# why a file was read: what the last stage that could have skipped it found
FOUND, MAYBE, NO_INDEX, MERGED = ("the file index finds matching rows", "the file index cannot rule it out",
                                  "min/max statistics cover the value and no file index answers the predicate",
                                  "min/max statistics cover the value; the table merges on read, so file "
                                  "indexes are not used")
VERIFIED, FALSE_POSITIVE = "it holds matching rows (verified)", "it holds no matching row (verified)"
WHY_COLUMNS = ["outcome", "reason", "files", "rows"]


def _read_reason(f, ex) -> str:
    result = f.index_decision if f.index_decision is not None else f.raw_index_result
    return _reason_read(ex, f.matching_rows, result_kind(result), f.pruning_index_types, f.index_types)


def _reason_read(ex, matching_rows, kind: int, pruning, index_types) -> str:
    """Why a file that was read was read, from its decision's fields; ``kind``: the kind of its
    index decision, else of what its file index answered (:func:`~indexcore.scan.index_results.result_kind`)."""
    if matching_rows is not None:
        return VERIFIED if matching_rows else FALSE_POSITIVE
    if not ex.index_used:
        return MERGED
    if kind == BITMAP:
        return FOUND
    # REMAIN from an index that could have answered (a bloom filter's "maybe"), or from none at all
    answering = pruning or pruning_index_types(ex.predicate, index_types or {})
    return MAYBE if kind != NONE and answering else NO_INDEX


def _outcome_counts(ex) -> dict[tuple[str, str], list[int]]:
    """(outcome, reason) -> [files, rows], in the order each first comes in file order: read from
    explain's columns where it keeps them (each read file's reason on its own, the skipped ones
    counted per stage on arrays: no tuple per file, 1,000,000 at a million files), else from the
    decisions."""
    files = ex.files
    counts: dict[tuple[str, str], list[int]] = {}
    if not isinstance(files, DecisionColumns):
        for f in files:
            key = ("read", _read_reason(f, ex)) if f.skipped_by is None else \
                ("skipped", SKIPPED_BECAUSE.get(f.skipped_by, f"pruned at {f.skipped_by}"))
            acc = counts.setdefault(key, [0, 0])
            acc[0] += 1
            acc[1] += f.row_count
        return counts
    skipped = files.skipped_by()
    rows = files.ints("row_count")
    is_read = np.equal(skipped, None)
    firsts: dict[tuple[str, str], int] = {}  # each key's first file
    matching = files.objects("matching_rows")
    decided, raw = files.objects("index_decision").kinds, files.objects("raw_index_result").kinds
    kinds = np.where(decided != NONE, decided, raw).tolist()
    pruning, index_types = files.objects("pruning_index_types"), files.index_types()
    for i in np.flatnonzero(is_read).tolist():
        key = ("read", _reason_read(ex, matching[i], kinds[i], pruning[i], index_types[i]))
        acc = counts.setdefault(key, [0, 0])
        firsts.setdefault(key, i)
        acc[0] += 1
        acc[1] += int(rows[i])
    because = {s.value: text for s, text in SKIPPED_BECAUSE.items()}
    for stage in set(skipped[~is_read].tolist()):
        at = skipped == stage
        key = ("skipped", because.get(stage) or f"pruned at {stage}")
        acc = counts.setdefault(key, [0, 0])
        firsts[key] = min(firsts.get(key, len(skipped)), int(np.argmax(at)))
        acc[0] += int(np.count_nonzero(at))
        acc[1] += int(rows[at].sum())
    return {key: counts[key] for key in sorted(counts, key=firsts.__getitem__)}


def why_read(ex) -> dict[str, Any]:
    """Why the files of an explanation were read or skipped, grouped and counted (``reasons``:
    outcome, reason, files, rows; largest first), and the dominant reason for reading in one
    sentence (``summary``), e.g. "Rows with country = 'DE' are in 44,899 of 45,504 files: the data
    is not clustered by country"."""
    counts = _outcome_counts(ex)
    reasons = pd.DataFrame([(o, r, n, rows) for (o, r), (n, rows) in counts.items()], columns=WHY_COLUMNS)
    reasons = reasons.sort_values(["outcome", "files"], ascending=[True, False], kind="stable", ignore_index=True)
    return {"reasons": reasons, "summary": _summary(ex, reasons)}


def _summary(ex, reasons: pd.DataFrame) -> str:
    total = len(ex.files)
    read = reasons[reasons["outcome"] == "read"]
    if not total:
        return "The snapshot has no live file."
    if read.empty:
        top = reasons.iloc[0]
        return f"No file is read: {top['files']:,} of {total:,} are skipped because {top['reason']}."
    top = read.iloc[0]
    n, why = int(top["files"]), top["reason"]
    columns = sorted(ex.predicate.fields()) if hasattr(ex.predicate, "fields") else []
    on = ", ".join(columns) or "the predicate's columns"
    cond = ex.sql or predicate_to_sql(ex.predicate)  # as typed: DATE '2024-06-01', not its day number
    share = f"{n:,} of {total:,} files"
    if why in (FOUND, VERIFIED):
        return f"Rows with {cond} are in {share}: the data is not clustered by {on}, so no statistic or index " \
               "can skip those files (sorting or partitioning by it would)."
    if why == MAYBE:
        return f"The file indexes cannot rule out {cond} in {share} (a bloom filter answers 'maybe', or the " \
               "index cannot evaluate the predicate); verify against the data to see how many hold a match."
    if why == FALSE_POSITIVE:
        return f"{share} are read but hold no row with {cond}: an index on {on} would skip them."
    if why in (NO_INDEX, MERGED):
        # only what the explain found: whether those files hold a match takes a verify
        return f"{cond} lies within the min..max statistics of {share}, so statistics cannot skip them" \
               + (f", and no file index on {on} answers the predicate." if why == NO_INDEX else
                  "; the table merges on read, so Paimon does not use its file indexes.") \
               + " Verify against the data to see how many of them hold a match."
    return f"{share} are read: {why}."


def _cell_text(value: Any) -> Any:
    if isinstance(value, dict):
        if set(value) == {"rows"} and isinstance(value["rows"], list):
            return f"{len(value['rows'])} rows"  # a bitmap result (``result_to_json``)
        return ", ".join(f"{k}={v}" for k, v in value.items())
    if isinstance(value, list | tuple | set):
        return ", ".join(map(str, value))
    return value


def cells_as_text(frame: pd.DataFrame) -> pd.DataFrame:
    """Dict and list cells (JSON decisions, note lists) as text, so every column has one Arrow type."""
    out = frame.copy(deep=False)  # columns are replaced whole, never written into: the input stays as it was
    for col in out.columns:
        if out[col].dtype != object or pd.api.types.infer_dtype(out[col], skipna=True) in _PLAIN:
            continue  # one scalar kind throughout (checked at C speed): nothing to render
        if out[col].map(lambda v: isinstance(v, dict | list | tuple | set)).any():
            out[col] = out[col].map(_cell_text)
    return out


_PLAIN = frozenset({"string", "bytes", "integer", "floating", "boolean", "decimal", "empty", "date", "datetime"})


def whatif_frames(hypothetical, sql: str, verify: bool = False, progress: Progress | None = None,
                  max_rows: int | None = None) -> dict[str, Any]:
    """:func:`.whatif.evaluate_hypothetical` as frames: per-file ``files``, ``totals``, ``problems``,
    and what they cover: ``files_indexed`` of ``total_files`` (fewer when a budget stopped the
    build, ``limited_by``), ``file_rows`` per-file rows of which ``files`` keeps at most
    ``max_rows`` (those whose rows read change most), ``sql`` the predicate compared."""
    result = evaluate_hypothetical(hypothetical, sql, verify=verify, progress=progress)
    files = cells_as_text(result.to_frame())
    file_rows = len(files)
    if not files.empty:
        files.insert(0, "file_name", files["path"].map(lambda p: p.rsplit("/", 1)[-1]))
        if max_rows is not None and file_rows > max_rows:  # a session keeps a bounded frame
            change = files["rows_existing"] - files["rows_combined"]
            files = files.loc[change.sort_values(ascending=False, kind="stable").index[:max_rows]]
    totals = pd.DataFrame([{"what": k, **v} for k, v in result.totals.items() if "rows" in v],
                          columns=["what", "files", "rows", "bytes", "files_skipped", "rows_skipped",
                                   "bytes_skipped", "index_bytes"])
    problems = [p.to_dict() for p in hypothetical.problems + result.explanation.problems]
    return {"files": files, "totals": totals, "index_bytes": hypothetical.total_size,
            "problems": pd.DataFrame(problems, columns=["path", "structure", "reason"]),
            "violations": pd.DataFrame(result.violations), "files_indexed": len(hypothetical.files),
            "total_files": hypothetical.total_files, "limited_by": hypothetical.limited_by,
            "file_rows": file_rows, "sql": sql}


def hypothetical_options(index_type: str, text: str, dtype) -> dict[str, str]:
    """``k=v, k=v`` index options for a hypothetical ``index_type`` index on a column of ``dtype``,
    checked as Paimon's writer checks them (an :class:`~indexcore.errors.IndexCoreError` says why not)."""
    options = parse_pairs(text, "an index option")
    check_writer_options(index_type, options, dtype)
    return options


__all__ = ["FILE_INDEX_TYPES", "SERVER", "SESSION", "ByteBudget", "build_hypothetical_index", "cells_as_text",
           "check_hypothetical", "explain_frames", "funnel_frame", "hypothetical_options", "supported_index_types",
           "whatif_frames", "why_read"]
