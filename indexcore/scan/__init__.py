"""Evaluation of predicates against index data: file indexes (Paimon's ``FileIndexPredicate``)."""

from __future__ import annotations

from indexcore.scan.file_index import FileIndexPredicate, blob_predicate, evaluate_blob, result_to_json

__all__ = ["FileIndexPredicate", "blob_predicate", "evaluate_blob", "result_to_json"]
