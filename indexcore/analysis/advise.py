"""The index advisor: which file indexes earn their bytes for a workload, and which would.

:func:`advise` explains once each distinct condition the workload's reads of the table use
(:mod:`.workload`; identical conditions merged, weights summed; each explanation summarised
as it goes, then dropped), then:

* **existing indexes** (one entry per table column x index type found in live files or
  configured by ``file-index.<type>.columns``): the files, rows and data bytes each one skips
  on its own among the files that partition, bucket, level and statistics pruning keep, its
  bytes stored, its ``score`` and ``write_cost``, and a verdict (:data:`.advise_model.VERDICTS`,
  first found wins): ``wrong column``, ``over fpp`` (an undersized bloom filter: resized, never
  dropped), ``never prunes``, ``statistics already prune`` (min/max prune the files it would),
  ``replace`` (another kind does nearly as much for fewer bytes), ``stale`` (added back when it
  still skips files), ``missing``, ``oversized``, ``not in workload`` (kept unless
  ``drop_unused``), else ``earns its keep``. Bloom sizing is :mod:`.bloom_sizing`'s.
* **candidates** (:mod:`.advise_candidates`): the kinds that answer how each filtered column is
  filtered (none for a prefix or a pattern: no Paimon file index answers them; ``column_notes``
  say so and what min/max statistics skip), and pairs of them for OR queries, measured on the files each query still reaches
  (:mod:`.advise_sample`: exact up to :data:`EXACT_FILES` files per query, else a stratified
  sample with every figure's interval, capped by what the query reads today).
* **one score** for both: weighted data bytes no longer read per byte stored, beside the write
  cost (index bytes per data byte) and the build time scaled to the table; nothing below
  ``min_score`` (:data:`MIN_SCORE`) is recommended.
* **statements** (:mod:`.advise_statements`): ``ALTER TABLE ... SET`` / ``UNSET`` (Flink:
  ``RESET``) and ``CALL sys.rewrite_file_index('db.t')``; ``CALL sys.compact`` when file-size
  skew, not ``items``, puts bloom filters over their fpp.

The records live in :mod:`.advise_model`; this module holds the two entry points,
:func:`advise` and :func:`index_inventory`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial

import numpy as np

from indexcore.analysis.advise_candidates import Measure, Progress, measure_candidates
from indexcore.analysis.advise_existing import (
    DeletedPositions,
    ReachedDecisions,
    Taken,
    existing_indexes,
    measure_existing,
    verdicts,
)
from indexcore.analysis.advise_model import MIN_SCORE, Advice, ExistingIndex, QueryRun
from indexcore.analysis.advise_patterns import pattern_notes
from indexcore.analysis.advise_sample import DEFAULT_SAMPLE, EXACT_FILES, draw
from indexcore.analysis.advise_statements import statements_for
from indexcore.analysis.workload import Query, parse_workload, scans
from indexcore.config import settings
from indexcore.errors import IndexCoreError, PredicateError
from indexcore.formats.base import BitmapResult
from indexcore.scan.decision_columns import DecisionColumns
from indexcore.scan.explainer import explain
from indexcore.scan.records import Explanation, Stage
from indexcore.warehouse.model import LiveFile, Problem, Snapshot
from indexcore.warehouse.plan_columns import PlanColumns
from indexcore.warehouse.table_manifests import gc_paused

__all__ = ["DEFAULT_SAMPLE", "EXACT_FILES", "MIN_SCORE", "PlannedFiles", "advise", "explained_here",
           "index_inventory", "planned_here"]


def index_inventory(table, snapshot_id: int | None = None) -> tuple[list[ExistingIndex], list[Problem]]:
    """Every file index of a snapshot's live files, one entry per table column x index type
    (configured ones included even where no file carries them), with the files that carry it,
    the live files that should but do not (``missing``), and entries on the wrong column."""
    plan = table.plan_columns(snapshot_id)  # objects only for the files whose blobs are read
    problems: list[Problem] = []
    schema = table.read_schema(snapshot_id, plan.snapshot)
    sid = plan.snapshot.id if plan.snapshot else None
    return existing_indexes(table, sid, schema, plan, problems), problems


def sample_size(sample: int | None, reached: int) -> int | None:
    """Files a query reaching ``reached`` files is measured on (None: all of them). ``sample``
    None: the default rule (all up to :data:`EXACT_FILES`, else :data:`DEFAULT_SAMPLE`); 0: all."""
    if sample is None:
        return None if reached <= EXACT_FILES else DEFAULT_SAMPLE
    return None if sample == 0 else sample


def _summarise(run: QueryRun, ex, plan: PlannedFiles, sample: int | None, seed: int,
               details: bool, keys: dict[str, float], drawn: dict[tuple, list] | None = None) -> list:
    """Keep what the candidates need of a query's explanation (then dropped): the files it
    reaches, today's answer on them, and the files its candidates are measured on; returns the
    decisions of the files it reaches (for :func:`.advise_existing.measure_existing`).
    ``drawn``: the samples already drawn, by size and files reached (queries reaching the same
    files sample the same ones: :func:`.advise_sample.draw` depends on nothing else)."""
    run.predicate, run.funnel, run.index_used = ex.predicate, ex.funnel, ex.index_used
    if isinstance(ex.files, DecisionColumns):
        reached, paths, raw = _reached_columns(run, ex.files)
    else:
        reached, paths, raw = _reached_objects(run, ex.files)
    at = run.reached = plan.rows_of(paths)
    n = sample_size(sample, len(reached))
    memo = (n, at.tobytes())
    found = drawn.get(memo) if drawn is not None else None
    if found is None:
        # the strata (partitions) only matter to a sample smaller than the files reached
        strata = [] if n is None or n >= len(at) else plan.strata(at)
        found = draw(paths, strata, n, seed, keys)
        if drawn is not None:
            drawn[memo] = found
    run.sample = found  # read only: queries over the same files share it
    run.raw_results = {pos: r for pos, _ in run.sample if isinstance(r := raw[pos], BitmapResult)}
    if details:
        run.explain_json = ex.to_json(max_files=settings().details_files)
    return reached


def _reached_objects(run: QueryRun, decisions: Sequence) -> tuple[list, list[str], list]:
    """:func:`_summarise` of decision objects: the files reaching the index stage (their decisions,
    paths and raw index results), their figures set on ``run``. Each decision's stage read once,
    then each field in its own pass (a third of the time of one loop appending to seven lists)."""
    stages = [fd.skipped_by for fd in decisions]
    index = Stage.INDEX
    reached = [fd for fd, by in zip(decisions, stages, strict=True) if by is None or by is index]
    run.stats_pruned = stages.count(Stage.STATS)
    run.index_skipped = np.array([fd.skipped_by is index for fd in reached], bool)
    run.rows_read = np.array([fd.rows_after_dv for fd in reached], np.int64)
    run.rows_read[run.index_skipped] = 0
    run.base_rows = np.maximum(np.array([fd.row_count - fd.dv_cardinality for fd in reached], np.int64), 0)
    run.sizes = np.array([fd.file_size for fd in reached], np.int64)
    return reached, [fd.path for fd in reached], [fd.raw_index_result for fd in reached]


def _reached_columns(run: QueryRun, files: DecisionColumns) -> tuple[Sequence, list[str], list]:
    """:func:`_reached_objects` on explain's columns: no decision object unless asked for."""
    stages = files.skipped_by()  # each file's stage text, None: read
    index = Stage.INDEX.value
    read = np.equal(stages, None)  # elementwise on the object array
    rows = np.flatnonzero(read | (stages == index))
    run.stats_pruned = int(np.count_nonzero(stages == Stage.STATS.value))
    run.index_skipped = np.asarray(stages[rows] == index, bool)
    run.rows_read = files.ints("rows_after_dv")[rows]
    run.rows_read[run.index_skipped] = 0
    run.base_rows = np.maximum(files.ints("row_count")[rows] - files.ints("dv_cardinality")[rows], 0)
    run.sizes = files.ints("file_size")[rows]
    paths = files.objects("path")
    return ReachedDecisions(files, rows), [paths[i] for i in rows.tolist()], Taken(files.objects("raw_index_result"), rows)


