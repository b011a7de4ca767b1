"""Frames of the Advisor page: a pasted workload replayed by :func:`indexcore.analysis.advise.advise`."""

from __future__ import annotations

from indexcore.analysis.advise import DEFAULT_SAMPLE, advise
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


__all__ = ["DEFAULT_SAMPLE", "advice_summary", "advise", "workload_queries"]
