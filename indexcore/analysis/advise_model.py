"""The advisor's records: what it measured per query, per existing index and per candidate.

:class:`Advice` holds them all; every record's ``to_json`` is what the CLI prints with
``--format json`` (``details`` adds the per-file lists).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from indexcore.analysis.bloom_sizing import OVER_FPP, OVERSIZED
from indexcore.analysis.workload import Scan
from indexcore.scan.records import Explanation
from indexcore.warehouse.model import Problem

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
