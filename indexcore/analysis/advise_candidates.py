"""The advisor's candidates: which index kinds to try on which columns, built and measured.

Every column the workload filters on x the kinds that answer how it is filtered
(:func:`.advise_profile.candidate_kinds`): ``bitmap`` for equality on a low-cardinality column (at most
:data:`.advise_profile.LOW_CARDINALITY_MAX` distinct values and :data:`.advise_profile.LOW_CARDINALITY_RATIO` of the rows per
file), ``bloom-filter`` for equality otherwise (``items`` = the largest distinct count per file,
``fpp`` :data:`.advise_profile.BLOOM_FPP`), ``range-bitmap`` and ``bsi`` for ranges; kinds a column already
carries are not candidates (other kinds are, to weigh an existing index against them). For
``OR`` queries over two columns, pairs of candidates are measured together too (one alone
cannot skip a file the other side of the ``OR`` may match).

Each is built as a hypothetical index by :mod:`indexcore.analysis.whatif` on the files its
queries sample (:mod:`.advise_sample`: drawn from the files each query still reaches, measured
exactly below a size) or on every file by a :data:`Measure` callback (e.g. on Spark), and
measured query by query against today's answer (the query's summary, no explain again). Its
claims are estimates with their sample and interval, capped by what the query reads today.
Ranked by ``score``: weighted data bytes skipped beyond today's indexes per byte stored.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from indexcore.analysis.advise_model import (
    MEASURED,
    MIN_SCORE,
    REPLACE,
    STATS_PRUNE,
    Candidate,
    Claim,
    ExistingIndex,
    MeasuredFiles,
    QueryRun,
)
from indexcore.analysis.advise_profile import candidate_kinds, column_profile, read_sampled
from indexcore.analysis.advise_sample import draw, estimate
from indexcore.analysis.whatif import existing_readers
from indexcore.config import settings
from indexcore.errors import IndexCoreError
from indexcore.expr import OR, Compound
from indexcore.formats.base import REMAIN, BitmapResult
from indexcore.formats.bulk import is_string_type
from indexcore.formats.container import EmptyFileIndexReader
from indexcore.formats.registry import (
    check_writer_options,
    new_writer,
    new_writers,
    open_reader,
)
from indexcore.io import BytesSource
from indexcore.scan.file_index import FileIndexPredicate, read_path_result
from indexcore.types.values import to_internal
from indexcore.warehouse.model import LiveFile, Problem

Progress = Callable[[int, int, str], None]

#: Files read to profile the filtered columns (distinct values per file) before the Spark job
#: builds the kinds chosen (locally, every file the queries sample is profiled).
PROFILE_FILES = 32
#: A candidate replaces an existing index of another kind on its column when it skips at least
#: this share of what the existing one skips (its interval's low end) and scores higher per byte.
REPLACE_SHARE = 0.9
#: At most this many pairs of candidates are measured for OR queries.
MAX_PAIRS = 12

# ``measure(column, index_type, options, wheres[, also=parts])`` builds a candidate on every live
# file (with ``also``, the other parts of a pair beside it, answering together) and returns what
# the Spark what-if job returns (``total_size``, ``file_results``, ``task_errors``); the caller
# supplies it, so the advisor never imports the Spark layer above it
Measure = Callable[..., dict]


def has_or(predicate) -> bool:
    """The predicate holds an OR (then indexes on different columns answer together, not apart)."""
    if isinstance(predicate, Compound):
        return predicate.function is OR or any(has_or(c) for c in predicate.children)
    return False


class _Evaluator:
    """Per sampled file and query: what hypothetical readers decide alone and with today's indexes."""

    def __init__(self, table, schema, files: Sequence[LiveFile], deleted):
        self.table, self.schema, self.files, self.deleted = table, schema, files, deleted
        self.row_type = schema.row_type()
        self.readers: dict[int, dict] = {}  # file index -> its existing readers (OR queries only)

    def existing(self, fi: int) -> dict:
        if fi not in self.readers:
            self.readers[fi] = existing_readers(self.table, self.files[fi], self.schema)
        return self.readers[fi]

    def decide(self, run: QueryRun, pos: int, hyps: dict[str, Any], or_query: bool | None = None) -> tuple[Any, Any]:
        """(alone, combined) read-path answers for the ``pos``-th reached file of ``run`` with the
        hypothetical readers ``hyps`` (column -> reader); None where no reader answers.
        ``or_query``: whether the predicate holds an OR (:func:`has_or`, once per query)."""
        if not hyps:
            return None, None
        fi = int(run.reached[pos])
        lf = self.files[fi]
        deleted = self.deleted(lf)
        raw = FileIndexPredicate.for_readers({c: (r,) for c, r in hyps.items()}, self.row_type).evaluate(run.predicate)
        rows = lf.file.row_count
        alone = read_path_result(raw, rows, deleted, lf.bitmap64)
        if run.index_skipped[pos]:
            return alone, None  # skipped today already
        if has_or(run.predicate) if or_query is None else or_query:
            readers = {c: list(v) for c, v in self.existing(fi).items()}
            for c, r in hyps.items():
                readers.setdefault(c, []).append(r)
            both = FileIndexPredicate.for_readers(readers, self.row_type).evaluate(run.predicate)
        else:  # a conjunction: the indexes' answers intersect (FileIndexPredicate ANDs its leaves)
            today = run.raw_results.get(pos, REMAIN)
            if not isinstance(today, BitmapResult):  # no rows from today's indexes: the read path's
                return alone, alone  # answer with both is the candidate's alone (the same call)
            both = raw.and_(today)
        return alone, read_path_result(both, rows, deleted, lf.bitmap64)


