"""What one table keeps of its metadata, in one object made per :class:`Table`.

Paimon's files never change once written, so a table keeps what it decoded: plans, manifests,
container heads, index readers and derived views, each a :class:`~indexcore.cache.LRU` bounded
by its setting (:mod:`indexcore.config`), plus the small per-table memos (schemas, snapshots,
manifest lists, partitions, relocated external roots) that grow with the table's own metadata.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from indexcore.cache import LRU
from indexcore.config import Settings
from indexcore.paimon.layout import PathLayout
from indexcore.warehouse.model import ManifestFileMeta, Snapshot, TableSchema


@dataclass
class TableCaches:
    """One table's caches; :meth:`of` sizes them from the settings."""

    plans: LRU  # snapshot id -> Plan, one each
    manifests: LRU  # manifest name -> decoded entries, weighed by entries
    heads: LRU  # container key -> (parsed head, error), one each
    head_bytes: LRU  # container key -> (head bytes, size, name, error), weighed by bytes
    readers: LRU  # (container key, entry, type, options) -> opened reader, weighed by blob bytes
    derived: LRU  # a key naming a snapshot -> a result built from it, weighed by rows
    labels: LRU  # (partition values, types) -> the partition's text in system views, one each
    schemas: dict[int, TableSchema] | None = None
    layout: tuple[TableSchema, PathLayout] | None = None
    snapshots: dict[int, Snapshot] = field(default_factory=dict)
    manifest_lists: dict[str, list[ManifestFileMeta]] = field(default_factory=dict)
    partitions: dict[bytes, tuple] = field(default_factory=dict)  # partition bytes -> (values, spec, dir)
    external_roots: dict[str, str | None] = field(default_factory=dict)

    @classmethod
    def of(cls, config: Settings) -> TableCaches:
        return cls(plans=LRU(config.plan_cache), manifests=LRU(config.manifest_cache_entries),
                   heads=LRU(config.head_cache_files), head_bytes=LRU(config.head_cache_bytes),
                   readers=LRU(config.reader_cache_bytes), derived=LRU(config.derived_rows),
                   labels=LRU(config.partition_labels))
