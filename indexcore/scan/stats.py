"""Manifest-statistics pruning with Paimon's semantics (``LeafFunction.test`` on min/max/nulls).

Each leaf function owns its statistics test (:meth:`indexcore.expr.LeafFunction.test_stats`);
this module folds it over a predicate tree.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from indexcore.expr import Leaf, Predicate


def stats_test(leaf: Leaf, row_count: int, min_value: Any, max_value: Any, null_count: int | None) -> bool:
    """May a file with these statistics hold a row matching ``leaf``? (``LeafPredicate.test``)"""
    return leaf.function.test_stats(row_count, min_value, max_value, null_count, leaf.literals)


def test_predicate_on_stats(pred: Predicate, row_count: int,
                            stats: Mapping[str, tuple[Any, Any, int | None]]) -> bool:
    """Fold ``stats_test`` over a tree; a field without statistics may match."""
    if isinstance(pred, Leaf):
        if pred.field not in stats:
            return True
        return stats_test(pred, row_count, *stats[pred.field])
    return pred.function.test(test_predicate_on_stats(c, row_count, stats) for c in pred.children)


def file_stats_frame(table, snapshot_id: int | None = None, columns: Sequence[str] | None = None,
                     paths: Sequence[str] | None = None):
    """Per live file and column: the min, max and null count the manifest records (pandas).

    Read as the stats stage reads them (:func:`.explain.column_stats`: value stats mapped by
    field id across schema evolution, key stats for primary keys); ``columns`` / ``paths``
    restrict the columns and files. ``null_count`` None is unknown; a column whose type changed
    since the file was written has no usable statistics (all three None).
    """
    import pandas as pd

    from indexcore.scan.explain import column_stats, stats_json

    plan = table.plan(snapshot_id)
    schema = table.read_schema(snapshot_id, plan.snapshot)
    wanted = [c for c in schema.field_names if columns is None or c in columns]
    chosen = None if paths is None else set(paths)
    pk = bool(schema.primary_keys)
    rows = []
    for lf in plan.files:
        if chosen is not None and lf.path not in chosen:
            continue
        file_schema = table.file_schema(lf)
        shown = stats_json(schema, column_stats(lf, schema, file_schema, key_stats=pk, only=wanted), wanted)
        base = {"file_name": lf.path.rsplit("/", 1)[-1], "partition": ", ".join(
            f"{k}={v}" for k, v in lf.partition_spec.items()), "bucket": lf.bucket, "level": lf.file.level,
            "row_count": lf.file.row_count, "schema_id": lf.file.schema_id}
        rows.extend({**base, "column": col, **got} for col, got in shown.items())
    frame = pd.DataFrame(rows, columns=["file_name", "partition", "bucket", "level", "row_count", "schema_id",
                                        "column", "min", "max", "null_count"])
    for name in ("min", "max"):  # as recorded (no float for ints); text when columns or files mix types
        values = [r[name] for r in rows]
        mixed = len({type(v) for v in values if v is not None}) > 1
        frame[name] = pd.Series([str(v) if mixed and v is not None else v for v in values], dtype=object)
    frame["null_count"] = frame["null_count"].astype("Int64")
    return frame