# explains every condition of a workload (predicates or SQL) of a snapshot, in order: explain's
# Explanation of each, or the IndexCoreError of one that cannot be explained (on Spark:
# indexcore.spark.jobs.metadata.spark_explain_workload, one job for all of them); called with
# whole=False when advise reads no file's whole record (no details): the files' columns advise
# reads are enough (on Spark no record per file travels)
ExplainAll = Callable[..., Iterator[Explanation | IndexCoreError]]


def explained_here(table, conditions: list, snapshot_id: int | None,
                   whole: bool = True) -> Iterator[Explanation | IndexCoreError]:
    """Each condition explained in this process as it is asked for (one explanation held at a time;
    ``whole`` or not, explain's own records)."""
    for condition in conditions:
        try:
            yield explain(table, condition, snapshot_id=snapshot_id)
        except IndexCoreError as exc:
            yield exc


@dataclass(frozen=True)
class PlannedFiles:
    """What advise reads of a snapshot's plan: its live files in plan order (``files``: objects, made
    as they are asked for where the source is columns), each one's place and object by path, the
    plan's problems, what the inventory of existing indexes reads (``inventory``: the objects, or
    the plan's columns) and the data bytes of the table. In this process :func:`planned_here`; with
    a Spark master from :func:`indexcore.spark.jobs.planned.advise_on_spark` (the plan's columns
    from Spark tasks, no plan in this process)."""

    snapshot: Snapshot | None
    files: Sequence[LiveFile]
    by_path: Mapping[str, LiveFile]
    index_of: Mapping[str, int]
    problems: tuple[Problem, ...]
    inventory: Sequence[LiveFile] | PlanColumns
    table_bytes: int
    #: the data rows of the table (None: summed over ``files`` when asked for)
    table_rows: int | None = None
    #: each file's partition as a number (``partition_ids[i]``: of ``files[i]``) and each number's
    #: text (``str`` of its values: the sample's strata); None: read off each file's object
    partition_ids: np.ndarray | None = None
    partition_texts: Sequence[str] = ()

    def rows_of(self, paths: Sequence[str]) -> np.ndarray:
        """The place in ``files`` of each of ``paths`` (looked up together where ``index_of`` can)."""
        rows = getattr(self.index_of, "rows", None)
        if rows is not None:
            return rows(paths)
        return np.fromiter((self.index_of[p] for p in paths), np.int64, len(paths))

    def strata(self, at: Sequence[int]) -> list[str]:
        """The stratum (partition text) of each of the files at ``at``."""
        if self.partition_ids is not None:
            texts = self.partition_texts
            return [texts[i] for i in self.partition_ids[np.asarray(at, np.int64)].tolist()]
        return [str(self.files[i].partition) for i in at]


