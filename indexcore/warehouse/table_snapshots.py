"""A table's snapshots, tags and branches: listing, loading (kept per table) and time travel."""

from __future__ import annotations

import posixpath

from indexcore.errors import CorruptFileError, IndexCoreError, StorageError
from indexcore.paimon.layout import (
    BRANCH_PREFIX,
    SNAPSHOT_PREFIX,
    TAG_PREFIX,
    snapshot_path,
    tag_path,
)
from indexcore.warehouse.model import Snapshot
from indexcore.warehouse.snapshot import numbered, parse_snapshot


class TableSnapshots:
    """Snapshot, tag and branch reads of :class:`~indexcore.warehouse.table.Table`."""

    def snapshot_ids(self) -> list[int]:
        ids = [numbered(n, SNAPSHOT_PREFIX) for n in self._list("snapshot")]
        return sorted(i for i in ids if i is not None)

    def load_snapshot(self, sid: int) -> Snapshot | None:
        if sid not in self.caches.snapshots:
            path = snapshot_path(self.path, sid)
            try:
                self.caches.snapshots[sid] = parse_snapshot(self.storage.read_bytes(path), path)
            except IndexCoreError as exc:
                self._problem(path, "snapshot", exc.message)
                return None
        return self.caches.snapshots[sid]

    def snapshots(self) -> list[Snapshot]:
        """Every readable snapshot, oldest first (expired ones are simply absent)."""
        return [s for s in (self.load_snapshot(i) for i in self.snapshot_ids()) if s is not None]

    def snapshot(self, snapshot_id: int | None = None) -> Snapshot | None:
        """The snapshot with ``snapshot_id``, or the latest; None when the table has none."""
        if snapshot_id is not None:
            tagged = None if int(snapshot_id) in self.caches.snapshots else self._expired_tagged(int(snapshot_id))
            snap = tagged or self.load_snapshot(int(snapshot_id))
            if snap is None:
                raise StorageError(f"table {self.name} has no readable snapshot {snapshot_id}",
                                   file=posixpath.join(self.path, "snapshot"))
            return snap
        ids = self.snapshot_ids()
        if not ids:
            return None
        snap = self.load_snapshot(ids[-1])
        if snap is None:  # never fall back silently: an earlier snapshot is another answer
            path = posixpath.join(self.path, "snapshot", f"{SNAPSHOT_PREFIX}{ids[-1]}")
            reason = next((p.reason for p in reversed(self.problems) if p.path == path), "unreadable")
            raise CorruptFileError(f"the latest snapshot {ids[-1]} of table {self.name} cannot be read "
                                   f"({reason}); ask for an earlier one with --snapshot N", file=path,
                                   structure="snapshot")
        return snap

    def _expired_tagged(self, sid: int) -> Snapshot | None:
        """A tag's copy of snapshot ``sid`` when the snapshot itself has expired (Paimon keeps it)."""
        if self.storage.exists(snapshot_path(self.path, sid)):  # one check, not a listing per snapshot
            return None
        for snap in self.tags().values():
            if snap.id == sid:
                self.caches.snapshots[sid] = snap
                return snap
        return None

    def snapshot_at(self, timestamp_millis: int) -> Snapshot | None:
        """Time travel by time: the latest snapshot committed at or before the timestamp."""
        best = None
        for snap in self.snapshots():
            if snap.time_millis is not None and snap.time_millis <= timestamp_millis:
                best = snap
        return best

    def tags(self) -> dict[str, Snapshot]:
        """``tag/tag-NAME`` files: the snapshot each tag pins."""
        out = {}
        for name in sorted(self._list("tag")):
            if not name.startswith(TAG_PREFIX):
                continue
            path = tag_path(self.path, name[len(TAG_PREFIX):])
            try:
                out[name[len(TAG_PREFIX):]] = parse_snapshot(self.storage.read_bytes(path), path)
            except IndexCoreError as exc:
                self._problem(path, "tag", exc.message)
        return out

    def tag(self, name: str) -> Snapshot:
        tags = self.tags()
        if name not in tags:
            raise StorageError(f"table {self.name} has no tag {name!r}")
        return tags[name]

    def branches(self) -> list[str]:
        return sorted(n[len(BRANCH_PREFIX):] for n in self._list("branch") if n.startswith(BRANCH_PREFIX))

