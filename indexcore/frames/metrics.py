"""Frames the explorer charts beyond the views: overviews, skew, lookups, pruning, trends, explain.

Per-file and per-table listings live in :mod:`indexcore.views` (Paimon's system tables and our
index views); the frames here are derived from those views or from evaluation (explain,
what-if). Every function reads through a :class:`indexcore.warehouse.Table` (read-only) and
returns plain frames, so the Streamlit pages, notebooks and :mod:`indexcore.frames.figures` share one
computation. A part that cannot be read becomes a row with an ``error`` (or is listed by the
caller's problems); the rest of the frame is still filled. ``progress(done, total, what)`` is
called while long loops run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import pandas as pd

from indexcore.analysis.balance import (
    DEFAULT_COMPACTION_DENSITY,
    compaction_hint,
    dv_by_bucket,
    hash_balance,
    size_skew,
)
from indexcore.errors import IndexCoreError
from indexcore.expr import Predicate
from indexcore.formats import FILE_INDEX_ORDER as FILE_INDEX_TYPES
from indexcore.formats import supported_index_types
from indexcore.formats.base import REMAIN, SKIP, BitmapResult, FileIndexResult
from indexcore.scan.file_index import FileIndexPredicate
from indexcore.scan.stats import test_predicate_on_stats
from indexcore.views import view
from indexcore.views.census import iter_file_indexes, summaries
from indexcore.views.common import (
    UNPARTITIONED,
    dv_cardinality,
    file_cols,
    partition_label,
    partition_types,
)
from indexcore.views.indexes import target_row_num
from indexcore.warehouse.file_sample import decode_sample, sample_files
from indexcore.warehouse.model import DELETION_VECTORS, HASH, LiveFile

Progress = Callable[[int, int, str], None]



def _tick(progress: Progress | None, done: int, total: int, what: str) -> None:
    if progress is not None:
        progress(done, total, what)


def _plan(table, snapshot_id: int | None):
    return table.plan(snapshot_id)


# ---------------------------------------------------------------------------------------
# Warehouse and table overview


def index_census(table, snapshot_id: int | None = None) -> tuple[set[str], pd.DataFrame]:
    """The file index kinds the snapshot's containers hold, and the ``$file_indexes`` rows that
    cannot be used (unreadable container, column missing from the file's schema, undecoded
    kind). Read from that view, which is built from container heads once per snapshot and kept
    on the table, so every page and frame asking shares one census. A corrupt blob inside a
    readable container shows on its kind's page."""
    frame = view(table, "file_indexes", snapshot_id).to_pandas()
    if frame.empty:
        return set(), frame
    return set(frame["index_type"].dropna()), frame[frame["error"].notna()]


def table_overview(table, snapshot_id: int | None = None) -> dict[str, Any]:
    """One table in numbers: files, rows, bytes, index kinds, DVs and problems.

    File indexes are counted from their container heads (:func:`index_census`).
    """
    snap = table.snapshot(snapshot_id)
    plan = _plan(table, snapshot_id)
    kinds, unusable = index_census(table, snapshot_id)
    index_errors = len(unusable)
    for e in plan.index_entries:
        kinds.add(e.index_file.index_type)
    dv_files = [lf for lf in plan.files if lf.deletion_vector is not None]
    schema = table.schema()
    return {
        "table": table.name,
        "snapshot": snap.id if snap else None,
        "primary_keys": ", ".join(schema.primary_keys),
        "partition_keys": ", ".join(schema.partition_keys),
        "bucket": schema.bucket,
        "files": len(plan.files),
        "rows": sum(lf.file.row_count for lf in plan.files),
        "size_bytes": sum(lf.file.file_size for lf in plan.files),
        "index_kinds": ", ".join(sorted(kinds)),
        "files_with_file_index": sum(1 for lf in plan.files if lf.has_file_index),
        "dv_files": len(dv_files),
        "deleted_rows": sum(dv_cardinality(table, lf) or 0 for lf in dv_files),
        "problems": len(unreadable_frame(table, snapshot_id)) + index_errors,
    }


def warehouse_overview(warehouse, progress: Progress | None = None) -> pd.DataFrame:
    """One row per table (see :func:`table_overview`); a table that cannot be opened gets an error."""
    names = warehouse.tables()
    rows = []
    for i, name in enumerate(names):
        _tick(progress, i, len(names), name)
        try:
            rows.append(table_overview(warehouse.table(name)))
        except IndexCoreError as exc:
            rows.append({"table": name, "error": str(exc)})
    _tick(progress, len(names), len(names), "done")
    frame = pd.DataFrame(rows)
    if "error" not in frame.columns:
        frame["error"] = None
    return frame


