"""Views: Paimon's system tables (and our own index views) as pyarrow tables.

``view(table, "files")`` / ``view(table, "$files", snapshot_id=3)`` returns a ``pyarrow.Table``
with an explicit schema (``.to_pandas()`` for a frame). The CLI (``show``), the pages, the
notebook and :mod:`indexcore.frames.figures` all read these. Names follow Paimon's
``db.table$branch_NAME$VIEW`` spelling (:func:`parse_identifier`).
"""

from __future__ import annotations

import datetime as _dt
import decimal
from collections.abc import Callable
from dataclasses import dataclass

import pyarrow as pa

from indexcore.errors import IndexCoreError
from indexcore.views import census, indexes, system
from indexcore.views.census_blobs import iter_file_indexes
from indexcore.views.common import (
    UNPARTITIONED,
    IndexBlob,
    dv_cardinality,
    kept_view,
    partition_label,
    partition_text,
)
from indexcore.views.inspector import TableInspector

SYSTEM_VIEWS: dict[str, Callable[..., pa.Table]] = {
    "snapshots": system.snapshots, "schemas": system.schemas, "options": system.options,
    "manifests": system.manifests, "files": system.files, "file_indexes": census.file_indexes,
    "table_indexes": system.table_indexes, "buckets": system.buckets, "partitions": system.partitions,
    "tags": system.tags, "branches": system.branches,
}
INDEX_VIEWS: dict[str, Callable[..., pa.Table]] = {
    "bitmap_indexes": indexes.bitmap_indexes, "bitmap_values": indexes.bitmap_values,
    "bloom_filters": indexes.bloom_filters, "deletion_vectors": indexes.deletion_vectors,
    "hash_buckets": indexes.hash_buckets,
}
# every view by name: the two above, then the derived views :mod:`indexcore.analysis` registers
# (``$health``, ``$global_indexes``, ...) through :func:`register_view` when it is imported
VIEWS: dict[str, Callable[..., pa.Table]] = {**SYSTEM_VIEWS, **INDEX_VIEWS}
# per-file views of one snapshot, which health, the pages and the CLI each read: built once per
# (table, snapshot) and kept on the table (:meth:`Table.derived`), since a snapshot never changes
SNAPSHOT_VIEWS = frozenset({"files", "file_indexes", "deletion_vectors", "table_indexes"})
BRANCH_PREFIX = "branch_"


def register_view(name: str, build: Callable[..., pa.Table]) -> None:
    """Add a derived view ``$name``, built by ``build(table, snapshot_id, **kwargs)``; the layers
    above the views (:mod:`indexcore.analysis`) register theirs, so no view imports upward."""
    if name in SYSTEM_VIEWS or VIEWS.get(name, build) is not build:
        raise IndexCoreError(f"view ${name} is already registered")
    VIEWS[name] = build


def inspect(table) -> TableInspector:
    """pyiceberg-style access: ``views.inspect(table).files()`` is ``view(table, "files")``."""
    return TableInspector(table, VIEWS)


@dataclass(frozen=True)
class Identifier:
    """``db.table[$branch_NAME][$VIEW]`` split into its parts."""

    table: str
    branch: str | None = None
    view: str | None = None

    @property
    def table_ref(self) -> str:
        """The name :meth:`Warehouse.table` opens: ``db.table`` or ``db.table$branch_NAME``."""
        return self.table if self.branch is None else f"{self.table}${BRANCH_PREFIX}{self.branch}"


def parse_identifier(text: str) -> Identifier:
    """Split ``db.t$branch_dev$files`` into table, branch and view (each optional but the table)."""
    base, *parts = text.split("$")
    branch = view = None
    if parts and parts[0].startswith(BRANCH_PREFIX):
        branch = parts.pop(0)[len(BRANCH_PREFIX):]
        if not branch:
            raise IndexCoreError(f"empty branch name in {text!r}")
    if len(parts) > 1:
        raise IndexCoreError(f"{text!r}: expected db.table[$branch_NAME][$VIEW]")
    if parts:
        view = parts[0]
        if view not in VIEWS:
            raise IndexCoreError(f"no view ${view}; views: " + ", ".join(f"${v}" for v in VIEWS))
    return Identifier(base, branch, view)


def view(table, name: str, snapshot_id: int | None = None, **kwargs) -> pa.Table:
    """The view ``name`` (``files`` or ``$files``) of ``table`` at ``snapshot_id`` (latest by default)."""
    key = name.lstrip("$")
    if key not in VIEWS:
        raise IndexCoreError(f"no view ${key}; views: " + ", ".join(f"${v}" for v in VIEWS))
    if key in SNAPSHOT_VIEWS and not kwargs:
        snap = table.snapshot(snapshot_id)
        if snap is not None:
            return kept_view(table, key, snap.id, lambda: VIEWS[key](table, snap.id))
    return VIEWS[key](table, snapshot_id, **kwargs)


def _json_cell(value):
    if isinstance(value, _dt.datetime):
        return value.isoformat(timespec="milliseconds")
    if isinstance(value, _dt.date | _dt.time):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, float) and value != value:
        return None
    if isinstance(value, list):
        return [_json_cell(v) for v in value]
    if isinstance(value, dict):
        return {k: _json_cell(v) for k, v in value.items()}
    return value


def to_records(result: pa.Table) -> dict:
    """``{"columns": [...], "rows": [{...}]}`` with JSON-able cells (times as ISO 8601)."""
    return {"columns": result.column_names,
            "rows": [{k: _json_cell(v) for k, v in row.items()} for row in result.to_pylist()]}


__all__ = ["INDEX_VIEWS", "SYSTEM_VIEWS", "UNPARTITIONED", "VIEWS", "Identifier", "IndexBlob", "dv_cardinality",
           "inspect", "iter_file_indexes", "parse_identifier", "register_view", "partition_label", "partition_text", "to_records", "view"]
