"""Paimon warehouse metadata: catalog, schemas, snapshots, manifests, live files."""

from .catalog import Warehouse
from .model import (
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
from .table import Plan, Table

__all__ = ["Warehouse", "Table", "Plan", "DataFileMeta", "DeletionVectorRange", "IndexFileMeta",
           "IndexManifestEntry", "LiveFile", "ManifestEntry", "ManifestFileMeta", "Problem",
           "SimpleStats", "Snapshot", "TableSchema"]
