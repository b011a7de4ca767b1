"""Paimon's pruning stages, one module each, and the explainer that runs them over a table's files.

Stages in Paimon's order: :mod:`.partition`, :mod:`.bucket`, :mod:`.level`, :mod:`.stats` (with
schema evolution), :mod:`.global_index`, :mod:`.file_index`, :mod:`.dv`; :mod:`.records` holds
what they decide, :mod:`.funnel` sums it, :mod:`.explainer` runs them, :mod:`.verify` checks them.
"""

from __future__ import annotations

from indexcore.scan.explainer import (
    bind_predicate,
    decide_files,
    explain,
    explain_files,
    explanation,
    file_order,
)
from indexcore.scan.file_index import FileIndexPredicate, blob_predicate, evaluate_blob, result_to_json
from indexcore.scan.funnel import FUNNEL_KEYS, funnel
from indexcore.scan.records import Decision, Explanation, FileDecision, FileDecisions, Stage

__all__ = ["FUNNEL_KEYS", "Decision", "Explanation", "FileDecision", "FileDecisions", "FileIndexPredicate", "Stage",
           "bind_predicate", "blob_predicate", "decide_files", "evaluate_blob", "explain", "explain_files",
           "explanation", "file_order", "funnel", "result_to_json"]
