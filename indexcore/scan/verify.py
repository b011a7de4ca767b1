"""Verify: read the data and flag every file pruned although it holds a matching row, and every
matching row missing from an index bitmap, naming the leaf columns to blame."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pyroaring import BitMap, BitMap64

from indexcore.errors import IndexCoreError
from indexcore.expr import Leaf, Predicate, leaves
from indexcore.expr.rows import row_matches
from indexcore.formats.base import BitmapResult
from indexcore.scan.bucket import BucketSelector
from indexcore.scan.dv import deleted_positions
from indexcore.scan.file_index import FileIndexPredicate
from indexcore.scan.records import Batch, Decision
from indexcore.scan.stats import column_stats, devolved, stats_test
from indexcore.warehouse.global_index import GlobalIndexFile
from indexcore.warehouse.model import LiveFile, Problem, TableSchema


class Verifier:
    """Checks decided files against their data (read whole, deletion vector applied)."""

    def __init__(self, table, table_schema: TableSchema, predicate: Predicate,
                 bucket_selector: BucketSelector | None, global_used: Sequence[GlobalIndexFile]):
        self.table = table
        self.storage = table.storage
        self.schema = table_schema
        self.pk = bool(table_schema.primary_keys)
        self.predicate = predicate
        self.bucket_selector = bucket_selector
        self.global_used = global_used  # the global index files the scan used

    def positions(self, lf: LiveFile, fs: TableSchema, pred: Predicate) -> BitMap:
        # pyarrow's Parquet and ORC readers load only when verifying
        from indexcore.warehouse.data_file import matching_positions

        return matching_positions(self.storage, lf, fs, self.schema, pred)

    def verify(self, batch: Batch, violations: list[dict[str, Any]]) -> None:
        """Verify each file of a decided batch, in order."""
        for lf, record, push, evaluator, deleted, kept in zip(batch.files, batch.records, batch.pushed,
                                                               batch.evaluators, batch.deleted, batch.kept,
                                                               strict=True):
            self.verify_file(lf, record, push.file_schema, push.field_map, evaluator, deleted, kept, violations)

    def verify_file(self, lf: LiveFile, record: dict, fs: TableSchema, fmap: Mapping[str, str | None],
                    evaluator: FileIndexPredicate | None, deleted: Any, kept: Any, violations: list) -> None:
        problems = record["problems"]
        if lf.deletion_vector is not None and deleted is None:
            deleted = deleted_positions(self.table, lf, problems)
        try:
            match = self.positions(lf, fs, self.predicate)
        except IndexCoreError as exc:
            problems.append(Problem(lf.path, exc.structure or "data file", exc.message))
            return
        visible = match - deleted if deleted is not None else match
        record["matching_rows"] = len(visible)
        if not visible:
            return
        path = lf.path
        n = len(visible)
        if record["partition_decision"] is Decision.SKIP:
            cols = self.culprits(lf, fs, deleted, lambda leaf: row_matches(leaf, lf.partition_spec, self.schema),
                                 set(self.schema.partition_keys))
            violations.append(violation(path, cols, f"partition filter pruned a file with {n} matching rows"))
        if record["bucket_decision"] is Decision.SKIP:
            cols = list(self.bucket_selector.bucket_keys) if self.bucket_selector else []
            violations.append(violation(path, cols, f"bucket filter pruned a file with {n} matching rows"))
        if record["stats_decision"] is Decision.SKIP:
            stats = column_stats(lf, self.schema, fs, fmap, key_stats=self.pk)
            cols = self.culprits(lf, fs, deleted, lambda leaf: leaf.field not in stats or stats_test(
                leaf, lf.file.row_count, *stats[leaf.field]), None)
            violations.append(violation(path, cols, f"stats pruned a file with {n} matching rows"))
        if kept is not None:
            lost = BitMap64(visible) - kept
            if lost:
                used = {g.field.name for g in self.global_used}
                cols = sorted({leaf.field for leaf in leaves(self.predicate) if leaf.field in used})
                violations.append(violation(path, cols, f"global index drops {len(lost)} of {n} matching rows "
                                                         f"(first positions: {list(lost)[:10]})"))
        for what, result in (("index answer", record["raw_index_result"]), ("index decision",
                                                                            record["index_decision"])):
            if result is None:
                continue
            if isinstance(result, BitmapResult):
                missing = visible - result.bitmap
            elif not result.remain():
                missing = visible
            else:
                continue
            if not missing:
                continue
            cols = self.index_culprits(lf, fs, fmap, evaluator, deleted)
            violations.append(violation(
                path, cols, f"{what} drops {len(missing)} of {n} matching rows "
                            f"(first positions: {list(missing)[:10]})"))
            break

    def culprits(self, lf, fs, deleted, passes: Callable[[Leaf], bool], fields: set | None) -> list[str]:
        """Leaf columns whose own test said 'no row' although a visible row satisfies the leaf."""
        cols = []
        for leaf in leaves(self.predicate):
            if fields is not None and leaf.field not in fields:
                continue
            if passes(leaf):
                continue
            try:
                hits = self.positions(lf, fs, leaf)
            except IndexCoreError:
                continue
            if deleted is not None:
                hits = hits - deleted
            if hits and leaf.field not in cols:
                cols.append(leaf.field)
        return cols

    def index_culprits(self, lf, fs, fmap, evaluator, deleted) -> list[str]:
        if evaluator is None:
            return []
        cols = []
        for leaf in leaves(self.predicate):
            renamed = devolved([leaf], fmap)
            if not renamed:
                continue
            try:
                answer = evaluator.evaluate(renamed[0])
                hits = self.positions(lf, fs, leaf)
            except IndexCoreError:
                continue
            if deleted is not None:
                hits = hits - deleted
            lost = hits - answer.bitmap if isinstance(answer, BitmapResult) else (
                hits if not answer.remain() else BitMap())
            if lost and leaf.field not in cols:
                cols.append(leaf.field)
        return cols


def violation(path: str, cols: list[str], reason: str) -> dict[str, Any]:
    return {"path": path, "column": ", ".join(cols) if cols else None, "reason": reason}
