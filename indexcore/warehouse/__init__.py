"""Paimon warehouse metadata: catalog, schemas, snapshots, manifests, live files."""

from indexcore.warehouse.catalog import Warehouse
from indexcore.warehouse.model import (
    DataFileMeta,
    DeletionVectorRange,
    IndexFileMeta,
    IndexManifestEntry,
    LiveFile,
    ManifestEntry,
    ManifestFileMeta,
    Problem,
    SimpleStats,
    Snapshot,
    TableSchema,
)
from indexcore.warehouse.table import Table
from indexcore.warehouse.table_planning import Plan

__all__ = ["Warehouse", "Table", "Plan", "DataFileMeta", "DeletionVectorRange", "IndexFileMeta",
           "IndexManifestEntry", "LiveFile", "ManifestEntry", "ManifestFileMeta", "Problem",
           "SimpleStats", "Snapshot", "TableSchema"]