def unreadable_frame(table, snapshot_id: int | None = None) -> pd.DataFrame:
    """The manifests, index manifests and other metadata of the table and snapshot that could
    not be read (each once): the files they list are missing from every frame. No file index
    is opened, so a page that only names these pays for the plan alone."""
    rows, seen = [], set()
    for p in _plan(table, snapshot_id).problems + table.problems:
        key = (p.path, p.structure, p.reason)
        if key not in seen:
            seen.add(key)
            rows.append(p.to_dict())
    return pd.DataFrame(rows, columns=["path", "structure", "reason"])


def problems_frame(table, snapshot_id: int | None = None) -> pd.DataFrame:
    """:func:`unreadable_frame` plus the file indexes that cannot be used (:func:`index_census`:
    heads only, so it stays cheap at 50,000 files)."""
    rows = unreadable_frame(table, snapshot_id).to_dict("records")
    rows += [{"path": r.index_file_path or f"{r.file_path} (embedded file index)", "structure": "file index",
              "reason": r.error} for r in index_census(table, snapshot_id)[1].itertuples(index=False)]
    return pd.DataFrame(rows, columns=["path", "structure", "reason"])


def schema_history(table) -> pd.DataFrame:
    """Every field of every schema version, by field id, with what changed since the previous one."""
    rows = []
    previous: dict[int, Any] = {}
    for schema in table.schemas():
        current = {f.id: f for f in schema.fields}
        for f in schema.fields:
            old = previous.get(f.id)
            if not previous:
                change = ""
            elif old is None:
                change = "added"
            elif old.name != f.name:
                change = f"renamed from {old.name}"
            elif old.type.sql() != f.type.sql():
                change = f"type from {old.type.sql()}"
            else:
                change = ""
            rows.append({"schema_id": schema.id, "field_id": f.id, "name": f.name, "type": f.type.sql(),
                         "primary_key": f.name in schema.primary_keys,
                         "partition_key": f.name in schema.partition_keys, "change": change})
        for fid, f in previous.items():
            if fid not in current:
                rows.append({"schema_id": schema.id, "field_id": fid, "name": f.name, "type": f.type.sql(),
                             "primary_key": False, "partition_key": False, "change": "dropped"})
        previous = current
    return pd.DataFrame(rows, columns=["schema_id", "field_id", "name", "type", "primary_key",
                                       "partition_key", "change"])


# ---------------------------------------------------------------------------------------
# Files


def top_values(values: pd.DataFrame, n: int = 20) -> pd.DataFrame:
    """Aggregate a ``$bitmap_values`` frame over files: the ``n`` most frequent values."""
    if values.empty:
        return pd.DataFrame(columns=["value", "cardinality", "files"])
    agg = values.groupby("value", as_index=False).agg(cardinality=("cardinality", "sum"),
                                                       files=("file_name", "nunique"))
    return agg.sort_values(["cardinality", "value"], ascending=[False, True]).head(n).reset_index(drop=True)


def bitmap_lookup(table, column: str, value_text: str, snapshot_id: int | None = None,
                  sample: int | None = None) -> pd.DataFrame:
    """Per file (``sample``: that many files): the rows a point lookup ``column = value`` finds
    and the bytes it reads."""
    from indexcore.expr import parse_where

    types = partition_types(table)
    rows = []
    literals: dict[int, Any] = {}  # per file schema: the value as that schema's column type
    for blob in iter_file_indexes(table, snapshot_id, ["bitmap"], column, sample=sample):
        if blob.reader is None or blob.empty:
            continue
        if value_text.strip().upper() == "NULL":
            literal = None
        else:
            schema_id = blob.file.file.schema_id
            if schema_id not in literals:
                row_type = table.file_schema(blob.file).row_type()
                literals[schema_id] = parse_where(f"{_quote(column)} = {value_text}", row_type).literals[0]
            literal = literals[schema_id]
        found = blob.reader.null_bitmap() if literal is None else blob.reader.bitmap_for(literal)
        rows.append({**file_cols(blob.file, types, table.caches.labels), "version": blob.reader.version,
                     "matching_rows": len(found), "lookup_bytes": blob.reader.lookup_bytes(literal),
                     "index_size": blob.size})
    return pd.DataFrame(rows, columns=["file_name", "partition", "bucket", "row_count", "version",
                                       "matching_rows", "lookup_bytes", "index_size"])


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


