"""The bucket stage: fixed-bucket tables whose predicate pins every bucket key keep only the
buckets those key combinations hash to (``BucketSelectConverter`` / ``BucketSelector``).

Fixed-bucket tables (``bucket`` > 0, default bucket function) whose predicate pins every bucket
key (``bucket-key``, else the trimmed primary keys) with equal / IN literals: conjuncts over
bucket keys only, each an OR of equal / IN leaves on one key (null literals dropped; a key pinned
twice keeps the intersection), at most 1,000 combinations; a file's bucket is tested against
``abs(hash % total_buckets)`` with the manifest entry's total. Also the grouping of Paimon's
whole-bucket value filter (:func:`whole_bucket_filter`), which the stats stage applies.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from indexcore.errors import IndexCoreError
from indexcore.expr import Equal, In, Leaf, Predicate, conjuncts, disjuncts
from indexcore.formats.binary_row import bucket_of, key_hash
from indexcore.scan.records import Batch, Decision
from indexcore.warehouse.model import LiveFile, TableSchema

MAX_BUCKET_KEY_ROWS = 1000  # Paimon's BucketSelector.MAX_VALUES


@dataclass(frozen=True)
class BucketSelector:
    """The bucket-key rows a predicate pins; a fixed bucket is kept when one of them hashes to it."""

    bucket_keys: tuple[str, ...]
    key_rows: tuple[tuple, ...]
    hashes: tuple[int, ...]

    def buckets(self, total_buckets: int) -> frozenset[int]:
        """The buckets kept among ``total_buckets`` (``abs(hash % total)`` per key row)."""
        return frozenset(bucket_of(h, total_buckets) for h in self.hashes)


def bucket_selector(schema: TableSchema, predicate: Predicate) -> BucketSelector | None:
    """Paimon's ``BucketSelectConverter`` / ``BucketSelector``: the bucket-key combinations
    ``predicate`` allows, or None when it does not select buckets (no pruning)."""
    if schema.bucket <= 0:
        return None
    if schema.core_options.bucket_function_type != "default":
        return None
    keys = tuple(schema.bucket_keys)
    if not keys or any(k not in schema.field_names for k in keys):
        return None
    if not set(keys) <= predicate.fields():
        return None
    values: dict[str, list] = {}
    for conjunct in conjuncts(predicate):
        if not conjunct.fields() <= set(keys):
            continue  # pickTransformFieldMapping keeps conjuncts over bucket keys only
        field_name: str | None = None
        found: list = []
        for leaf in disjuncts(conjunct):
            if not isinstance(leaf, Leaf) or not isinstance(leaf.function, Equal | In) or \
                    (field_name is not None and leaf.field != field_name):
                break
            field_name = leaf.field
            found.extend(v for v in leaf.literals if v is not None)
        else:
            if field_name is None:
                continue
            if field_name in values:  # pinned again: keep the intersection
                values[field_name] = [v for v in values[field_name] if v in found]
                if not values[field_name]:
                    return None  # contradictory: Paimon does not prune buckets then
            else:
                values[field_name] = found
    rows: list[tuple] = [()]
    for k in keys:
        if k not in values:
            return None
        if len(rows) * len(values[k]) > MAX_BUCKET_KEY_ROWS:
            return None
        rows = [row + (v,) for row in rows for v in values[k]]
    types = [schema.field(k).type for k in keys]
    try:
        hashes = tuple(key_hash(row, types) for row in rows)
    except (IndexCoreError, TypeError, ValueError, OverflowError, ArithmeticError, AttributeError):
        return None  # a literal that is no value of the key's type: no pruning
    return BucketSelector(keys, tuple(rows), hashes)


class BucketStage:
    """``bucket``: a file is kept when its bucket is among those the predicate selects."""

    def __init__(self, table_schema: TableSchema, predicate: Predicate):
        self.schema = table_schema
        self.selector = bucket_selector(table_schema, predicate)
        self._selected: dict[int, frozenset[int]] = {}  # total buckets -> the buckets kept

    def bucket_ok(self, lf: LiveFile) -> bool:
        return self.keeps(lf.bucket, lf.total_buckets)

    def keeps(self, bucket: int, total_buckets: int | None) -> bool:
        """Is ``bucket`` (of a file written with ``total_buckets``) among those selected?"""
        if self.selector is None:
            return True
        total = total_buckets if total_buckets and total_buckets > 0 else self.schema.bucket
        if total not in self._selected:
            self._selected[total] = self.selector.buckets(total)
        return bucket in self._selected[total]

    def note(self, bucket: int, total_buckets: int | None) -> str:
        """Why a file of ``bucket`` was pruned."""
        keys = ", ".join(self.selector.bucket_keys)
        return f"bucket {bucket} of {total_buckets or self.schema.bucket} holds none of the selected bucket keys ({keys})"

    def decide(self, batch: Batch) -> None:
        for lf, record in zip(batch.files, batch.records, strict=True):
            ok = self.bucket_ok(lf)
            record["bucket_decision"] = Decision.of(ok)
            if not ok:
                record["notes"].append(self.note(lf.bucket, lf.total_buckets))


def whole_bucket_filter(files: Sequence[LiveFile], file_ok: Callable[[LiveFile], bool],
                        keep_all: bool) -> dict[str, bool]:
    """Primary-key tables merging on read: ``filterWholeBucketPerFile`` / ``AllFiles``. Per
    (partition, bucket), ``file_ok`` (the value stats test) decides each file where the bucket's
    files do not overlap (one file, or one level above 0); else the bucket is kept whole when any
    file passes (always with ``keep_all``: partial-update and aggregation merge engines)."""
    out: dict[str, bool] = {}
    groups: dict[tuple, list[LiveFile]] = {}
    for lf in files:
        groups.setdefault((lf.partition, lf.bucket), []).append(lf)
    for group in groups.values():
        per_file = {lf.path: file_ok(lf) for lf in group}
        levels = {lf.file.level for lf in group}
        no_overlap = len(group) <= 1 or (0 not in levels and len(levels) == 1)
        if no_overlap:
            out.update(per_file)
        else:
            keep = keep_all or any(per_file.values())
            out.update({p: keep for p in per_file})
    return out
