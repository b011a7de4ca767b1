"""What the advice says to do: the DDL that applies it, and short rows for people.

:func:`statements_for`: ``ALTER TABLE ... SET`` for recommended candidates and bloom resizing,
``UNSET`` (Flink: ``RESET``) for indexes that never prune (or that a candidate replaces), and ``CALL
sys.rewrite_file_index('db.t')`` so existing files get the new layout.
:func:`advice_summary`: one row per existing index and per candidate.
"""

from __future__ import annotations

from typing import Any

from indexcore.analysis.advise_model import (
    NEVER_PRUNES,
    NOT_IN_WORKLOAD,
    REPLACE,
    STATS_PRUNE,
    Advice,
    Candidate,
    ExistingIndex,
)
from indexcore.analysis.bloom_sizing import OVER_FPP, OVERSIZED, SKEW
from indexcore.formats.registry import FILE_INDEX_TYPES
from indexcore.paimon.options import CoreOptions


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _alter(table_name: str, dialect: str, set_: dict[str, str] | None = None, unset: list[str] | None = None) -> str:
    if set_:
        body = ", ".join(f"{_quote(k)} = {_quote(v)}" for k, v in set_.items())
        return f"ALTER TABLE {table_name} SET TBLPROPERTIES ({body})" if dialect == "spark" else \
            f"ALTER TABLE {table_name} SET ({body})"
    body = ", ".join(_quote(k) for k in unset or [])
    return f"ALTER TABLE {table_name} UNSET TBLPROPERTIES ({body})" if dialect == "spark" else \
        f"ALTER TABLE {table_name} RESET ({body})"


def statements_for(table_name: str, options: dict[str, str], existing: list[ExistingIndex],
                   candidates: list[Candidate], dialect: str = "spark", drop_unused: bool = False) -> list[str]:
    """The DDL that applies the advice: add recommended indexes (and drop those they replace),
    resize bloom filters (an undersized one is resized, not dropped), re-add stale indexes that
    still skip files, drop indexes that never prune (and, with ``drop_unused``, those no query
    filters on), then rewrite the file indexes of existing files."""
    core = CoreOptions.parse(options)
    columns = {t: list(core.file_index_columns(t)) for t in FILE_INDEX_TYPES}
    before = {t: list(v) for t, v in columns.items()}
    set_: dict[str, str] = {}
    unset: list[str] = []
    rewrite = False

    def drop(g: ExistingIndex) -> None:
        if g.configured and g.column in columns.get(g.index_type, []):
            columns[g.index_type].remove(g.column)
            own = f"file-index.{g.index_type}.{g.column}."
            unset.extend(k for k in options if k.startswith(own))

    for g in existing:
        verdict = g.verdict
        if verdict in (OVER_FPP, OVERSIZED) and g.suggested_options:
            for k, v in g.suggested_options.items():
                set_[f"file-index.{g.index_type}.{g.column}.{k}"] = v
            rewrite = True
        elif verdict in (NEVER_PRUNES, STATS_PRUNE, REPLACE) or (verdict == NOT_IN_WORKLOAD and drop_unused):
            drop(g)
        elif verdict == "stale" and any(f.get("readd") for f in g.findings):
            if g.column not in columns[g.index_type]:
                columns[g.index_type].append(g.column)
            for k, v in g.suggested_options.items():
                set_[f"file-index.{g.index_type}.{g.column}.{k}"] = v
            rewrite = True
        elif verdict in ("missing", "wrong column", "stale"):
            rewrite = True
    for c in candidates:
        if not c.recommended:
            continue
        for column, kind, opts in c.parts:
            if column not in columns[kind]:
                columns[kind].append(column)
            for k, v in opts.items():
                set_[f"file-index.{kind}.{column}.{k}"] = v
    for t in FILE_INDEX_TYPES:
        if columns[t] == before[t]:
            continue
        key = f"file-index.{t}.columns"
        if columns[t]:
            set_[key] = ",".join(columns[t])
        else:
            unset.append(key)
    out = []
    if set_:
        out.append(_alter(table_name, dialect, set_=dict(sorted(set_.items()))))
    if unset:
        out.append(_alter(table_name, dialect, unset=sorted(set(unset))))
    if out or rewrite:
        out.append(f"CALL sys.rewrite_file_index({_quote(table_name)})")
    if any(f.get("cause") == SKEW for g in existing for f in g.findings):  # bloom filters over fpp on big files
        out.append(f"CALL sys.compact(table => {_quote(table_name)})" if dialect == "spark" else
                   f"CALL sys.compact({_quote(table_name)})")
    return out


def advice_summary(advice: Advice) -> dict[str, Any]:
    """Short rows for people: one per existing index and per candidate (beside each candidate
    figure, ``<figure>_95``: ``exact``, or its 95% interval and the files the query reaches; ``built_on``: the table's
    files the candidate was built on)."""
    existing = [{"column": e.column, "index_type": e.index_type, "files": len(e.blobs), "bytes": e.bytes,
                 "write_cost": f"{e.write_cost:.1%}", "files_skipped": e.skipped.files,
                 "rows_skipped": e.skipped.rows, "bytes_skipped": e.skipped.bytes, "score": round(e.score, 2),
                 "verdict": e.verdict, "why": "; ".join(f["message"] for f in e.findings) or "-"}
                for e in advice.existing]
    candidates = [{"rank": c.rank, "column": c.column, "index_type": c.index_type,
                   "options": ",".join(f"{k}={v}" for k, v in c.options.items()) or "-",
                   "est_bytes": c.estimated_bytes, "write_cost": f"{c.write_cost:.1%}",
                   "build_s": round(c.build_seconds_table, 2),
                   "files_skipped": round(c.extra.files.value), "files_95": c.extra.files.interval_text(),
                   "rows_skipped": round(c.extra.rows.value), "rows_95": c.extra.rows.interval_text(),
                   "bytes_skipped": round(c.extra.bytes.value), "bytes_95": c.extra.bytes.interval_text(),
                   "score": round(c.score, 2),
                   "verdict": c.verdict, "recommended": "yes" if c.recommended else "no",
                   "built_on": f"{c.built_files}/{c.total_files} table files" + ("" if c.extra.exact else " (sampled)")}
                  for c in advice.candidates]
    return {"existing": existing, "candidates": candidates}
