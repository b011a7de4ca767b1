"""Where a table's files lie: partition and bucket folders, external paths (relocated when a
warehouse was copied elsewhere) and table-level index files."""

from __future__ import annotations

import posixpath

from indexcore.errors import StorageError
from indexcore.formats.binary_row import decode_binary_row
from indexcore.paimon.layout import strip_scheme
from indexcore.warehouse.model import IndexManifestEntry


class TablePaths:
    """Path resolution of :class:`~indexcore.warehouse.table.Table`."""

    def partition(self, raw: bytes) -> tuple:
        """(values, spec, relative dir) of a partition BinaryRow, cached by its bytes."""
        hit = self.caches.partitions.get(raw)
        if hit is None:
            layout = self.layout
            fields = layout.partition_fields
            values = decode_binary_row(raw, [f.type for f in fields], "partition") if fields else ()
            spec = {f.name: v for f, v in zip(fields, values, strict=True)}
            hit = (values, spec, layout.partition_dir(values))
            self.caches.partitions[raw] = hit
        return hit

    def bucket_dir(self, partition_dir: str, bucket: int) -> str:
        return self.layout.bucket_dir(partition_dir, bucket)

    def resolve_external(self, external: str, plan_problems: list | None = None) -> str:
        """An external path inside this warehouse: as written if reachable, else relocated.

        A warehouse copied elsewhere keeps its external folders beside the table or its
        database (e.g. ``db.db/external``); the path's tail under the configured external root
        is looked up there.
        """
        local = strip_scheme(external)
        try:
            full = self.storage.resolve(local)
            if self.storage.exists(full):
                return full
        except StorageError:
            pass
        for root in self.layout.external_roots() or [posixpath.dirname(local)]:
            if not local.startswith(root + "/"):
                continue
            rel = local[len(root) + 1:]
            if root not in self.caches.external_roots:
                self.caches.external_roots[root] = self._relocate_root(root, rel)
            new_root = self.caches.external_roots[root]
            if new_root is not None:
                return posixpath.join(new_root, rel)
        self._problem(external, "external path", "not reachable inside the warehouse", plan_problems)
        return local

    def _relocate_root(self, root: str, rel: str) -> str | None:
        base = posixpath.basename(root)
        db_dir = posixpath.dirname(self.data_root)
        for cand in (posixpath.join(self.data_root, base), posixpath.join(db_dir, base),
                     posixpath.join(self.storage.root, base)):
            try:
                if self.storage.exists(posixpath.join(cand, rel)):
                    return cand
            except StorageError:
                continue
        return None

    def index_file_path(self, entry: IndexManifestEntry, partition_dir: str | None = None,
                        plan_problems: list | None = None) -> str:
        """Where a table-level index file (DV, hash, global) lives."""
        meta = entry.index_file
        if meta.external_path:
            return self.resolve_external(meta.external_path, plan_problems)
        return self.layout.index_file_path(meta.file_name, partition_dir, entry.bucket)

    def partition_dir(self, values: tuple) -> str:
        """The relative directory (``k=v/k2=v2``) of a partition given its internal values."""
        for hit in self.caches.partitions.values():
            if hit[0] == values:
                return hit[2]
        return self.layout.partition_dir(values)