LAYOUT_MAX_FILES = 100


def bitmap_layout_compare(table, column: str, snapshot_id: int | None = None,
                          index_block_size: str = "16kb", max_files: int | None = LAYOUT_MAX_FILES) -> pd.DataFrame:
    """The same bitmap rebuilt in memory as V1 and as V2: total size, head size and point-lookup
    bytes of the most frequent value, per file (never written anywhere); the first
    ``max_files`` files holding that bitmap (None: all), as rebuilding costs a pass per row."""
    from indexcore.formats.bitmap import BitmapReader, BitmapWriter
    from indexcore.io import BytesSource

    types = partition_types(table)
    rows = []
    rebuilt_files = 0
    for blob in iter_file_indexes(table, snapshot_id, ["bitmap"], column):
        if blob.reader is None or blob.empty:
            continue
        if max_files is not None and rebuilt_files >= max_files:
            break
        rebuilt_files += 1
        reader = blob.reader
        n = reader.row_count
        values: list[Any] = [None] * n
        for value, _card in reader.dictionary():
            for r in reader.bitmap_for(value):
                if r < n:
                    values[r] = value
        dictionary = list(reader.dictionary())
        frequent = max(dictionary, key=lambda vc: vc[1])[0] if dictionary else None
        for version in (1, 2):
            writer = BitmapWriter(blob.dtype, {"version": str(version), "index-block-size": index_block_size})
            for v in values:
                writer.write(v)
            rebuilt = BitmapReader(blob.dtype, BytesSource(writer.serialized_bytes()), {})
            rows.append({**file_cols(blob.file, types, table.caches.labels), "layout": f"V{version}",
                         "actual": version == reader.version, "size": rebuilt.source.size,
                         "head_bytes": rebuilt.meta.head_size,
                         "lookup_bytes": rebuilt.lookup_bytes(frequent) if frequent is not None else None})
    return pd.DataFrame(rows, columns=["file_name", "partition", "bucket", "row_count", "layout", "actual",
                                       "size", "head_bytes", "lookup_bytes"])


# ---------------------------------------------------------------------------------------
# Range-bitmap and BSI


def range_frame(table, snapshot_id: int | None = None, progress: Progress | None = None,
                sample: int | None = None) -> pd.DataFrame:
    """Per range-bitmap / BSI index (``sample``: of that many files): value range, nulls,
    dictionary size, slices and bytes."""
    types = partition_types(table)
    rows = []
    for blob, s in summaries(table, snapshot_id, ["range-bitmap", "bsi"], progress, sample=sample):
        row = {**file_cols(blob.file, types, table.caches.labels), "column": blob.column, "index_type": blob.index_type,
               "size": blob.size, "error": s.get("error")}
        if "min" in s:
            row.update({"min": s.get("min"), "max": s.get("max"), "null_count": s.get("null_count"),
                        "dictionary_size": s.get("dictionary_size"), "slice_count": s.get("slice_count"),
                        "chunk_count": s.get("chunk_count")})
        rows.append(row)
    frame = pd.DataFrame(rows, columns=[
        "file_name", "partition", "bucket", "row_count", "column", "index_type", "size", "min", "max",
        "null_count", "dictionary_size", "slice_count", "chunk_count", "error"])
    for col in ("min", "max"):
        frame[col] = frame[col].map(lambda v: v if v is None or isinstance(v, int | float) else str(v))
    return frame


def file_stats(table, live_file: LiveFile) -> dict[str, tuple[Any, Any, int | None]]:
    """Latest-schema column -> (min, max, null count) of one file, as explain's stats stage reads
    them (:func:`~indexcore.scan.explain.column_stats`: mapped by field id across evolution)."""
    from indexcore.scan.explain import column_stats

    return column_stats(live_file, table.schema(), table.file_schema(live_file))


def result_label(result: FileIndexResult) -> str:
    """``SKIP``, ``REMAIN`` or ``N rows`` for one index result."""
    if isinstance(result, BitmapResult):
        return f"{len(result.bitmap)} rows" if len(result.bitmap) else "SKIP (0 rows)"
    if result is SKIP:
        return "SKIP"
    if result is REMAIN:
        return "REMAIN"
    return "REMAIN" if result.remain() else "SKIP"