def _claims(run: QueryRun, files: Sequence[LiveFile], decided: dict[int, tuple[Any, Any]],
            weights: dict[int, float]) -> tuple[Claim, Claim, dict[str, Any]]:
    """A query's (alone, extra) claims from the answers on its sampled files, and its JSON row."""
    n_pop = len(run.reached)
    sizes = run.sizes
    base = run.base_rows
    total_bytes, total_rows = float(sizes.sum()), float(base.sum())
    read_files = float(n_pop - int(run.index_skipped.sum()))
    read_bytes = float(sizes[~run.index_skipped].sum())
    read_rows = float(run.rows_read.sum())
    w, a_f, a_r, a_b, e_f, e_r, e_b, skipped_paths = [], [], [], [], [], [], [], []
    rows_left = 0
    for pos, (alone, combined) in decided.items():
        size, rows = int(sizes[pos]), int(base[pos])
        w.append(weights[pos])
        a_skip = alone is not None and not alone.remain()
        a_f.append(1.0 if a_skip else 0.0)
        a_b.append(size if a_skip else 0.0)
        a_r.append(rows if a_skip else rows - _kept_rows(alone, rows) if alone is not None else 0.0)
        today = int(run.rows_read[pos])
        if run.index_skipped[pos]:
            e_f.append(0.0)
            e_b.append(0.0)
            e_r.append(0.0)
            skipped_paths.append(files[int(run.reached[pos])].path)
            continue
        c_skip = combined is not None and not combined.remain()
        c_rows = 0 if c_skip else _kept_rows(combined, today)
        e_f.append(1.0 if c_skip else 0.0)
        e_b.append(size if c_skip else 0.0)
        e_r.append(max(today - c_rows, 0))
        rows_left += c_rows
        if c_skip:
            skipped_paths.append(files[int(run.reached[pos])].path)
    n = len(decided)

    def est(values, total, cap):
        return estimate(w, values, total, cap, n, n_pop)

    weight = run.weight
    a_bytes, e_bytes = est(a_b, total_bytes, total_bytes), est(e_b, total_bytes, read_bytes)  # each estimated once
    alone = Claim(est(a_f, n_pop, n_pop), est(a_r, total_rows, total_rows), a_bytes, a_bytes.scaled(weight))
    extra = Claim(est(e_f, n_pop, read_files), est(e_r, total_rows, read_rows), e_bytes, e_bytes.scaled(weight))
    row = {"query": run.name, "weight": weight, "files_reached": n_pop, "files_measured": n,
           "files_skipped": alone.files.to_json(), "extra_files_skipped": extra.files.to_json(),
           "extra_rows_skipped": extra.rows.to_json(), "extra_bytes_skipped": extra.bytes.to_json()}
    if n == n_pop:  # measured on every file: what explain would report once built
        row["index_skipped_files"] = sorted(skipped_paths)[:settings().details_files]
        row["rows_read"] = int(read_rows - sum(e_r)) if n else 0
    return alone, extra, row


