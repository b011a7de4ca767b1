"""A table's manifest lists and manifests, decoded once and kept in the table's caches.

Manifests are decoded with the cyclic GC paused: a plan builds 10,000s of long-lived, acyclic
metadata objects that generation-2 collections would otherwise rescan again and again.
"""

from __future__ import annotations

import gc
import posixpath
from collections.abc import Iterator
from contextlib import contextmanager

from indexcore.warehouse.manifest import (
    MANIFEST_ENTRY,
    MANIFEST_LIST,
    check_record,
    data_file_meta,
    entry_ok,
    manifest_file_meta,
    read_records,
)
from indexcore.warehouse.model import ManifestFileMeta


@contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic GC off while a plan builds 10,000s of long-lived, acyclic metadata objects.

    Otherwise generation-2 collections rescan every object decoded so far, again and again
    (about a fifth of planning time). Left alone when the caller already turned GC off.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


class TableManifests:
    """Manifest reads of :class:`~indexcore.warehouse.table.Table`."""

    @property
    def manifest_format(self) -> str:
        return self.core_options.manifest_format

    def manifest_path(self, name: str) -> str:
        """Where a manifest, manifest list or index manifest named ``name`` lives (branch-aware)."""
        path = posixpath.join(self.path, "manifest", name)
        if self.path != self.data_root and not self.storage.exists(path):
            path = posixpath.join(self.data_root, "manifest", name)
        return path

    def manifest_list(self, name: str) -> list[ManifestFileMeta]:
        """Rows of one manifest list (cached); raises IndexCoreError if unreadable."""
        if name not in self.caches.manifest_lists:
            path = self.manifest_path(name)
            recs = read_records(self.storage.read_bytes(path), self.manifest_format, path)
            ptypes = self.partition_types()
            for i, r in enumerate(recs):
                check_record(r, MANIFEST_LIST, path, i)
            self.caches.manifest_lists[name] = [manifest_file_meta(r, ptypes) for r in recs]
        return self.caches.manifest_lists[name]

    def manifest_entries(self, name: str) -> list[tuple]:
        """Entries of one manifest as (kind, merge key, partition bytes, bucket, total, file)."""
        cached = self.caches.manifests.get(name)
        if cached is not None:
            return cached
        path = self.manifest_path(name)
        types = self._stats_types
        to_meta = data_file_meta
        out = []
        append = out.append
        with gc_paused():
            for i, r in enumerate(read_records(self.storage.read_bytes(path), self.manifest_format, path)):
                if not entry_ok(r):
                    check_record(r, MANIFEST_ENTRY, path, i)
                part = r["_PARTITION"]
                bucket = r["_BUCKET"]
                meta = to_meta(r["_FILE"], types)
                d = meta.__dict__
                append((r["_KIND"], (part, bucket, d["level"], d["file_name"], d["external_path"]),
                        part, bucket, r["_TOTAL_BUCKETS"], meta))
        self.caches.manifests.put(name, out, max(len(out), 1))
        return out

