"""Prefix and pattern filters in the advisor's workload: why no file index is a candidate for
``LIKE 'x%'`` / startsWith (a range of strings, pruned by min/max statistics only) or for
``LIKE '%x'`` / ``'%x%'`` / endsWith / contains (pruned by nothing), said per column with what
the statistics skip today (:func:`pattern_notes`, the advice's ``column_notes``)."""

from __future__ import annotations

from typing import Any

from indexcore.analysis.advise_model import QueryRun
from indexcore.analysis.workload import PATTERN, PREFIX

#: Why no file index is a candidate for a prefix or a pattern: in Paimon (1.0 to its 2026 master)
#: only ``FileIndexReader``'s defaults answer ``visitStartsWith`` / ``visitEndsWith`` /
#: ``visitContains`` (REMAIN); bloom-filter, bitmap, bsi and range-bitmap do not override them.
NO_PATTERN_INDEX = ("Paimon's bloom-filter, bitmap, bsi and range-bitmap file indexes answer REMAIN to "
                    "startsWith / endsWith / contains (none overrides FileIndexReader.visitStartsWith), so no "
                    "file index is a candidate for them")


def pattern_notes(table_name: str, runs: list[QueryRun]) -> list[dict[str, Any]]:
    """Per column filtered by a prefix (``LIKE 'x%'``) or a pattern: why no index is a candidate
    for those queries, what min/max statistics skip for them today, and for a prefix (a range
    of strings, which only statistics prune) that sorting the data by the column lets them skip more."""
    by_column: dict[str, dict[str, list[QueryRun]]] = {}
    for r in runs:
        for col, kinds in r.scan.filters.items():
            for kind in kinds & {PREFIX, PATTERN}:
                by_column.setdefault(col, {}).setdefault(kind, []).append(r)
    out = []
    for col in sorted(by_column):
        for kind, mine in sorted(by_column[col].items()):
            names = [n for r in mine for n in r.names]
            pruned = sum(r.stats_pruned for r in mine)
            tested = pruned + sum(len(r.reached) for r in mine)
            if kind == PREFIX:
                message = (f"{col} is filtered by a prefix (LIKE 'x%', startsWith) in {len(names)} quer"
                           f"{'y' if len(names) == 1 else 'ies'}: a prefix is a range of strings that only min/max "
                           f"statistics prune ({pruned:,} of {tested:,} files those queries test); {NO_PATTERN_INDEX}. "
                           f"Sorting the data by {col} (e.g. CALL sys.compact(table => '{table_name}', "
                           f"order_strategy => 'order', order_by => '{col}')) narrows each file's min/max so "
                           "statistics skip more.")
            else:
                message = (f"{col} is filtered by a pattern (LIKE '%x' / '%x%', endsWith, contains) in {len(names)} "
                           f"quer{'y' if len(names) == 1 else 'ies'}: neither min/max statistics nor a file index "
                           f"prunes it ({NO_PATTERN_INDEX}); only another condition of those queries can.")
            out.append({"column": col, "filter": kind, "queries": names, "stats_skipped_files": pruned,
                        "stats_tested_files": tested, "message": message})
    return out
