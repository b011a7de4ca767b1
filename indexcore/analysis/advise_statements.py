"""What the advice says to do: the DDL that applies it, and short rows for people.

:func:`statements_for`: ``ALTER TABLE ... SET`` for recommended candidates and bloom resizing,
``UNSET`` (Flink: ``RESET``) for indexes that never prune, and ``CALL
sys.rewrite_file_index('db.t')`` so existing files get the new layout.
:func:`advice_summary`: one row per existing index and per candidate.
"""

from __future__ import annotations

from typing import Any

from indexcore.analysis.advise_model import Advice, Candidate, ExistingIndex
from indexcore.analysis.bloom_sizing import OVER_FPP, OVERSIZED
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
                   candidates: list[Candidate], dialect: str = "spark") -> list[str]:
    """The DDL that applies the advice: add recommended indexes, resize blooms, drop dead ones,
    then rewrite the file indexes of existing files."""
    core = CoreOptions.parse(options)
    columns = {t: list(core.file_index_columns(t)) for t in FILE_INDEX_TYPES}
    before = {t: list(v) for t, v in columns.items()}
    set_: dict[str, str] = {}
    unset: list[str] = []
    rewrite = False
    for g in existing:
        if g.verdict == "never prunes" and g.configured and g.column in columns.get(g.index_type, []):
            columns[g.index_type].remove(g.column)
            own = f"file-index.{g.index_type}.{g.column}."
            unset.extend(k for k in options if k.startswith(own))
        elif g.verdict in (OVERSIZED, OVER_FPP) and g.suggested_options:
            for k, v in g.suggested_options.items():
                set_[f"file-index.{g.index_type}.{g.column}.{k}"] = v
            rewrite = True
        elif g.verdict in ("missing", "wrong column", "stale"):
            rewrite = True
    for c in candidates:
        if not c.recommended:
            continue
        if c.column not in columns[c.index_type]:
            columns[c.index_type].append(c.column)
        for k, v in c.options.items():
            set_[f"file-index.{c.index_type}.{c.column}.{k}"] = v
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
    return out


def advice_summary(advice: Advice) -> dict[str, Any]:
    """Short rows for people: one per existing index and per candidate."""
    existing = [{"column": e.column, "index_type": e.index_type, "files": len(e.blobs), "bytes": e.bytes,
                 "files_skipped": e.skipped.files, "rows_skipped": e.skipped.rows,
                 "bytes_skipped": e.skipped.bytes, "verdict": e.verdict,
                 "why": "; ".join(f["message"] for f in e.findings) or "-"} for e in advice.existing]
    candidates = [{"rank": c.rank, "column": c.column, "index_type": c.index_type,
                   "options": ",".join(f"{k}={v}" for k, v in c.options.items()) or "-",
                   "est_bytes": c.estimated_bytes, "files_skipped": c.extra.files, "rows_skipped": c.extra.rows,
                   "bytes_skipped": c.extra.bytes, "score": round(c.score, 2),
                   "recommended": "yes" if c.recommended else "no",
                   "sample": f"{c.sample_files}/{c.total_files}"} for c in advice.candidates]
    return {"existing": existing, "candidates": candidates}