class _Built:
    """One candidate kind on one column, built in memory on the sampled files."""

    def __init__(self, column: str, kind: str, options: dict[str, str], dtype):
        self.column, self.kind, self.options, self.dtype = column, kind, options, dtype
        self.blobs: dict[str, bytes | None] = {}  # data file path -> blob (None: no row written)
        self.size = self.rows = 0
        self.seconds = 0.0
        self.readers: dict[str, Any] = {}

    def reader(self, path: str):
        """A reader over the file's blob, opened once (None: not built on this file)."""
        if path not in self.blobs:
            return None
        if path not in self.readers:
            blob = self.blobs[path]
            self.readers[path] = EmptyFileIndexReader() if blob is None else open_reader(
                self.kind, self.dtype, BytesSource(blob, name=f"{path} (hypothetical)"), dict(self.options))
        return self.readers[path]


def _build_all(table, schema, read: list[tuple[LiveFile, Any, float]], specs: list[tuple[str, str, dict[str, str]]],
               wanted: dict[str, set[str]], problems: list[Problem]) -> dict[tuple[str, str], _Built]:
    """Every candidate kind built on the files of ``read`` that the queries on its column sample
    (``wanted``: column -> paths); a kind whose options the writer refuses becomes a problem and
    is not built. Each kind's seconds include its share of the reads."""
    out: dict[tuple[str, str], _Built] = {}
    for column, kind, options in specs:
        dtype = schema.field(column).type
        try:
            check_writer_options(kind, options, dtype)
        except IndexCoreError as exc:
            problems.append(Problem(table.name, f"candidate {kind} on {column}", exc.message))
            continue
        out[(column, kind)] = _Built(column, kind, options, dtype)
    if not out:
        return out
    share: dict[tuple[str, str], float] = dict.fromkeys(out, 0.0)
    for lf, _, seconds in read:  # each file's read shared by the kinds built on it
        mine = [key for key, b in out.items() if lf.path in wanted.get(b.column, ())]
        for key in mine:
            share[key] += seconds / len(mine)
    values: dict[tuple[str, str], list] = {}  # (path, column) -> internal values, converted once
    for key, b in out.items():
        start = time.perf_counter()
        files = [(lf, data) for lf, data, _ in read if lf.path in wanted.get(b.column, ())]
        columns = [data.column(b.column) for _, data in files]
        # the kinds that can build every file at once do (range-bitmap, BSI on fixed-width keys:
        # the bytes of one writer per file, tests/test_writer_many.py); else one writer per file
        writers = new_writers(b.kind, b.dtype, b.options, columns) if columns else []
        if writers is None:
            writers = []
            for (lf, _), column in zip(files, columns, strict=True):
                writer = new_writer(b.kind, b.dtype, b.options)
                # a fixed-width Arrow column straight in where the writer takes it (strings of a
                # small file go quicker as values: 3x here); both give the bytes of row-by-row
                # writes (tests/test_writer_bulk.py)
                if writer.accepts_arrow(column.type) and not is_string_type(column.type):
                    writer.write_arrow(column)
                else:
                    at = (lf.path, b.column)
                    if at not in values:
                        values[at] = to_internal(column, b.dtype)
                    writer.write_batch(values[at])
                writers.append(writer)
        for (lf, data), writer in zip(files, writers, strict=True):
            blob = None if writer.empty else writer.serialized_bytes()
            b.blobs[lf.path] = blob
            if blob is not None:  # the writer's own reader where it has one: no bytes parsed again
                here = writer.reader()
                if here is not None:
                    b.readers[lf.path] = here
            b.size += len(blob) if blob is not None else 0
            b.rows += data.num_rows
        b.seconds += time.perf_counter() - start + share[key]
    return out


