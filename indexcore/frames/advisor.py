"""Frames of the Advisor page: a pasted workload replayed by :func:`indexcore.analysis.advise.advise`."""

from __future__ import annotations

from indexcore.analysis.advise import DEFAULT_SAMPLE, EXACT_FILES, MIN_SCORE, advise
from indexcore.analysis.advise_statements import advice_summary
from indexcore.analysis.workload import Query, parse_workload
from indexcore.errors import IndexCoreError


def workload_queries(text: str) -> list[Query]:
    """The queries of a pasted workload (SELECTs or WHERE conditions, see
    :func:`~indexcore.analysis.workload.parse_workload`); an empty workload is an error."""
    queries = parse_workload(text)
    if not queries:
        raise IndexCoreError("the workload holds no query")
    return queries


#: The default sampling rule, as the Advisor page states it.
SAMPLE_RULE = f"automatic: every file up to {EXACT_FILES:,} per query, else {DEFAULT_SAMPLE}"

__all__ = ["DEFAULT_SAMPLE", "MIN_SCORE", "SAMPLE_RULE", "advice_summary", "advise", "workload_queries"]
