"""The index advisor: which file indexes earn their bytes for a workload, and which would.

:func:`advise` replays :func:`indexcore.scan.explainer.explain` for every read of the table
the workload makes (:mod:`.workload`), then:

* **existing indexes** (one entry per table column x index type found in live files or
  configured by ``file-index.<type>.columns``): the files, rows and data bytes each one
  skips on its own among the files that partition, bucket, level and statistics pruning keep
  (its answer alone, through :class:`.file_index.FileIndexPredicate` and the read path's
  :func:`.explain.read_path_result`), its bytes stored, and a verdict: ``wrong column``
  (an entry names a column the file's schema lacks, or a name that now means another field),
  ``never prunes`` (nothing skipped across the workload, or the read path ignores file
  indexes), ``stale`` (present in files but no longer configured), ``missing`` (configured
  but absent from some live files), ``oversized`` / ``over fpp`` (a bloom filter far larger
  than its files' rows need, or holding more distinct keys than its ``items``; the rule and the
  ``items`` that fits are :func:`.bloom_sizing.column_sizing`'s), else ``earns its keep``.
* **candidates**: every column the workload filters on x the kinds that answer how it is
  filtered: ``bitmap`` for equality on a low-cardinality column (at most
  :data:`LOW_CARDINALITY_MAX` distinct values and :data:`LOW_CARDINALITY_RATIO` of the rows
  per file), ``bloom-filter`` for equality otherwise (``items`` = the largest distinct count
  per file, ``fpp`` :data:`BLOOM_FPP`), ``range-bitmap`` and ``bsi`` for ranges (where the
  column type allows). Each is built as a hypothetical index by :mod:`.whatif` on a sample
  of files (all of them with a ``measure`` callback, e.g. on Spark) and measured query by query; sample figures
  are scaled to the table by files, rows and bytes. A candidate's claim per query is the
  files the read path would skip with it added to today's indexes.
* **ranking**: weighted data bytes a candidate skips beyond today's indexes, per byte it
  stores (``score``); its build time on the sample is reported beside it. The best positive
  kind per column is ``recommended``.
* **statements**: ``ALTER TABLE ... SET`` for recommended candidates and bloom resizing,
  ``UNSET`` (Flink: ``RESET``) for indexes that never prune, and ``CALL
  sys.rewrite_file_index('db.t')`` so existing files get the new layout.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from indexcore.analysis.bloom_sizing import OK, OVER_FPP, OVERSIZED, column_sizing
from indexcore.analysis.workload import EQUALITY, RANGE, Query, Scan, parse_workload, scans
from indexcore.errors import IndexCoreError
from indexcore.expr import and_all, conjuncts
from indexcore.formats.base import BitmapResult, FileIndexResult
from indexcore.formats.registry import (
    BITMAP,
    BLOOM_FILTER,
    BSI,
    FILE_INDEX_TYPES,
    RANGE_BITMAP,
    supported_index_types,
)
from indexcore.paimon.options import CoreOptions
from indexcore.scan.explainer import explain
from indexcore.scan.file_index import FileIndexPredicate, read_path_result
from indexcore.scan.records import Explanation
from indexcore.scan.stats import devolved, field_map
from indexcore.warehouse.file_sample import sample_files
from indexcore.warehouse.model import LiveFile, Problem

Progress = Callable[[int, int, str], None]

DEFAULT_SAMPLE = 32
LOW_CARDINALITY_MAX = 1000
LOW_CARDINALITY_RATIO = 0.125
BLOOM_FPP = 0.01
REACHED_INDEX = (None, "index")
VERDICTS = ("wrong column", "never prunes", "stale", "missing", OVERSIZED, OVER_FPP, "earns its keep")


@dataclass
class Skipped:
    """Files, rows and data bytes skipped, summed over queries (``weighted_bytes``: x weight)."""

    files: int = 0
    rows: int = 0
    bytes: int = 0
    weighted_bytes: float = 0.0

    def add(self, files: int, rows: int, nbytes: int, weight: float) -> None:
        self.files += files
        self.rows += rows
        self.bytes += nbytes
        self.weighted_bytes += nbytes * weight

    def scaled(self, f_files: float, f_rows: float, f_bytes: float) -> Skipped:
        return Skipped(round(self.files * f_files), round(self.rows * f_rows), round(self.bytes * f_bytes),
                       self.weighted_bytes * f_bytes)

    def to_json(self) -> dict[str, Any]:
        return {"files": self.files, "rows": self.rows, "bytes": self.bytes,
                "weighted_bytes": round(self.weighted_bytes, 3)}


@dataclass
class QueryRun:
    """One read of the table: its scan and today's explanation (None when it could not run)."""

    scan: Scan
    explanation: Explanation | None = None
    error: str | None = None

    @property
    def name(self) -> str:
        return self.scan.name

    def to_json(self, details: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {"query": self.name, "weight": self.scan.query.weight, "where": self.scan.where,
                               "filters": {k: sorted(v) for k, v in self.scan.filters.items()}}
        if self.explanation is not None:
            out["funnel"] = self.explanation.funnel
            out["index_used"] = self.explanation.index_used
        if self.error:
            out["error"] = self.error
        if self.scan.notes:
            out["notes"] = list(self.scan.notes)
        if details and self.explanation is not None:
            out["explain"] = self.explanation.to_json()
        return out


@dataclass
class ExistingIndex:
    """One index type on one table column as the live files carry it (or the options ask)."""

    column: str
    index_type: str
    configured: bool
    options: dict[str, str]
    live_files: int
    blobs: Mapping[str, Any] = field(default_factory=dict, repr=False)  # data file path -> IndexBlob
    bytes: int = 0
    missing: list[str] = field(default_factory=list)
    wrong_column: list[dict[str, str]] = field(default_factory=list)
    skipped: Skipped = field(default_factory=Skipped)
    queries: list[dict[str, Any]] = field(default_factory=list)
    filtered_by: list[str] = field(default_factory=list)
    findings: list[dict[str, Any]] = field(default_factory=list)
    suggested_options: dict[str, str] = field(default_factory=dict)

    @property
    def verdict(self) -> str:
        kinds = {f["verdict"] for f in self.findings}
        return next((v for v in VERDICTS if v in kinds), "earns its keep")

    def to_json(self, details: bool = False) -> dict[str, Any]:
        out = {"column": self.column, "index_type": self.index_type, "configured": self.configured,
               "options": self.options, "files": len(self.blobs), "live_files": self.live_files,
               "bytes": self.bytes, "skipped": self.skipped.to_json(), "verdict": self.verdict,
               "findings": self.findings, "suggested_options": self.suggested_options,
               "queries": self.queries if details else [
                   {k: v for k, v in q.items() if k != "skipped_files"} for q in self.queries]}
        if self.missing:
            out["missing_on"] = self.missing if details else len(self.missing)
        if self.wrong_column:
            out["wrong_column"] = self.wrong_column
        return out


@dataclass
class Candidate:
    """A hypothetical index measured against the workload (figures scaled to the whole table)."""

    column: str
    index_type: str
    options: dict[str, str]
    reason: str
    sample_files: int = 0
    total_files: int = 0
    sample_bytes: int = 0
    estimated_bytes: int = 0
    build_seconds: float = 0.0
    skipped: Skipped = field(default_factory=Skipped)
    extra: Skipped = field(default_factory=Skipped)
    queries: list[dict[str, Any]] = field(default_factory=list)
    recommended: bool = False
    rank: int = 0
    problems: list[Problem] = field(default_factory=list)

    @property
    def score(self) -> float:
        """Weighted data bytes skipped beyond today's indexes per byte stored."""
        return self.extra.weighted_bytes / max(self.estimated_bytes, 1)

    def to_json(self, details: bool = False) -> dict[str, Any]:
        return {"rank": self.rank, "column": self.column, "index_type": self.index_type, "options": self.options,
                "reason": self.reason, "recommended": self.recommended, "score": round(self.score, 3),
                "estimated_bytes": self.estimated_bytes, "build_seconds": round(self.build_seconds, 3),
                "measured_on": {"files": self.sample_files, "of": self.total_files,
                                "index_bytes": self.sample_bytes},
                "skipped": self.skipped.to_json(), "extra_skipped": self.extra.to_json(),
                "queries": self.queries if details else [
                    {k: v for k, v in q.items() if k not in ("skipped_files", "files")} for q in self.queries],
                "problems": [p.to_dict() for p in self.problems]}


@dataclass
class Advice:
    """Everything :func:`advise` found; ``to_json`` is the CLI's ``--format json``."""

    table: str
    snapshot_id: int | None
    runs: list[QueryRun]
    skipped_queries: list[dict[str, Any]]
    existing: list[ExistingIndex]
    candidates: list[Candidate]
    statements: list[str]
    problems: list[Problem] = field(default_factory=list)

    def to_json(self, details: bool = False) -> dict[str, Any]:
        seen, problems = set(), []
        for p in self.problems:
            key = (p.path, p.structure, p.reason)
            if key not in seen:
                seen.add(key)
                problems.append(p.to_dict())
        return {"table": self.table, "snapshot": self.snapshot_id,
                "queries": [r.to_json(details) for r in self.runs], "skipped_queries": self.skipped_queries,
                "existing": [e.to_json(details) for e in self.existing],
                "candidates": [c.to_json(details) for c in self.candidates],
                "statements": self.statements, "problems": problems}


# ---------------------------------------------------------------------------------------
# Existing indexes


def index_inventory(table, snapshot_id: int | None = None) -> tuple[list[ExistingIndex], list[Problem]]:
    """Every file index of a snapshot's live files, one entry per table column x index type
    (configured ones included even where no file carries them), with the files that carry it,
    the live files that should but do not (``missing``), and entries on the wrong column."""
    plan = table.plan(snapshot_id)
    problems: list[Problem] = []
    schema = table.read_schema(snapshot_id, plan.snapshot)
    sid = plan.snapshot.id if plan.snapshot else None
    return _existing_indexes(table, sid, schema, list(plan.files), problems), problems


def _table_column(schema, file_schema, column: str, schema_id: int) -> tuple[str, str | None]:
    """The table's current name for a file's indexed ``column`` (matched by field id), and why the
    index is on the wrong column (None when it is not)."""
    ff = file_schema.field(column) if column in file_schema.field_names else None
    tf = schema.field_by_id(ff.id) if ff is not None else None
    name = tf.name if tf is not None else column
    if ff is None:
        return name, f"column {column!r} is not in the file's schema (schema {schema_id})"
    if tf is None:
        return name, f"field {ff.id} ({column!r}) of the file is no longer a table column"
    if tf.name != column and column in schema.field_names:
        return name, f"built on field {ff.id}, which the table now calls {tf.name!r}; {column!r} is another field"
    return name, None


def _existing_indexes(table, snapshot_id: int | None, schema, files: Sequence[LiveFile],
                      problems: list[Problem]) -> list[ExistingIndex]:
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from indexcore.views import view
    from indexcore.views.census import Blobs, CensusBlobs

    configured = schema.core_options.configured_indexes()
    census = view(table, "file_indexes", snapshot_id)
    rows = CensusBlobs(table, census, files)
    groups: dict[tuple[str, str], ExistingIndex] = {}

    def group(column: str, index_type: str) -> ExistingIndex:
        key = (column, index_type)
        if key not in groups:
            groups[key] = ExistingIndex(column, index_type, key in configured,
                                        schema.file_index_options(column, index_type), len(files), Blobs(rows))
        return groups[key]

    for column, index_type in configured:
        group(column, index_type)
    # unreadable containers and unusable entries, in census (file) order
    bad = census.select(["file_path", "index_file_path", "column_name", "error"])
    bad = bad.filter(pc.or_(pc.is_valid(bad["error"]), pc.is_null(bad["column_name"]))).to_pylist()
    for r in bad:
        problems.append(Problem(r["index_file_path"] or r["file_path"], "file index",
                                r["error"] or ("unreadable" if r["column_name"] is None else "")))
    # the census grouped by (file schema, column, kind): a few keys over 180,000 rows, each placed
    # on its table column once (the name a later schema gives the field, or why it is the wrong column)
    numbered = census.select(["schema_id", "column_name", "index_type", "index_size_in_bytes"]).append_column(
        "row", pa.array(np.arange(census.num_rows, dtype=np.int64)))
    numbered = numbered.filter(pc.is_valid(numbered["column_name"]))
    placed: dict[tuple[str, str], list] = {}  # group -> [row arrays, wrong reasons] of its keys
    paths = census["file_path"]
    by_path = {lf.path: lf for lf in files}
    for k in numbered.group_by(["schema_id", "column_name", "index_type"], use_threads=False).aggregate(
            [("row", "list"), ("index_size_in_bytes", "sum")]).to_pylist():
        schema_id, column = k["schema_id"], k["column_name"]
        first = by_path[paths[k["row_list"][0]].as_py()]  # its files' schema, as the census read it
        name, wrong = _table_column(schema, table.file_schema(first), column, schema_id)
        g = group(name, k["index_type"])
        g.bytes += k["index_size_in_bytes_sum"] or 0
        at = placed.setdefault((g.column, g.index_type), [[], []])
        at[0].append(np.asarray(k["row_list"], dtype=np.int64))
        at[1].append(wrong)
    for key, (arrays, reasons) in placed.items():
        g = groups[key]
        order = np.concatenate(arrays)
        why = np.repeat(np.arange(len(reasons)), [len(a) for a in arrays])
        sort = np.argsort(order, kind="stable")
        order, why = order[sort], why[sort]
        in_order = paths.take(pa.array(order)).to_pylist()
        g.blobs.add(in_order, order.tolist())
        if any(reasons):
            g.wrong_column.extend({"path": p, "reason": reasons[w]} for p, w in zip(in_order, why.tolist(), strict=True)
                                  if reasons[w])
    ids = {f.name: f.id for f in schema.fields}
    has_field: dict[tuple[int, int], bool] = {}  # (file schema id, field id) -> the file has the field
    for (column, _), g in groups.items():
        if not g.configured or column not in ids:
            continue
        for lf in files:
            if lf.path in g.blobs:
                continue
            key = (lf.file.schema_id, ids[column])
            has = has_field.get(key)
            if has is None:
                has = has_field[key] = table.file_schema(lf).field_by_id(ids[column]) is not None
            if has:
                g.missing.append(lf.path)
    order = {n: i for i, n in enumerate(schema.field_names)}
    return sorted(groups.values(), key=lambda g: (order.get(g.column, len(order)), g.column,
                                                  FILE_INDEX_TYPES.index(g.index_type)
                                                  if g.index_type in FILE_INDEX_TYPES else 99))


def _index_alone(table, schema, lf: LiveFile, blob, predicate, deleted) -> FileIndexResult | None:
    """What the read path decides for one file with only this index (None: it cannot answer)."""
    if blob.reader is None:
        return None
    fs = table.file_schema(lf)
    pred = and_all(devolved(conjuncts(predicate), field_map(schema, fs)))
    if pred is None:
        return None
    raw = FileIndexPredicate.for_readers({blob.column: [blob.reader]}, fs.row_type()).evaluate(pred)
    return read_path_result(raw, lf.file.row_count, deleted, lf.bitmap64)


class _Deleted:
    """Deletion-vector positions per data file, read once."""

    def __init__(self, table, problems: list[Problem]):
        self.table, self.problems, self.cache = table, problems, {}

    def __call__(self, lf: LiveFile) -> Any:
        if lf.deletion_vector is None:
            return None
        if lf.path not in self.cache:
            try:
                dv = self.table.deletion_vector(lf)
                self.cache[lf.path] = None if dv is None else dv.positions
            except IndexCoreError as exc:
                self.problems.append(Problem(lf.dv_file_path or lf.path, "deletion vector", exc.message))
                self.cache[lf.path] = None
        return self.cache[lf.path]


def _measure_existing(table, schema, run: QueryRun, existing: list[ExistingIndex], by_path: dict,
                      deleted: _Deleted, problems: list[Problem]) -> None:
    ex = run.explanation
    fields = ex.predicate.fields()
    weight = run.scan.query.weight
    for g in existing:
        if g.column not in fields:
            continue
        g.filtered_by.append(run.name)
        files = rows = nbytes = 0
        paths = []
        if ex.index_used:
            for fd in ex.files:
                blob = g.blobs.get(fd.path)
                if blob is None or fd.skipped_by not in REACHED_INDEX:
                    continue
                lf = by_path[fd.path]
                try:
                    decision = _index_alone(table, schema, lf, blob, ex.predicate, deleted(lf))
                except IndexCoreError as exc:
                    problems.append(Problem(lf.index_path or lf.path, exc.structure or "file index", exc.message))
                    continue
                if decision is None:
                    continue
                base = max(fd.row_count - fd.dv_cardinality, 0)
                if not decision.remain():
                    files, rows, nbytes = files + 1, rows + base, nbytes + lf.file.file_size
                    paths.append(fd.path)
                elif isinstance(decision, BitmapResult):
                    rows += max(base - len(decision.bitmap), 0)
        g.skipped.add(files, rows, nbytes, weight)
        g.queries.append({"query": run.name, "weight": weight, "files_skipped": files, "rows_skipped": rows,
                          "bytes_skipped": nbytes, "skipped_files": paths})


def _verdicts(table, snapshot_id, existing: list[ExistingIndex], runs: list[QueryRun] | None,
              problems: list[Problem]) -> None:
    """Findings per index; ``runs`` None judges without a workload (no "never prunes")."""
    index_used = all(r.explanation.index_used for r in runs or () if r.explanation is not None)
    for g in existing:
        if g.wrong_column:
            g.findings.append({"verdict": "wrong column", "files": len(g.wrong_column),
                               "message": f"{len(g.wrong_column)} file(s) carry a {g.index_type} index whose "
                                          f"column does not match the file's schema: {g.wrong_column[0]['reason']}"})
        if not g.blobs or runs is None:
            pass
        elif not index_used:
            g.findings.append({"verdict": "never prunes", "message": "the read path does not use file indexes "
                               "here (primary-key table merging on read, or file-index.read.enabled=false)"})
        elif not g.filtered_by:
            g.findings.append({"verdict": "never prunes", "message": f"no query of the workload filters on {g.column}"})
        elif g.skipped.files == 0 and g.skipped.rows == 0:
            g.findings.append({"verdict": "never prunes",
                               "message": f"{len(g.filtered_by)} quer{'y' if len(g.filtered_by) == 1 else 'ies'} "
                                          f"filter on {g.column}, but it skipped no file or row"})
        if g.blobs and not g.configured:
            g.findings.append({"verdict": "stale", "files": len(g.blobs),
                               "message": f"{len(g.blobs)} file(s) carry it but file-index.{g.index_type}.columns "
                                          f"no longer lists {g.column}"})
        if g.missing:
            g.findings.append({"verdict": "missing", "files": len(g.missing),
                               "message": f"configured but absent from {len(g.missing)} of {g.live_files} live files"})
        if g.index_type == BLOOM_FILTER.name and g.blobs:
            _bloom_sizing(table, g)


def _bloom_sizing(table, g: ExistingIndex) -> None:
    """The column's sizing verdict (:func:`.bloom_sizing.column_sizing`) as a finding."""
    sizing = column_sizing(table, g.column, ((b.file, b.column, b.size) for b in g.blobs.values()
                                             if b.error is None and not b.empty))
    if sizing is None or sizing.verdict == OK:
        return
    g.suggested_options = {"items": str(sizing.recommended_items)}
    if sizing.verdict == OVERSIZED:
        g.findings.append({"verdict": OVERSIZED, "stored_bytes": sizing.bytes, "needed_bytes": sizing.needed_bytes,
                           "message": f"items={sizing.configured_items} stores {sizing.bytes} bytes where the "
                                      f"files' rows need {sizing.needed_bytes} at fpp {sizing.configured_fpp}; "
                                      f"items={sizing.recommended_items} fits"})
    else:
        g.findings.append({"verdict": OVER_FPP, "files": sizing.over_fpp_files,
                           "message": f"{sizing.over_fpp_files} of {sizing.files} filters hold more distinct keys "
                                      f"than items={sizing.configured_items}: more false positives than fpp "
                                      f"{sizing.configured_fpp}; items={sizing.recommended_items} fits"})


# ---------------------------------------------------------------------------------------
# Candidates


def _column_profile(table, schema, files: Sequence[LiveFile], columns: list[str],
                    problems: list[Problem]) -> dict[str, dict[str, int]]:
    """Per column: the largest distinct count and row count of a sampled file."""
    import pyarrow.compute as pc

    from indexcore.warehouse.data import read_data_file

    out = {c: {"max_distinct": 0, "max_rows": 0} for c in columns}
    for lf in files:
        try:
            data = read_data_file(table.storage, lf, table.file_schema(lf), schema, columns=columns)
        except IndexCoreError as exc:
            problems.append(Problem(lf.path, exc.structure or "data file", exc.message))
            continue
        for c in columns:
            distinct = pc.count_distinct(data.column(c), mode="only_valid").as_py()
            out[c]["max_distinct"] = max(out[c]["max_distinct"], distinct)
            out[c]["max_rows"] = max(out[c]["max_rows"], data.num_rows)
    return out


def candidate_kinds(dtype, filters: set[str], profile: dict[str, int]) -> list[tuple[str, dict[str, str], str]]:
    """(index type, options, why) worth trying for a column filtered as ``filters``."""
    supported = set(supported_index_types(dtype))
    distinct, rows = profile["max_distinct"], profile["max_rows"]
    low = distinct <= LOW_CARDINALITY_MAX and distinct <= max(1, LOW_CARDINALITY_RATIO * rows)
    out = []
    if filters & {EQUALITY, "null", "other"} or not filters & {RANGE}:
        if low and BITMAP.name in supported:
            out.append((BITMAP.name, {}, f"equality on a low-cardinality column (at most {distinct} distinct "
                                      f"values in a file of up to {rows} rows)"))
        elif EQUALITY in filters and BLOOM_FILTER.name in supported:
            out.append((BLOOM_FILTER.name, {"items": str(max(distinct, 1)), "fpp": str(BLOOM_FPP)},
                        f"equality on a high-cardinality column (up to {distinct} distinct values per file)"))
    if RANGE in filters:
        for kind in (RANGE_BITMAP.name, BSI.name):
            if kind in supported:
                out.append((kind, {}, "range conditions"))
    return out


def _measure_local(table, snapshot_id, cand: Candidate, sample: list[LiveFile], runs: list[QueryRun],
                   by_path: dict, progress: Progress | None) -> None:
    from indexcore.analysis.whatif import build_hypothetical_index, evaluate_hypothetical

    start = time.perf_counter()
    hyp = build_hypothetical_index(table, cand.column, cand.index_type, cand.options, snapshot_id=snapshot_id,
                                   files=sample)
    cand.build_seconds = time.perf_counter() - start
    cand.problems.extend(hyp.problems)
    cand.sample_bytes = hyp.total_size
    for run in runs:
        result = evaluate_hypothetical(hyp, run.explanation.predicate)
        per_file = []
        for wf in result.files:
            e = wf.existing
            reached = e.skipped_by in REACHED_INDEX
            alone = reached and wf.hypothetical_decision is not None and not wf.hypothetical_decision.remain()
            both = reached and wf.combined_decision is not None and not wf.combined_decision.remain()
            per_file.append({"path": wf.path, "existing_skipped": e.skipped_by == "index", "alone_skipped": alone,
                             "combined_skipped": both or e.skipped_by == "index",
                             "rows_existing": wf.rows_existing, "rows_hypothetical": wf.rows_hypothetical,
                             "rows_combined": wf.rows_combined, "base_rows": max(e.row_count - e.dv_cardinality, 0)
                             if reached else 0})
        _tally(cand, run, per_file, by_path)


# ``measure(column, index_type, options, wheres)`` builds a candidate on every live file and
# returns what the Spark what-if job returns (``total_size``, ``file_results``, ``task_errors``);
# the caller supplies it, so the advisor never imports the Spark layer above it
Measure = Callable[[str, str, dict, list[str]], dict]


def _measure_with(measure: Measure, table, cand: Candidate, runs: list[QueryRun], by_path: dict) -> None:
    start = time.perf_counter()
    out = measure(cand.column, cand.index_type, cand.options, [r.scan.where for r in runs])
    cand.build_seconds = time.perf_counter() - start
    cand.sample_bytes = out["total_size"]
    for err in out.get("task_errors", []):
        cand.problems.append(Problem(table.name, "spark task", str(err.get("error"))))
    for i, run in enumerate(runs):
        per_file = []
        for f in out["file_results"]:
            if len(f["predicates"]) <= i:
                continue
            r = f["predicates"][i]
            row_count = by_path[f["path"]].file.row_count if f["path"] in by_path else 0
            combined = not r["stats_pruned"] and (r["current_pruned"] or r["hypothetical_pruned"]
                                                  or (r["combined_rows"] == 0 and r["current_rows"] > 0))
            per_file.append({"path": f["path"], "existing_skipped": r["current_pruned"],
                             "alone_skipped": r["hypothetical_pruned"], "combined_skipped": combined,
                             "rows_existing": r["current_rows"], "rows_hypothetical": r["hypothetical_rows"],
                             "rows_combined": r["combined_rows"],
                             "base_rows": 0 if r["stats_pruned"] else row_count})
        _tally(cand, run, per_file, by_path)


def _tally(cand: Candidate, run: QueryRun, per_file: list[dict], by_path: dict) -> None:
    """Per-query claims of a candidate on the files it was measured on."""
    weight = run.scan.query.weight

    def size(p: str) -> int:
        return by_path[p].file.file_size if p in by_path else 0

    alone = [f for f in per_file if f["alone_skipped"]]
    extra = [f for f in per_file if f["combined_skipped"] and not f["existing_skipped"]]
    alone_rows = sum(f["base_rows"] - f["rows_hypothetical"] for f in per_file if f["base_rows"])
    extra_rows = sum(f["rows_existing"] - f["rows_combined"] for f in per_file)
    cand.skipped.add(len(alone), alone_rows, sum(size(f["path"]) for f in alone), weight)
    cand.extra.add(len(extra), extra_rows, sum(size(f["path"]) for f in extra), weight)
    cand.queries.append({
        "query": run.name, "weight": weight, "files_skipped": len(alone), "rows_skipped": alone_rows,
        "extra_files_skipped": len(extra), "extra_rows_skipped": extra_rows,
        "index_skipped_files": sorted(f["path"] for f in per_file if f["combined_skipped"]),
        "rows_read": sum(f["rows_combined"] for f in per_file), "files": per_file})


# ---------------------------------------------------------------------------------------
# Statements


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


# ---------------------------------------------------------------------------------------
# advise


def advise(table, workload: str | Sequence[Query], snapshot_id: int | None = None,
           sample: int | None = DEFAULT_SAMPLE, measure: Measure | None = None, seed: int = 0, dialect: str = "spark", progress: Progress | None = None) -> Advice:
    """Advise on ``table``'s file indexes for ``workload`` (file text or parsed queries).

    ``sample``: how many live files candidates are built on (None: all); with ``measure`` they
    are built and measured by it on every file (on Spark: :func:`indexcore.spark.jobs.what_if_measure`).
    ``progress(done, total, what)`` is called while it runs.
    """
    queries = parse_workload(workload) if isinstance(workload, str) else list(workload)
    plan = table.plan(snapshot_id)
    sid = plan.snapshot.id if plan.snapshot else None
    schema = table.read_schema(snapshot_id, plan.snapshot)
    files = list(plan.files)
    by_path = {lf.path: lf for lf in files}
    problems: list[Problem] = list(plan.problems)
    found, skipped_queries = scans(queries, table.name, schema.field_names)
    runs: list[QueryRun] = []
    for scan in found:
        if scan.where is None:
            skipped_queries.append({"query": scan.name, "reason": "reads the table without a filter"})
            continue
        runs.append(QueryRun(scan))
    existing = _existing_indexes(table, sid, schema, files, problems)
    deleted = _Deleted(table, problems)
    steps = len(runs) + 1
    done = 0

    def tick(what: str) -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(min(done, steps), steps, what)

    for run in runs:
        try:
            run.explanation = explain(table, run.scan.where, snapshot_id=sid)
        except IndexCoreError as exc:
            run.error = exc.message
            tick(run.name)
            continue
        _measure_existing(table, schema, run, existing, by_path, deleted, problems)
        tick(run.name)
    good = [r for r in runs if r.explanation is not None]
    _verdicts(table, sid, existing, good, problems)

    candidates = _candidates(table, sid, schema, files, good, existing, by_path, sample, measure,
                             seed, problems, progress)
    steps = done + 1
    tick("statements")
    statements = statements_for(table.name, dict(schema.options), existing, candidates, dialect)
    return Advice(table.name, sid, runs, skipped_queries, existing, candidates, statements, problems)


def _candidates(table, sid, schema, files, runs, existing, by_path, sample, measure, seed,
                problems, progress) -> list[Candidate]:
    have = {(g.column, g.index_type) for g in existing if g.blobs or g.configured}
    filters: dict[str, set[str]] = {}
    for r in runs:
        for col, kinds in r.scan.filters.items():
            if col in schema.field_names and col not in schema.partition_keys:
                filters.setdefault(col, set()).update(kinds)
    if not filters:
        return []
    chosen = files if measure else sample_files(files, sample, bool(schema.primary_keys), seed)
    if not chosen:  # sample=0, or no live file: nothing to build candidates on
        return []
    profile = _column_profile(table, schema, chosen, sorted(filters), problems)
    total = {"files": len(files), "rows": sum(lf.file.row_count for lf in files),
             "bytes": sum(lf.file.file_size for lf in files)}
    part = {"files": len(chosen), "rows": sum(lf.file.row_count for lf in chosen),
            "bytes": sum(lf.file.file_size for lf in chosen)}
    factor = {k: (total[k] / part[k] if part[k] else 0.0) for k in total}
    todo: list[Candidate] = []
    for col in sorted(filters, key=schema.field_names.index):
        for kind, options, why in candidate_kinds(schema.field(col).type, filters[col], profile[col]):
            if (col, kind) not in have:
                todo.append(Candidate(col, kind, options, why, len(chosen), len(files)))
    for i, cand in enumerate(todo):
        mine = [r for r in runs if cand.column in r.explanation.predicate.fields()]
        try:
            if measure:
                _measure_with(measure, table, cand, mine, by_path)
            else:
                _measure_local(table, sid, cand, chosen, mine, by_path, None)
        except IndexCoreError as exc:
            cand.problems.append(Problem(table.name, f"candidate {cand.index_type} on {cand.column}", exc.message))
        cand.estimated_bytes = round(cand.sample_bytes * factor["rows"])
        cand.skipped = cand.skipped.scaled(factor["files"], factor["rows"], factor["bytes"])
        cand.extra = cand.extra.scaled(factor["files"], factor["rows"], factor["bytes"])
        if progress is not None:
            progress(i + 1, len(todo), f"candidate {cand.index_type} on {cand.column}")
    todo.sort(key=lambda c: (-c.score, -c.extra.weighted_bytes, c.estimated_bytes, c.column, c.index_type))
    best: set[str] = set()
    for rank, cand in enumerate(todo, 1):
        cand.rank = rank
        if cand.extra.weighted_bytes > 0 and cand.column not in best:
            cand.recommended = True
            best.add(cand.column)
    return todo


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
