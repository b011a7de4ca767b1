"""Full-text global indexes: what each holds (``$full_text_indexes``), a term search returning the
table's rows, and its matches checked against a scan of the text column.

Files in paimon-ftindex's layout (``PFTIDX01``) are searched with that library; the older Java
``tantivy-fulltext`` archive stays listed, with its documents counted from tantivy's
``meta.json`` (segments' ``max_doc`` less deleted docs). Ids are local to each file's row range.

The scan check reads the text column and keeps the rows of the files' row ranges holding any
word of the term (lower-cased whole words). The index's tokenizer may also stem words or drop
stop words: such rows show as ``index_only`` / ``scan_only`` rather than being hidden.
"""

from __future__ import annotations

import re

import pyarrow as pa

from indexcore.errors import IndexCoreError
from indexcore.formats.ftindex import FullTextIndex, is_ftindex, read_ftindex_header
from indexcore.formats.vector_index import read_tantivy_archive
from indexcore.views import register_view
from indexcore.views.common import from_rows
from indexcore.warehouse.data import ROW_ID, read_with_row_ids
from indexcore.warehouse.global_index import GlobalIndexFile, global_index_files

_WORD = re.compile(r"\w+")


def full_text_files(table, snapshot_id: int | None = None, field: str | None = None) -> list[GlobalIndexFile]:
    return [g for g in global_index_files(table, snapshot_id)
            if g.family == "full-text" and g.field is not None and (field is None or g.field.name == field)]


def _tokenizer_text(tok: dict) -> str:
    parts = [tok.get("tokenizer", "?")]
    if tok.get("lower_case"):
        parts.append("lower-case")
    if tok.get("stem"):
        parts.append(f"stem {tok.get('language', '')}".strip())
    if tok.get("remove_stop_words"):
        parts.append("stop words removed")
    return ", ".join(parts)


def full_text_index_rows(table, snapshot_id: int | None = None) -> list[dict]:
    """One row per full-text index file (the ``$full_text_indexes`` view's rows)."""
    plan = table.plan(snapshot_id)
    table_rows = sum(lf.file.row_count for lf in plan.files if lf.file.first_row_id is not None)
    rows = []
    for gif in full_text_files(table, snapshot_id):
        lo, hi = gif.row_range or (None, None)
        row = {"file": gif.entry.index_file.file_name, "index_type": gif.index_type, "field": gif.field.name,
               "row_range_start": lo, "row_range_end": hi, "layout": None, "searchable": False,
               "documents": None, "text_fields": None, "tokenizer": None, "tantivy_version": None,
               "rows_in_range": None, "table_rows": table_rows, "coverage": None, "problem": None}
        if lo is not None:
            live = sum(max(0, min(hi, lf.file.first_row_id + lf.file.row_count - 1) - max(lo, lf.file.first_row_id) + 1)
                       for lf in plan.files if lf.file.first_row_id is not None)
            row.update(rows_in_range=live, coverage=live / table_rows if table_rows else None)
        try:
            source = table.storage.open(gif.path)
            if is_ftindex(source.read(0, min(8, source.size), "full-text index head")):
                h = read_ftindex_header(source)
                row.update(layout=f"paimon-ftindex v{h.version}", documents=h.documents,
                           text_fields=list(h.text_fields), tokenizer=_tokenizer_text(h.tokenizer),
                           tantivy_version=h.tantivy_version)
                FullTextIndex(source)  # searchable only when the library opens it
                row["searchable"] = True
            else:
                archive = read_tantivy_archive(source)
                segments = (archive.meta or {}).get("segments", [])
                row.update(layout="tantivy archive (Java tantivy-fulltext; listed)",
                           documents=sum(int(s.get("max_doc", 0)) - int((s.get("deletes") or {}).get("num_deleted_docs", 0))
                                         for s in segments) if archive.meta else None,
                           tantivy_version=(archive.meta or {}).get("index_format_version"))
        except IndexCoreError as exc:
            row["problem"] = exc.message
        rows.append(row)
    return rows


