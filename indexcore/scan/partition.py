"""The partition stage: the conjuncts that reference only partition keys, tested on each file's
partition values (``AbstractFileStoreScan``'s partition filter); and partition specs as input."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from indexcore.config import parse_pairs
from indexcore.errors import PredicateError
from indexcore.expr import Predicate, and_all
from indexcore.expr.rows import rows_matching
from indexcore.scan.records import Batch, Decision
from indexcore.types import from_text_or_python
from indexcore.warehouse.model import LiveFile, TableSchema


def partition_filter(table_schema: TableSchema, parts: Sequence[Predicate]) -> Predicate | None:
    """The conjuncts over partition keys only, ANDed; None on an unpartitioned table."""
    pkeys = set(table_schema.partition_keys)
    return and_all([c for c in parts if c.fields() <= pkeys]) if pkeys else None


class PartitionStage:
    """``partition``: built over every planned file, whose partitions it tests in one vectorized pass."""

    def __init__(self, table_schema: TableSchema, parts: Sequence[Predicate], files: Sequence[LiveFile]):
        self.filter = partition_filter(table_schema, parts)
        self.ok: dict[str, bool] = {}  # data file path -> the partition filter's answer
        if self.filter is not None:
            self.ok = dict(zip([lf.path for lf in files], rows_matching(
                self.filter, [lf.partition_spec for lf in files], table_schema), strict=True))

    def decide(self, batch: Batch) -> None:
        if self.filter is None:
            for record in batch.records:
                record["partition_decision"] = Decision.REMAIN
            return
        ok = self.ok
        for lf, record in zip(batch.files, batch.records, strict=True):
            record["partition_decision"] = Decision.of(bool(ok[lf.path]))


def parse_partition(table_schema: TableSchema, partition: Mapping[str, Any] | str | None) -> dict[str, Any] | None:
    """``{"k": v}`` or ``"k=v,k2=v2"`` as internal partition values (the default name is null)."""
    if partition is None:
        return None
    if isinstance(partition, str):
        partition = parse_pairs(partition, "a partition", PredicateError)
    default = table_schema.core_options.partition_default_name
    out = {}
    for key, value in partition.items():
        if key not in table_schema.partition_keys:
            raise PredicateError(f"{key!r} is not a partition key of the table "
                                 f"(partition keys: {', '.join(table_schema.partition_keys) or 'none'})")
        dtype = table_schema.field(key).type
        out[key] = None if value is None or value == default else from_text_or_python(dtype, value)
    return out