def planned_here(table, snapshot_id: int | None) -> PlannedFiles:
    """:class:`PlannedFiles` of the snapshot's plan in this process (:meth:`Table.plan`)."""
    plan = table.plan(snapshot_id)
    files = list(plan.files)
    ids: dict = {}  # partition values -> their number (one text per partition, not per file)
    texts: list[str] = []
    at = np.empty(len(files), np.int64)
    for i, lf in enumerate(files):
        try:
            n = ids.get(lf.partition)
            if n is None:
                n = ids[lf.partition] = len(texts)
                texts.append(str(lf.partition))
        except TypeError:  # values that cannot be a key: a number of their own
            n = len(texts)
            texts.append(str(lf.partition))
        at[i] = n
    return PlannedFiles(plan.snapshot, files, {lf.path: lf for lf in files}, {lf.path: i for i, lf in enumerate(files)},
                        tuple(plan.problems), files, sum(lf.file.file_size for lf in files),
                        sum(lf.file.row_count for lf in files), at, texts)


def advise(table, workload: str | Sequence[Query], snapshot_id: int | None = None,
           sample: int | None = None, measure: Measure | None = None, seed: int = 0, dialect: str = "spark",
           progress: Progress | None = None, min_score: float = MIN_SCORE, drop_unused: bool = False,
           details: bool = False, explain_all: ExplainAll | None = None,
           planned: Callable[[int | None], PlannedFiles] | None = None,
           timings: dict[str, float] | None = None) -> Advice:
    """Advise on ``table``'s file indexes for ``workload`` (file text or parsed queries).

    ``sample``: files per query candidates are measured on (None: every file the query reaches
    up to :data:`EXACT_FILES`, else :data:`DEFAULT_SAMPLE`; 0: every file); with ``measure`` they
    are built and measured by it on every file (on Spark: :func:`indexcore.spark.jobs.what_if.what_if_measure`).
    ``min_score``: the score below which no candidate is recommended. ``drop_unused``: drop
    configured indexes no query of the workload filters on (kept by default). ``details``: keep
    every query's explain and the files behind each figure. ``progress(done, total, what)`` is
    called while it runs. ``explain_all``: what explains the workload's conditions (default: each
    in this process; on Spark all in one job). ``planned``: what gives the snapshot's live files
    (:class:`PlannedFiles`; default :func:`planned_here`). A workload with no query that can be
    replayed is a :class:`PredicateError`. ``timings``: a dict the caller passes to learn where
    the time went (:class:`_Phases`: CPU seconds per phase, added to what it holds).
    """
    if sample is not None and (not isinstance(sample, int) or sample < 0):
        raise PredicateError(f"sample must be a number of files >= 0 (0: every file), got {sample}")
    if not math.isfinite(min_score) or min_score < 0:
        raise PredicateError(f"the score threshold must be a finite number >= 0, got {min_score}")
    clock = _Phases(timings)
    queries = parse_workload(workload) if isinstance(workload, str) else list(workload)
    if not queries:
        raise PredicateError("the workload holds no query (it is empty or holds only comments)")
    clock.mark("read workload")
    plan = (planned or partial(planned_here, table))(snapshot_id)
    clock.mark("plan")
    sid = plan.snapshot.id if plan.snapshot else None
    schema = table.read_schema(snapshot_id, plan.snapshot)
    files = plan.files
    problems: list[Problem] = list(plan.problems)
    runs, skipped_queries = _merged_runs(table, schema, queries)
    clock.mark("parse statements")
    # the explains summarised, the samples read, the candidates built and measured: 10,000s of records,
    # none cyclic (the workload's parsed trees, which are, are made above)
    with gc_paused():
        existing = existing_indexes(table, sid, schema, plan.inventory, problems)
        for g in existing:
            g.table_bytes = plan.table_bytes
        deleted = DeletedPositions(table, problems)
        clock.mark("existing indexes")
        keys: dict[str, float] = {}  # each file's place in every query's sample, hashed once
        drawn: dict[tuple, list] = {}  # each sample drawn once per files reached
        steps = len(runs) + 1
        done = 0

        def tick(what: str) -> None:
            nonlocal done
            done += 1
            if progress is not None:
                progress(min(done, steps), steps, what)

        # each condition as the workload reader parsed it (the same parser), else its text
        conditions = [run.scan.predicate if run.scan.predicate is not None else run.scan.where for run in runs]
        explained = (explain_all or partial(explained_here, table))(conditions, sid, whole=details)
        for run, ex in zip(runs, explained, strict=True):
            clock.mark("explain")
            if isinstance(ex, IndexCoreError):
                run.error = ex.message
                tick(run.name)
                continue
            reached = _summarise(run, ex, plan, sample, seed, details, keys, drawn)
            measure_existing(table, schema, run, ex, existing, deleted, problems, details, reached)
            del ex
            tick(run.name)
            clock.mark("summarise explains")
        good = [r for r in runs if r.ok]
        if not good:
            reasons = [f"{s['query']}: {s['reason']}" for s in skipped_queries] + \
                [f"{n}: {r.error}" for r in runs for n in r.names if r.error]
            more = f" (and {len(reasons) - 10} more)" if len(reasons) > 10 else ""
            raise PredicateError(f"no query of the workload can be replayed on {table.name}: "
                                 + "; ".join(reasons[:10]) + more)
        verdicts(table, sid, existing, good, problems)
        clock.mark("verdicts")
        candidates = measure_candidates(table, sid, schema, files, good, existing, measure, deleted, problems,
                                        progress, min_score, totals=(plan.table_rows, plan.table_bytes),
                                        mark=clock.mark if timings is not None else None)
        clock.mark("candidates: rank")
        steps = done + 1
        tick("statements")
        statements = statements_for(table.name, dict(schema.options), existing, candidates, dialect, drop_unused)
        clock.mark("statements")
        return Advice(table.name, sid, runs, skipped_queries, existing, candidates, statements, problems,
                      pattern_notes(table.name, good))


