"""The index advisor: which file indexes earn their bytes for a workload, and which would.

:func:`advise` replays :func:`indexcore.scan.explain.explain` for every read of the table
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

The records live in :mod:`.advise_model`, the existing indexes in :mod:`.advise_existing`, the
candidates in :mod:`.advise_candidates`, the statements and summary in :mod:`.advise_statements`;
this module holds the two entry points, :func:`advise` and :func:`index_inventory`.
"""

from __future__ import annotations

from collections.abc import Sequence

from indexcore.analysis.advise_candidates import Measure, Progress, measure_candidates
from indexcore.analysis.advise_existing import DeletedPositions, existing_indexes, measure_existing, verdicts
from indexcore.analysis.advise_model import Advice, ExistingIndex, QueryRun
from indexcore.analysis.advise_statements import statements_for
from indexcore.analysis.workload import Query, parse_workload, scans
from indexcore.errors import IndexCoreError
from indexcore.scan.explainer import explain
from indexcore.warehouse.model import Problem

DEFAULT_SAMPLE = 32


def index_inventory(table, snapshot_id: int | None = None) -> tuple[list[ExistingIndex], list[Problem]]:
    """Every file index of a snapshot's live files, one entry per table column x index type
    (configured ones included even where no file carries them), with the files that carry it,
    the live files that should but do not (``missing``), and entries on the wrong column."""
    plan = table.plan(snapshot_id)
    problems: list[Problem] = []
    schema = table.read_schema(snapshot_id, plan.snapshot)
    sid = plan.snapshot.id if plan.snapshot else None
    return existing_indexes(table, sid, schema, list(plan.files), problems), problems


def advise(table, workload: str | Sequence[Query], snapshot_id: int | None = None,
           sample: int | None = DEFAULT_SAMPLE, measure: Measure | None = None, seed: int = 0, dialect: str = "spark", progress: Progress | None = None) -> Advice:
    """Advise on ``table``'s file indexes for ``workload`` (file text or parsed queries).

    ``sample``: how many live files candidates are built on (None: all); with ``measure`` they
    are built and measured by it on every file (on Spark: :func:`indexcore.spark.jobs.what_if.what_if_measure`).
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
    existing = existing_indexes(table, sid, schema, files, problems)
    deleted = DeletedPositions(table, problems)
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
        measure_existing(table, schema, run, existing, by_path, deleted, problems)
        tick(run.name)
    good = [r for r in runs if r.explanation is not None]
    verdicts(table, sid, existing, good, problems)

    candidates = measure_candidates(table, sid, schema, files, good, existing, by_path, sample, measure,
                                    seed, problems, progress)
    steps = done + 1
    tick("statements")
    statements = statements_for(table.name, dict(schema.options), existing, candidates, dialect)
    return Advice(table.name, sid, runs, skipped_queries, existing, candidates, statements, problems)
