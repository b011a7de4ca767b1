"""The advisor's candidates: which index kinds to try on which columns, built and measured.

Every column the workload filters on x the kinds that answer how it is filtered
(:func:`candidate_kinds`): ``bitmap`` for equality on a low-cardinality column (at most
:data:`LOW_CARDINALITY_MAX` distinct values and :data:`LOW_CARDINALITY_RATIO` of the rows per
file), ``bloom-filter`` for equality otherwise (``items`` = the largest distinct count per file,
``fpp`` :data:`BLOOM_FPP`), ``range-bitmap`` and ``bsi`` for ranges. Each is built as a
hypothetical index by :mod:`indexcore.analysis.whatif` on a sample of files (or on every file by
a :data:`Measure` callback, e.g. on Spark), measured query by query, scaled to the table by
files, rows and bytes, and ranked by weighted bytes skipped beyond today's indexes per byte
stored (:func:`measure_candidates`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import pyarrow.compute as pc

from indexcore.analysis.advise_model import REACHED_INDEX, Candidate, QueryRun
from indexcore.analysis.whatif import build_hypothetical_index, evaluate_hypothetical
from indexcore.analysis.workload import EQUALITY, RANGE
from indexcore.errors import IndexCoreError
from indexcore.formats.registry import BITMAP, BLOOM_FILTER, BSI, RANGE_BITMAP, supported_index_types
from indexcore.warehouse.data import read_data_file
from indexcore.warehouse.file_sample import sample_files
from indexcore.warehouse.model import LiveFile, Problem

Progress = Callable[[int, int, str], None]

LOW_CARDINALITY_MAX = 1000
LOW_CARDINALITY_RATIO = 0.125
BLOOM_FPP = 0.01


def column_profile(table, schema, files: Sequence[LiveFile], columns: list[str],
                    problems: list[Problem]) -> dict[str, dict[str, int]]:
    """Per column: the largest distinct count and row count of a sampled file."""
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



def measure_candidates(table, sid, schema, files, runs, existing, by_path, sample, measure, seed,
                       problems, progress) -> list[Candidate]:
    """The candidates for the columns ``runs`` filter on, built on a sample (or by ``measure`` on
    every file), measured, scaled to the table and ranked; the best per column ``recommended``."""
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
    profile = column_profile(table, schema, chosen, sorted(filters), problems)
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