class _Phases:
    """CPU seconds (this process, all threads) of each phase of one :func:`advise` run, added to the
    caller's dict: what the bench reports beside the explains advise cannot avoid. Nothing is
    timed without a dict."""

    def __init__(self, out: dict[str, float] | None):
        self.out = out
        self.at = time.process_time() if out is not None else 0.0

    def mark(self, phase: str) -> None:
        """The time since the last mark goes to ``phase``."""
        if self.out is not None:
            now = time.process_time()
            self.out[phase] = self.out.get(phase, 0.0) + now - self.at
            self.at = now


def _merged_runs(table, schema, queries: Sequence[Query]) -> tuple[list[QueryRun], list[dict]]:
    """The workload's reads of ``table``, one :class:`QueryRun` per distinct condition (identical
    conditions are explained once, their queries' names listed and weights summed), and the
    queries that read nothing of it (with why)."""
    same_text: dict[str, list[Query]] = {}  # a log repeats its statements: each text is read once
    with gc_paused():  # a log's 100,000s of queries grouped: lists, none of them cyclic
        for q in queries:
            same_text.setdefault(q.text, []).append(q)
    # (parsed trees are cyclic: not under a paused collector)
    found, skipped = scans([group[0] for group in same_text.values()], table.name, schema.row_type())
    by_name = {group[0].name: group for group in same_text.values()}
    with gc_paused():  # and their names and weights merged by condition
        skipped_queries = [{**s, "query": q.name} for s in skipped for q in by_name[s["query"]]]
        merged: dict[str, QueryRun] = {}
        for scan in found:
            group = by_name[scan.name]
            if scan.where is None:
                why = "reads the table without a filter"
                if scan.notes:
                    why += f" ({'; '.join(scan.notes)})"
                skipped_queries.extend({"query": q.name, "reason": why} for q in group)
                continue
            run = merged.get(scan.where)
            if run is None:
                run = merged[scan.where] = QueryRun(scan)
            run.names.extend([q.name for q in group])
            run.weight += sum([q.weight for q in group])
    return list(merged.values()), skipped_queries