FULL_TEXT_INDEXES = pa.schema([
    ("file", pa.string()), ("index_type", pa.string()), ("field", pa.string()), ("row_range_start", pa.int64()),
    ("row_range_end", pa.int64()), ("layout", pa.string()), ("searchable", pa.bool_()), ("documents", pa.int64()),
    ("text_fields", pa.list_(pa.string())), ("tokenizer", pa.string()), ("tantivy_version", pa.string()),
    ("rows_in_range", pa.int64()), ("table_rows", pa.int64()), ("coverage", pa.float64()), ("problem", pa.string()),
])


def full_text_indexes(table, snapshot_id: int | None = None) -> pa.Table:
    """``$full_text_indexes``: per full-text index file, its layout, documents, tokenizer and coverage."""
    return from_rows(full_text_index_rows(table, snapshot_id), FULL_TEXT_INDEXES)


def _matches(table, text: str, snapshot_id, field, limit) -> tuple[list[tuple[float, int, str]], list[GlobalIndexFile]]:
    files = full_text_files(table, snapshot_id, field)
    if not files:
        raise IndexCoreError("the table has no full-text global index" + (f" on {field!r}" if field else ""))
    hits, opened, problems = [], [], []
    for gif in files:
        try:
            index = FullTextIndex(table.storage.open(gif.path))
        except IndexCoreError as exc:
            problems.append(f"{gif.entry.index_file.file_name}: {exc.message}")
            continue
        opened.append(gif)
        lo = gif.row_range[0]
        hits.extend((-score, lo + local, gif.entry.index_file.file_name) for local, score in index.search(text, limit))
    if not opened:
        raise IndexCoreError("no full-text index could be searched: " + "; ".join(problems[:3]))
    return sorted(hits), opened


def search_text(table, text: str, limit: int | None = 10, snapshot_id: int | None = None,
                field: str | None = None) -> pa.Table:
    """Rows matching ``text`` by the table's full-text indexes, best score first: ``rank``,
    ``_ROW_ID``, ``score``, ``index_file``, then the table's columns (every match when ``limit`` is None)."""
    hits, _ = _matches(table, text, snapshot_id, field, limit)
    hits = hits if limit is None else hits[:limit]
    rows = read_with_row_ids(table, snapshot_id, row_ids={h[1] for h in hits})
    by_id = {r[ROW_ID]: r for r in rows.to_pylist()}
    out = [{"rank": i + 1, ROW_ID: rid, "score": -neg, "index_file": name,
            **{c: v for c, v in by_id.get(rid, {}).items() if c != ROW_ID}} for i, (neg, rid, name) in enumerate(hits)]
    if not out:
        return pa.table({"rank": pa.array([], pa.int64()), ROW_ID: pa.array([], pa.int64()),
                         "score": pa.array([], pa.float64()), "index_file": pa.array([], pa.string())})
    return pa.Table.from_pylist(out)


def check_term(table, term: str, snapshot_id: int | None = None, field: str | None = None) -> dict:
    """The row ids the index matches for ``term`` against those a scan of the text column finds
    (rows of the searched files' row ranges holding any of the term's words, case-insensitive)."""
    if term.strip().startswith("{"):
        raise IndexCoreError("the scan check takes plain words, not a JSON query")
    words = {w.lower() for w in _WORD.findall(term)}
    if not words:
        raise IndexCoreError(f"no word in the term {term!r}")
    hits, opened = _matches(table, term, snapshot_id, field, None)
    column = opened[0].field.name
    scanned = read_with_row_ids(table, snapshot_id, [column])
    ranges = [g.row_range for g in opened]
    found = set()
    for rid, text in zip(scanned.column(ROW_ID).to_pylist(), scanned.column(column).to_pylist(), strict=True):
        if text is not None and any(lo <= rid <= hi for lo, hi in ranges) and \
                words & {w.lower() for w in _WORD.findall(text)}:
            found.add(rid)
    index_ids = {h[1] for h in hits}
    return {"term": term, "field": column, "index_rows": len(index_ids), "scan_rows": len(found),
            "both": len(index_ids & found), "index_only": sorted(index_ids - found),
            "scan_only": sorted(found - index_ids), "agrees": index_ids == found,
            "rows_scanned": scanned.num_rows, "files": [g.entry.index_file.file_name for g in opened]}


register_view("full_text_indexes", full_text_indexes)