def _measure_local(cand: Candidate, runs: list[QueryRun], files: Sequence[LiveFile], evaluator,
                   built: dict[tuple[str, str], _Built]) -> None:
    """Tally each query on the files it samples, with the candidate's parts built there."""
    parts = [built.get((column, kind)) for column, kind, _ in cand.parts]
    if any(b is None for b in parts):
        return
    cand.build_seconds = sum(b.seconds for b in parts)
    cand.sample_bytes = sum(b.size for b in parts)
    cand.built_files = len(set().union(*(b.blobs for b in parts)))
    for run in runs:
        fields = run.predicate.fields()
        mine = [b for b in parts if b.column in fields]
        or_query = has_or(run.predicate)
        reached = run.reached
        decided, weights = {}, {}
        for pos, w in run.sample:
            path = files[int(reached[pos])].path
            readers = {b.column: b.reader(path) for b in mine}
            decided[pos] = evaluator.decide(run, pos, {c: r for c, r in readers.items() if r is not None}, or_query)
            weights[pos] = w
        _add(cand, run, files, decided, weights)


def _measure_with(measure: Measure, table, cand: Candidate, runs: list[QueryRun], files: Sequence[LiveFile]) -> None:
    """Build and measure the candidate on every live file with ``measure`` (e.g. a Spark job); a
    pair's second part is built beside the first (``also``) and both answer together."""
    (column, kind, options), *rest = cand.parts
    wheres = [r.scan.where for r in runs]
    start = time.perf_counter()
    out = measure(column, kind, options, wheres, also=rest) if rest else measure(column, kind, options, wheres)
    cand.build_seconds = time.perf_counter() - start
    errors = out.get("task_errors", [])
    if errors and not out.get("file_results"):
        raise IndexCoreError(f"building {kind} on {column} failed on every task: {errors[0].get('error')}")
    cand.sample_bytes = out["total_size"]
    cand.built_files = len(out["file_results"])
    for err in errors:
        cand.problems.append(Problem(table.name, "spark task", str(err.get("error"))))
    if isinstance(out["file_results"], MeasuredFiles):
        _measured_columns(cand, runs, files, out["file_results"])
        return
    by_path = {f["path"]: f for f in out["file_results"]}
    for i, run in enumerate(runs):
        decided, weights = {}, {}
        for pos in range(len(run.reached)):
            f = by_path.get(files[int(run.reached[pos])].path)
            if f is None or len(f["predicates"]) <= i:
                continue
            r = f["predicates"][i]
            today = int(run.rows_read[pos])
            alone = _Answer(not r["hypothetical_pruned"], r["hypothetical_rows"])
            combined = _Answer(not (r["current_pruned"] or r["hypothetical_pruned"] or
                                    (r["combined_rows"] == 0 and r["current_rows"] > 0)), min(r["combined_rows"], today))
            decided[pos], weights[pos] = (alone, combined), 1.0
        _add(cand, run, files, decided, weights)


def _measured_columns(cand: Candidate, runs: list[QueryRun], files: Sequence[LiveFile], measured: MeasuredFiles) -> None:
    """:func:`_measure_with` of a measure's columns (:class:`MeasuredFiles`): each query's answers
    read by the plan positions it reaches, no record per file."""
    for i, run in enumerate(runs):
        cols = measured.of_query(i, len(files))
        at = np.asarray(run.reached, np.int64)
        has = cols["has"][at]
        picked = {name: cols[name][at].tolist() for name in MEASURED}
        today = run.rows_read.tolist()
        decided, weights = {}, {}
        for pos in np.flatnonzero(has).tolist():
            hyp_pruned, cur_pruned = picked["hypothetical_pruned"][pos], picked["current_pruned"][pos]
            combined, current = picked["combined_rows"][pos], picked["current_rows"][pos]
            alone = _Answer(not hyp_pruned, picked["hypothetical_rows"][pos])
            both = _Answer(not (cur_pruned or hyp_pruned or (combined == 0 and current > 0)), min(combined, today[pos]))
            decided[pos], weights[pos] = (alone, both), 1.0
        _add(cand, run, files, decided, weights)


class _Answer:
    """A read-path answer as the Spark job reports it: kept or not, and the rows kept."""

    def __init__(self, keep: bool, rows: int):
        self.keep, self.rows = keep, rows

    def remain(self) -> bool:
        return self.keep


def _kept_rows(answer, default: int) -> int:
    """Rows a read-path answer keeps of a file that would read ``default`` rows without it."""
    if isinstance(answer, _Answer):
        return min(answer.rows, default)
    if isinstance(answer, BitmapResult):
        return min(len(answer.bitmap), default)
    return default