def prune_by_index(table, predicate: Predicate, index_types: Iterable[str], snapshot_id: int | None = None,
                   progress: Progress | None = None, sample: int | None = None) -> pd.DataFrame:
    """Per live file (``sample``: of that many files with a file index, the sample the index views
    decode; all files when it covers them): the statistics decision and each index type's answer
    to ``predicate``.

    ``stats`` is ``may match`` / ``SKIP`` from min/max/null counts; ``<type>`` is that type's
    file-index answer alone, ``no index`` where the file has no index of that type that could
    skip it (:func:`~indexcore.scan.explain.pruning_index_types`: e.g. a BSI on another
    column, or an OR branch on an unindexed one); ``rows_left`` the rows the index keeps.
    """
    from indexcore.scan.explain import container_index_types, pruning_index_types

    index_types = list(index_types)
    types = partition_types(table)
    files = decode_sample(_plan(table, snapshot_id).files, sample)
    rows = []
    for i, lf in enumerate(table.iter_prefetched(files, dv=False)):
        _tick(progress, i, len(files), lf.file.file_name)
        row = {**file_cols(lf, types, table.caches.labels)}
        row["stats"] = "may match" if test_predicate_on_stats(predicate, lf.file.row_count,
                                                              file_stats(table, lf)) else "SKIP"
        schema = table.file_schema(lf)
        container = None
        if lf.has_file_index:
            try:  # the table's kept head and readers: a page's summaries opened them already
                container = table.index_container(lf)
            except IndexCoreError as exc:
                row["error"] = str(exc)
        usable = () if container is None else pruning_index_types(predicate, container_index_types(container))
        for itype in index_types:
            if itype not in usable:  # none of this kind, or none that can answer the predicate
                row[itype] = "no index"
                continue
            only = _OnlyType(container, itype)
            try:
                evaluator = FileIndexPredicate(only, schema.row_type(),
                                               lambda c, t, s=schema: s.file_index_options(c, t))
                result = evaluator.evaluate(predicate)
                row[itype] = result_label(result)
                if isinstance(result, BitmapResult):
                    row[f"{itype} rows_left"] = len(result.bitmap)
                else:
                    row[f"{itype} rows_left"] = 0 if not result.remain() else lf.file.row_count
            except IndexCoreError as exc:
                row[itype] = f"error: {exc.message}"
        rows.append(row)
    _tick(progress, len(files), len(files), "done")
    return pd.DataFrame(rows)


def prune_by_sql(table, sql: str, index_types: Iterable[str] = FILE_INDEX_TYPES,
                 snapshot_id: int | None = None, sample: int | None = None) -> pd.DataFrame:
    """:func:`prune_by_index` for a SQL ``WHERE`` condition over the latest schema."""
    from indexcore.expr import parse_where

    return prune_by_index(table, parse_where(sql, table.schema().row_type()), index_types, snapshot_id,
                          sample=sample)


class _OnlyType:
    """A container view that shows only the entries of one index type."""

    def __init__(self, container, index_type: str):
        self._container = container
        self.head = _FilteredHead(container.head, index_type)

    def reader(self, entry, dtype, options=None):
        return self._container.reader(entry, dtype, options)


class _FilteredHead:
    def __init__(self, head, index_type: str):
        self._head, self._type = head, index_type

    def entries_for(self, column: str):
        return [e for e in self._head.entries_for(column) if e.index_type == self._type]


# ---------------------------------------------------------------------------------------
# Deletion vectors


