"""The advisor's records: what it measured per query, per existing index and per candidate.

:class:`Advice` holds them all; every record's ``to_json`` is what the CLI prints with
``--format json`` (``details`` adds the per-file lists).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from indexcore.analysis.advise_sample import ZERO, Estimate
from indexcore.analysis.bloom_sizing import OVER_FPP, OVERSIZED
from indexcore.analysis.workload import Scan
from indexcore.warehouse.model import Problem

REACHED_INDEX = (None, "index")
NOT_IN_WORKLOAD, NEVER_PRUNES, STATS_PRUNE, REPLACE = \
    "not in workload", "never prunes", "statistics already prune", "replace"
#: Verdicts of an existing index, the first found wins: an undersized bloom filter prunes nothing
#: *because* it is undersized, so ``over fpp`` (resize) ranks before ``never prunes`` (drop).
VERDICTS = ("wrong column", OVER_FPP, NEVER_PRUNES, STATS_PRUNE, REPLACE, "stale", "missing", OVERSIZED,
            NOT_IN_WORKLOAD, "earns its keep")
#: A candidate is ``recommended`` only when one pass of the workload (weights as run counts)
#: skips at least this many data bytes per byte the index stores; below it, ``below threshold``:
#: its bytes are written at every commit and compaction and read by every query reaching its
#: files, so an index saving less than half its size per pass costs about what it saves.
MIN_SCORE = 0.5


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

    def to_json(self) -> dict[str, Any]:
        return {"files": self.files, "rows": self.rows, "bytes": self.bytes,
                "weighted_bytes": round(self.weighted_bytes, 3)}


@dataclass(frozen=True)
class Claim:
    """Files, rows, data bytes and weighted data bytes a candidate skips, each an :class:`Estimate`
    (exact when measured on every file the queries reach)."""

    files: Estimate = ZERO
    rows: Estimate = ZERO
    bytes: Estimate = ZERO
    weighted_bytes: Estimate = ZERO

    def __add__(self, other: Claim) -> Claim:
        return Claim(self.files + other.files, self.rows + other.rows, self.bytes + other.bytes,
                     self.weighted_bytes + other.weighted_bytes)

    @property
    def exact(self) -> bool:
        return self.files.exact

    def to_json(self) -> dict[str, Any]:
        return {"files": self.files.to_json(), "rows": self.rows.to_json(), "bytes": self.bytes.to_json(),
                "weighted_bytes": self.weighted_bytes.to_json(3)}


@dataclass
class QueryRun:
    """One distinct condition on the table: the queries that read the table with it (identical
    conditions merged, their weights summed) and a summary of today's explain, kept instead of
    the explanation so the advisor stays linear in the workload.

    ``reached``: indexes (into the plan's files) of the files the query reaches after partition,
    bucket, level and statistics pruning; ``index_skipped``: which of them today's indexes skip;
    ``rows_read``: rows read today of each; ``base_rows``: their live rows; ``sample``: the
    files candidates are measured on (:func:`.advise_sample.draw`).
    """

    scan: Scan
    names: list[str] = field(default_factory=list)
    weight: float = 0.0
    predicate: Any = None
    funnel: dict[str, Any] | None = None
    index_used: bool = True
    stats_pruned: int = 0
    reached: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64), repr=False)
    index_skipped: np.ndarray = field(default_factory=lambda: np.zeros(0, bool), repr=False)
    rows_read: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64), repr=False)
    base_rows: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64), repr=False)
    sizes: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64), repr=False)  # their data bytes
    sample: list[tuple[int, float]] = field(default_factory=list, repr=False)  # (position in reached, weight)
    # today's raw index answer of the sampled files whose answer is a bitmap (position -> result)
    raw_results: dict[int, Any] = field(default_factory=dict, repr=False)
    explain_json: dict[str, Any] | None = field(default=None, repr=False)
    error: str | None = None

    @property
    def name(self) -> str:
        return self.names[0] if self.names else self.scan.name

    @property
    def ok(self) -> bool:
        return self.funnel is not None

    def to_json(self, details: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {"query": self.name, "weight": self.weight, "where": self.scan.where,
                               "filters": {k: sorted(v) for k, v in self.scan.filters.items()}}
        if len(self.names) > 1:  # the queries with this condition (the first 20 without details)
            out["merged"] = list(self.names) if details else list(self.names[:20])
            out["merged_count"] = len(self.names)
        if self.funnel is not None:
            out["funnel"] = self.funnel
            out["index_used"] = self.index_used
        if self.error:
            out["error"] = self.error
        if self.scan.notes:
            out["notes"] = list(self.scan.notes)
        if details and self.explain_json is not None:
            out["explain"] = self.explain_json
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
    table_bytes: int = 0  # data bytes of the live files (for write_cost)

    @property
    def verdict(self) -> str:
        kinds = {f["verdict"] for f in self.findings}
        return next((v for v in VERDICTS if v in kinds), "earns its keep")

    @property
    def score(self) -> float:
        """Weighted data bytes it skips on its own per byte it stores (as a candidate's score)."""
        return self.skipped.weighted_bytes / max(self.bytes, 1)

    @property
    def write_cost(self) -> float:
        """Index bytes written per data byte."""
        return self.bytes / self.table_bytes if self.table_bytes else 0.0

    def to_json(self, details: bool = False) -> dict[str, Any]:
        out = {"column": self.column, "index_type": self.index_type, "configured": self.configured,
               "options": self.options, "files": len(self.blobs), "live_files": self.live_files,
               "bytes": self.bytes, "write_cost": round(self.write_cost, 6), "score": round(self.score, 3),
               "skipped": self.skipped.to_json(), "verdict": self.verdict,
               "findings": self.findings, "suggested_options": self.suggested_options,
               "queries": self.queries if details else [
                   {k: v for k, v in q.items() if k != "skipped_files"} for q in self.queries]}
        if self.missing:
            out["missing_on"] = self.missing if details else len(self.missing)
        if self.wrong_column:
            out["wrong_column"] = self.wrong_column if details else len(self.wrong_column)
        return out


@dataclass
class Candidate:
    """A hypothetical index (or a pair, for OR queries) measured against the workload.

    ``parts``: (column, index type, options) of each index it adds. ``alone``: what it skips on
    its own among the files the queries reach; ``extra``: what it skips beyond today's indexes.
    Both are :class:`Claim` s of estimates with their sample and interval. ``estimated_bytes``
    and ``build_seconds_table`` are the measured bytes and build time scaled to the table by rows
    and files.
    """

    parts: tuple[tuple[str, str, dict[str, str]], ...]
    reason: str
    built_files: int = 0
    total_files: int = 0
    sample_bytes: int = 0
    estimated_bytes: int = 0
    build_seconds: float = 0.0
    build_seconds_table: float = 0.0
    write_cost: float = 0.0
    alone: Claim = field(default_factory=Claim)
    extra: Claim = field(default_factory=Claim)
    queries: list[dict[str, Any]] = field(default_factory=list)
    recommended: bool = False
    verdict: str = ""
    replaces: list[tuple[str, str]] = field(default_factory=list)
    rank: int = 0
    problems: list[Problem] = field(default_factory=list)

    @property
    def column(self) -> str:
        return "+".join(p[0] for p in self.parts)

    @property
    def index_type(self) -> str:
        return "+".join(p[1] for p in self.parts)

    @property
    def options(self) -> dict[str, str]:
        if len(self.parts) == 1:
            return self.parts[0][2]
        return {f"{c}.{k}": v for c, _, o in self.parts for k, v in o.items()}

    @property
    def score(self) -> float:
        """Weighted data bytes skipped beyond today's indexes per byte stored."""
        return self.extra.weighted_bytes.value / max(self.estimated_bytes, 1)

    @property
    def score_alone(self) -> float:
        """Weighted data bytes it skips on its own per byte stored (an existing index's score)."""
        return self.alone.weighted_bytes.value / max(self.estimated_bytes, 1)

    def to_json(self, details: bool = False) -> dict[str, Any]:
        out = {"rank": self.rank, "column": self.column, "index_type": self.index_type, "options": self.options,
               "reason": self.reason, "recommended": self.recommended, "verdict": self.verdict,
               "score": round(self.score, 3), "score_alone": round(self.score_alone, 3),
               "estimated_bytes": self.estimated_bytes, "write_cost": round(self.write_cost, 6),
               "build_seconds": round(self.build_seconds_table, 3),
               "measured_on": {"files": self.built_files, "of": self.total_files, "index_bytes": self.sample_bytes,
                               "build_seconds": round(self.build_seconds, 3)},
               "exact": self.extra.exact and self.alone.exact,
               "skipped": self.alone.to_json(), "extra_skipped": self.extra.to_json(),
               "queries": self.queries if details else [
                   {k: v for k, v in q.items() if k not in ("index_skipped_files", "files")} for q in self.queries],
               "problems": [p.to_dict() for p in self.problems]}
        if len(self.parts) > 1:
            out["parts"] = [{"column": c, "index_type": t, "options": o} for c, t, o in self.parts]
        if self.replaces:
            out["replaces"] = [{"column": c, "index_type": t} for c, t in self.replaces]
        return out


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
    #: per column filtered by a prefix or a pattern: why no index is a candidate, what statistics skip
    column_notes: list[dict[str, Any]] = field(default_factory=list)

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
                "statements": self.statements, "column_notes": self.column_notes, "problems": problems}


#: what a candidate measured on a file says under one query (:class:`MeasuredFiles`, the what-if
#: job's per-file row): pruned and rows kept by today's indexes, by the candidate, by both
MEASURED = ("current_pruned", "current_rows", "hypothetical_pruned", "hypothetical_rows", "combined_rows")


@dataclass(frozen=True)
class MeasuredFiles:
    """A candidate built and measured on every file by ``measure`` (on Spark), as columns: the plan
    position of each file it was built on (``positions``) and, per query of the measure call (its
    ``wheres`` order), each of :data:`MEASURED` for those files with ``has`` (the file has an answer
    for that query). What a measure returns as ``file_results`` instead of one dict per file and
    query (at 1,000,000 files those dicts took gigabytes)."""

    positions: np.ndarray
    answers: tuple[dict[str, np.ndarray], ...]

    def __len__(self) -> int:
        return len(self.positions)

    def of_query(self, i: int, files: int) -> dict[str, np.ndarray]:
        """Query ``i``'s columns by plan position (``files`` positions; ``has`` False where unbuilt)."""
        got = self.answers[i] if i < len(self.answers) else {"has": np.zeros(len(self.positions), bool)}
        out = {"has": np.zeros(files, bool)}
        out["has"][self.positions] = got["has"]
        for name in MEASURED:
            column = np.zeros(files, np.int64)
            if name in got:
                column[self.positions] = got[name]
            out[name] = column
        return out