def _add(cand: Candidate, run: QueryRun, files, decided, weights) -> None:
    alone, extra, row = _claims(run, files, decided, weights)
    cand.alone = cand.alone + alone
    cand.extra = cand.extra + extra
    cand.queries.append(row)


def _runs_of(runs: list[QueryRun], columns: set[str]) -> list[QueryRun]:
    return [r for r in runs if r.predicate.fields() & columns]


def measure_candidates(table, sid, schema, files: Sequence[LiveFile], runs: list[QueryRun],
                       existing: list[ExistingIndex], measure: Measure | None, deleted, problems: list[Problem],
                       progress: Progress | None, min_score: float = MIN_SCORE,
                       totals: tuple[int | None, int | None] = (None, None),
                       mark: Callable[[str], None] | None = None) -> list[Candidate]:
    """The candidates for the columns ``runs`` filter on, built on the files their queries sample
    (or by ``measure`` on every file), measured, ranked and judged (see the module docstring).
    ``totals``: the table's data rows and bytes where the plan knows them (None: summed over ``files``).
    ``mark(phase)``: called as each phase ends (advise's timings: the time since the last call)."""
    mark = mark or _no_mark
    have = {(g.column, g.index_type) for g in existing if g.blobs or g.configured}
    filters: dict[str, set[str]] = {}
    for r in runs:
        for col, kinds in r.scan.filters.items():
            if col in schema.field_names and col not in schema.partition_keys:
                filters.setdefault(col, set()).update(kinds)
    if not filters:
        return []
    columns = sorted(filters)
    mine = _runs_of(runs, set(columns))  # only the queries on a candidate column are sampled for building
    read: list = []
    if measure is None:  # every file read once: the profile, then every kind built on it
        read, profile = read_sampled(table, schema, files, mine, columns, filters, have, problems)
    else:
        reached = sorted({int(i) for r in mine for i in r.reached}, key=lambda i: files[i].path)
        profiled = [files[i] for i, _ in _first_by_key([files[i].path for i in reached], PROFILE_FILES)]
        profile = column_profile(table, schema, profiled, columns, problems)
    mark("candidates: read sampled files")
    total_rows, total_bytes = totals
    if total_rows is None:
        total_rows = sum(lf.file.row_count for lf in files)
    if total_bytes is None:
        total_bytes = sum(lf.file.file_size for lf in files)
    singles: list[Candidate] = []
    for col in sorted(filters, key=schema.field_names.index):
        for kind, options, why in candidate_kinds(schema.field(col).type, filters[col], profile[col]):
            if (col, kind) not in have:
                singles.append(Candidate(((col, kind, options),), why, total_files=len(files)))
    pairs = _pairs(singles, runs)
    todo = singles + pairs
    evaluator = _Evaluator(table, schema, files, deleted)
    wanted: dict[str, set[str]] = {}  # column -> the files the queries on it sample
    for r in mine:
        paths = {files[int(r.reached[p])].path for p, _ in r.sample}
        for c in r.predicate.fields() & set(columns):
            wanted.setdefault(c, set()).update(paths)
    built = _build_all(table, schema, read, [c.parts[0] for c in singles], wanted, problems) \
        if measure is None else {}
    del read
    mark("candidates: build")
    for i, cand in enumerate(todo):
        mine = _runs_of(runs, {c for c, _, _ in cand.parts})
        if measure is not None:
            _measure_with(measure, table, cand, mine, files)  # a failing Spark job fails the advice
        else:
            try:
                _measure_local(cand, mine, files, evaluator, built)
            except IndexCoreError as exc:
                cand.problems.append(Problem(table.name, f"candidate {cand.index_type} on {cand.column}",
                                             exc.message))
        parts = [built[p[:2]] for p in cand.parts if p[:2] in built] if measure is None else []
        if parts:  # each part scaled from the files it was built on to the table (bytes by rows)
            cand.estimated_bytes = round(sum(b.size * total_rows / b.rows for b in parts if b.rows))
            cand.build_seconds_table = sum(b.seconds * len(files) / len(b.blobs) for b in parts if b.blobs)
        else:
            cand.estimated_bytes = cand.sample_bytes
            cand.build_seconds_table = cand.build_seconds
        cand.write_cost = cand.estimated_bytes / total_bytes if total_bytes else 0.0
        if progress is not None:
            progress(i + 1, len(todo), f"candidate {cand.index_type} on {cand.column}")
    mark("candidates: measure")
    _judge(singles, pairs, existing, runs, min_score)
    out = singles + pairs
    out.sort(key=lambda c: (not c.recommended, -c.score, -c.extra.weighted_bytes.value, c.estimated_bytes,
                            c.column, c.index_type))
    for rank, cand in enumerate(out, 1):
        cand.rank = rank
    return out