def dv_trend(table, max_snapshots: int = 50, progress: Progress | None = None) -> pd.DataFrame:
    """Rows, deleted rows and density of the live files for the latest ``max_snapshots`` snapshots.

    Walks the snapshots oldest first, each built from the previous one by its delta manifests
    (:func:`indexcore.warehouse.history.walk_snapshots`), so every manifest is decoded once.
    """
    from indexcore.warehouse.history import live_dv_ranges, walk_snapshots

    ids = table.snapshot_ids()[-max_snapshots:]
    bitmap64 = table.core_options.deletion_vectors_bitmap64
    decoded: dict[tuple, int | None] = {}  # (DV file, offset) -> cardinality, for ranges without one

    def cardinality(r, path: str) -> int:
        if r.cardinality is not None:
            return r.cardinality
        key = (path, r.offset)
        if key not in decoded:
            try:
                decoded[key] = table.read_dv_range(r, path, bitmap64).cardinality
            except IndexCoreError:
                decoded[key] = None
        return decoded[key] or 0

    rows = []
    for i, state in enumerate(walk_snapshots(table, ids)):
        _tick(progress, i, len(ids), f"snapshot {state.snapshot.id}")
        deleted = dv_files = 0
        for _entry, (r, path) in live_dv_ranges(table, state):
            dv_files += 1
            deleted += cardinality(r, path)
        total = state.row_count
        rows.append({"snapshot_id": state.snapshot.id, "row_count": total, "deleted": deleted,
                     "density": deleted / total if total else 0.0, "dv_files": dv_files})
    _tick(progress, len(ids), len(ids), "done")
    return pd.DataFrame(rows, columns=["snapshot_id", "row_count", "deleted", "density", "dv_files"])


# ---------------------------------------------------------------------------------------
# Dynamic-bucket hash index


# ---------------------------------------------------------------------------------------
# Explain and what-if (frames over :mod:`.explain` and :mod:`.whatif`)


def funnel_frame(funnel: dict[str, dict[str, int]]) -> pd.DataFrame:
    """An explain funnel (stage -> files, rows, bytes kept and skipped, index bytes) as a frame in stage order."""
    from indexcore.scan.explain import FUNNEL_KEYS

    return pd.DataFrame([{"stage": k, **{c: v.get(c, 0) for c in FUNNEL_KEYS}} for k, v in funnel.items()],
                        columns=["stage", *FUNNEL_KEYS])


def explain_frames(table, sql: str, snapshot_id: int | None = None, verify: bool = False,
                   progress: Progress | None = None) -> dict[str, Any]:
    """:func:`.explain.explain` as frames: ``files``, ``funnel``, ``problems``, ``violations``."""
    from indexcore.scan.explain import explain

    ex = explain(table, sql, snapshot_id=snapshot_id, verify=verify, progress=progress)
    files = cells_as_text(ex.to_frame())
    if not partition_types(table):
        files["partition"] = files["partition"].replace("", UNPARTITIONED)
    return {"files": files, "funnel": funnel_frame(ex.funnel), "sql": ex.sql,
            "problems": pd.DataFrame([p.to_dict() for p in ex.problems], columns=["path", "structure", "reason"]),
            "violations": pd.DataFrame(ex.violations), "index_used": ex.index_used}


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


def whatif_frames(hypothetical, sql: str, verify: bool = False, progress: Progress | None = None) -> dict[str, Any]:
    """:func:`.whatif.evaluate_hypothetical` as frames: per-file ``files``, ``totals``, ``problems``."""
    from indexcore.analysis.whatif import evaluate_hypothetical

    result = evaluate_hypothetical(hypothetical, sql, verify=verify, progress=progress)
    files = cells_as_text(result.to_frame())
    if not files.empty:
        files.insert(0, "file_name", files["path"].map(lambda p: p.rsplit("/", 1)[-1]))
    totals = pd.DataFrame([{"what": k, **v} for k, v in result.totals.items() if "rows" in v],
                          columns=["what", "files", "rows", "bytes", "files_skipped", "rows_skipped",
                                   "bytes_skipped", "index_bytes"])
    problems = [p.to_dict() for p in hypothetical.problems + result.explanation.problems]
    return {"files": files, "totals": totals, "index_bytes": hypothetical.total_size,
            "problems": pd.DataFrame(problems, columns=["path", "structure", "reason"]),
            "violations": pd.DataFrame(result.violations)}


# ---------------------------------------------------------------------------------------
# A predicate worth explaining

SUGGEST_MAX_FILES = 500  # files the suggestion reads stats and indexes of, and explains candidates on
SUGGEST_TRIES = 6


def suggestion_sample(table, snapshot_id: int | None = None) -> tuple[list[LiveFile], int]:
    """The live files the predicate suggestion works on and how many there are in all: every file
    up to ``SUGGEST_MAX_FILES``, else a fixed random sample of whole buckets (primary-key tables)."""
    files = list(_plan(table, snapshot_id).files)
    pk = bool(table.schema().primary_keys)
    return sample_files(files, SUGGEST_MAX_FILES, pk, seed=0), len(files)


def _rarest(seen: dict[tuple[str, Any], tuple[set[str], int]], total: int) -> list[tuple[str, Any, int]]:
    """(column, value, files) held by the fewest files (then rows), rarest first."""
    out = [(col, value, len(files), rows) for (col, value), (files, rows) in seen.items() if 0 < len(files) <= total]
    out.sort(key=lambda c: (c[2], c[3], c[0], str(c[1])))
    return [c[:3] for c in out]


def _exact_stat(value: Any) -> bool:
    """Manifest stats truncate strings (``truncate(16)`` by default): only shorter ones are values."""
    return value is not None and not (isinstance(value, str | bytes) and len(value) >= 16)


def _bitmap_dictionaries(table, files: list[LiveFile], latest: dict) -> tuple[dict, dict[str, str], int]:
    """From the file-index heads of ``files``: (column, value) -> (files, rows) of each bitmap's
    dictionary (only bitmap blobs are opened, and kept on the table for the candidates' explains),
    the other indexed columns and their kind, and how many files have an index."""
    seen: dict[tuple[str, Any], tuple[set[str], int]] = {}
    other: dict[str, str] = {}
    indexed = 0
    for lf, head, _error in table.iter_index_heads(files):
        indexed += 1
        if head is None:
            continue
        schema = table.file_schema(lf)
        for entry in head.entries:
            field = latest.get(entry.column)
            try:
                dtype = schema.field(entry.column).type
            except KeyError:
                continue
            if field is None or dtype != field.type:
                continue
            if entry.index_type != "bitmap":
                if entry.index_type in FILE_INDEX_TYPES:
                    other.setdefault(entry.column, entry.index_type)
                continue
            try:
                if entry.empty:
                    raise IndexCoreError("empty bitmap")
                reader = table.index_reader(lf, entry, dtype, schema.file_index_options(entry.column, "bitmap"))
            except IndexCoreError:  # no dictionary to read: its manifest stats still give a value
                other.setdefault(entry.column, "bitmap")
                continue
            try:
                for value, card in reader.dictionary():
                    paths, rows = seen.get((entry.column, value), (set(), 0))
                    paths.add(lf.path)
                    seen[(entry.column, value)] = (paths, rows + card)
            except IndexCoreError:
                continue
    return seen, other, indexed