def _no_mark(_: str) -> None:
    """No phase is timed."""


def _first_by_key(paths: list[str], n: int) -> list[tuple[int, float]]:
    return draw(paths, [None] * len(paths), n)


def _pairs(singles: list[Candidate], runs: list[QueryRun]) -> list[Candidate]:
    """Pairs of candidates on two columns an OR query filters on together."""
    by_column: dict[str, list[Candidate]] = {}
    for c in singles:
        by_column.setdefault(c.parts[0][0], []).append(c)
    seen: set[tuple] = set()
    out: list[Candidate] = []
    for r in runs:
        if not has_or(r.predicate):
            continue
        cols = sorted(c for c in r.predicate.fields() if c in by_column)
        for a, b in itertools.combinations(cols, 2):
            for ca, cb in itertools.product(by_column[a], by_column[b]):
                key = (ca.parts[0][:2], cb.parts[0][:2])
                if key in seen or len(out) >= MAX_PAIRS:
                    continue
                seen.add(key)
                out.append(Candidate(ca.parts + cb.parts, f"OR across {a} and {b}: both together",
                                     total_files=ca.total_files))
    return out


def _judge(singles: list[Candidate], pairs: list[Candidate], existing: list[ExistingIndex], runs: list[QueryRun],
           min_score: float) -> None:
    """Each candidate's verdict; the best per column above ``min_score`` is recommended, a
    candidate doing nearly what an existing index of another kind does for fewer bytes replaces it."""
    stats = {c for r in runs if r.stats_pruned for c in r.predicate.fields()}
    for g in existing:
        if not g.blobs or g.skipped.weighted_bytes <= 0:
            continue
        rivals = [c for c in singles if c.parts[0][0] == g.column
                  and c.alone.weighted_bytes.low >= REPLACE_SHARE * g.skipped.weighted_bytes
                  and c.estimated_bytes < g.bytes and c.score_alone > g.score]
        if not rivals:
            continue
        best = max(rivals, key=lambda c: c.score_alone)
        best.replaces.append((g.column, g.index_type))
        best.recommended, best.verdict = True, f"replaces the {g.index_type}"
        g.findings.append({"verdict": REPLACE, "by": best.index_type, "message":
                           f"a {best.index_type} on {g.column} skips {best.alone.weighted_bytes.low / max(g.skipped.weighted_bytes, 1):.0%}"
                           f" or more of what this {g.index_type} skips for {best.estimated_bytes:,} bytes "
                           f"instead of {g.bytes:,} (score {best.score_alone:.2f} against {g.score:.2f})"})
    best_of: dict[str, Candidate] = {}
    for c in sorted(singles, key=lambda c: (-c.score, c.estimated_bytes)):
        if c.verdict:
            continue
        col = c.parts[0][0]
        if c.extra.weighted_bytes.value <= 0:
            c.verdict = STATS_PRUNE if col in stats else "no benefit"
        elif c.score < min_score:
            c.verdict = "below threshold"
        elif col in best_of or any(x.parts[0][0] == col and x.recommended for x in singles):
            c.verdict = "outranked"
        else:
            c.verdict, c.recommended = "recommended", True
            best_of[col] = c
    for p in pairs:
        parts_extra = sum(c.extra.weighted_bytes.value for c in singles if c.parts[0] in p.parts)
        if p.extra.weighted_bytes.value <= parts_extra or p.extra.weighted_bytes.value <= 0:
            p.verdict = "no benefit over its parts"
        elif p.score < min_score:
            p.verdict = "below threshold"
        else:
            p.verdict, p.recommended = "recommended", True