def predicate_candidates(table, snapshot_id: int | None = None) -> list[tuple[str, str]]:
    """(SQL, why) equalities that should prune this snapshot, best first.

    Values come from what the snapshot itself holds, so each one matches some rows: bitmap
    dictionaries (the value the fewest files and rows hold), the minimum of a bloom-filter,
    range-bitmap or BSI column in one file (from its manifest stats), a partition value, then
    any column whose per-file minimum lies in few files' [min, max]. Only the files of
    :func:`suggestion_sample` are looked at (heads, bitmap dictionaries and manifest stats).
    """
    from indexcore.expr import EQUAL, Leaf, predicate_to_sql

    schema = table.schema()
    row_type = schema.row_type()
    files, _total = suggestion_sample(table, snapshot_id)
    if not files:
        return []
    latest = {f.name: f for f in schema.fields}
    out: list[tuple[str, str]] = []

    def add(column: str, value: Any, why: str) -> None:
        if value is None or column not in latest:
            return
        try:
            sql = predicate_to_sql(Leaf(EQUAL, column, (value,)), row_type)
        except (TypeError, ValueError, KeyError):
            return
        if all(sql != s for s, _ in out):
            out.append((sql, why))

    bitmap_values_seen, other_index, indexed = _bitmap_dictionaries(table, files, latest)
    for column, value, n in _rarest(bitmap_values_seen, indexed)[:2]:
        add(column, value, f"bitmap-indexed `{column}`: a value {n} of {indexed} indexed files hold")

    stats = {lf.path: file_stats(table, lf) for lf in files if lf.file.schema_id == schema.id}
    for column, index_type in sorted(other_index.items(), key=lambda kv: FILE_INDEX_TYPES.index(kv[1])):
        lows = sorted(((s[column][0], p) for p, s in stats.items() if column in s and _exact_stat(s[column][0])),
                      key=lambda vp: (str(vp[0]), vp[1]))
        if lows:
            add(column, lows[len(lows) // 2][0], f"{index_type}-indexed `{column}`: the minimum of one file")

    if partition_types(table):
        parts: dict[tuple, int] = {}
        for lf in files:
            parts[lf.partition] = parts.get(lf.partition, 0) + 1
        if len(parts) > 1:
            smallest = min(parts, key=lambda p: (parts[p], str(p)))
            if smallest and smallest[0] is not None:
                key = schema.partition_keys[0]
                add(key, smallest[0], f"partition key `{key}`: one of {len(parts)} partitions")

    spans: dict[tuple[str, Any], tuple[set[str], int]] = {}
    for column in schema.field_names:
        ranges = [(s[column][0], s[column][1], p) for p, s in stats.items()
                  if column in s and _exact_stat(s[column][0]) and s[column][1] is not None]
        for low, _high, _p in ranges[:50]:
            try:
                spans[(column, low)] = ({p for lo, hi, p in ranges if lo <= low <= hi}, 0)
            except TypeError:
                break
    for column, value, n in _rarest(spans, len(stats) - 1)[:2]:
        add(column, value, f"`{column}`: a value whose stats range covers {n} of {len(files)} files")
    return out


def suggest_predicate(table, snapshot_id: int | None = None) -> dict[str, Any]:
    """A SQL equality that prunes this snapshot (see :func:`predicate_candidates`).

    Up to ``SUGGEST_TRIES`` candidates are explained on :func:`suggestion_sample`'s files (their
    index heads and readers kept on the table, so each blob is opened once for all); among
    those that leave at least one row and fewer files or rows than all, the one reading the
    fewest files, then rows, wins (the first to read one row of one file ends the search).
    Returns ``sql``, ``why``, ``files``, ``files_read``, ``rows``, ``rows_selected`` (over the
    files explained), ``sample_files`` and ``total_files`` (equal unless the snapshot has more
    than ``SUGGEST_MAX_FILES``) and ``prunes`` (False, with an ``IS NOT NULL`` fallback, when
    nothing the table holds prunes).
    """
    from indexcore.scan.explain import explain_files

    files, total = suggestion_sample(table, snapshot_id)
    plan = _plan(table, snapshot_id)
    schema = table.read_schema(snapshot_id, plan.snapshot)
    sid = plan.snapshot.id if plan.snapshot else None
    best: dict[str, Any] | None = None
    for sql, why in predicate_candidates(table, snapshot_id)[:SUGGEST_TRIES]:
        try:
            ex = explain_files(table, sql, files, schema=schema, snapshot_id=sid, kept=True)
        except IndexCoreError:
            continue
        read = sum(1 for f in ex.files if f.skipped_by is None)
        rows = sum(f.row_count - (f.dv_cardinality or 0) for f in ex.files)
        selected = sum(f.rows_after_dv for f in ex.files if f.skipped_by is None)
        if read == 0 or selected == 0 or (read == len(ex.files) and selected >= rows):
            continue  # selects nothing, or prunes nothing
        found = {"sql": sql, "why": why, "files": len(ex.files), "files_read": read, "rows": rows,
                 "rows_selected": selected, "prunes": True, "sample_files": len(files), "total_files": total}
        if best is None or (read, selected) < (best["files_read"], best["rows_selected"]):
            best = found
        if (read, selected) == (1, 1):  # one row of one file: no later candidate can do better
            break
    if best is not None:
        return best
    names = table.schema().field_names
    return {"sql": f"{names[0]} IS NOT NULL" if names else "TRUE", "why": "no equality on the data prunes",
            "files": None, "files_read": None, "rows": None, "rows_selected": None, "prunes": False,
            "sample_files": len(files), "total_files": total}


__all__ = [
    "DELETION_VECTORS", "HASH", "UNPARTITIONED", "bitmap_layout_compare", "bitmap_lookup", "cells_as_text",
    "DEFAULT_COMPACTION_DENSITY", "FILE_INDEX_TYPES", "compaction_hint", "dv_by_bucket", "dv_cardinality", "dv_trend", "explain_frames",
    "file_stats", "funnel_frame", "hash_balance", "iter_file_indexes", "partition_label", "predicate_candidates",
    "problems_frame", "prune_by_index", "prune_by_sql", "range_frame", "result_label", "schema_history",
    "size_skew", "suggest_predicate", "suggestion_sample", "supported_index_types", "table_overview",
    "target_row_num", "top_values", "unreadable_frame", "warehouse_overview", "whatif_frames",
]
