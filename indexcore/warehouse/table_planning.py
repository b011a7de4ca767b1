"""Planning: the live files of one snapshot, as Paimon's ``FileStoreScan`` finds them.

:meth:`TablePlanning.plan` reads the snapshot's base and delta manifest lists, decodes every
manifest once (kept on the table), merges ADD/DELETE entries into the live set, and attaches each
live file's file-index location and deletion vector from the index manifest. A bad part becomes
a :class:`Problem`; the rest goes on.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from dataclasses import dataclass, field

from indexcore.errors import IndexCoreError
from indexcore.formats.vector_index import FULL_TEXT_INDEX_TYPES, VECTOR_INDEX_TYPES
from indexcore.io import Fetch
from indexcore.paimon.index_types import DELETION_VECTORS, HASH
from indexcore.warehouse.global_index import DECODED_GLOBAL_TYPES
from indexcore.warehouse.manifest import (
    INDEX_MANIFEST_ENTRY,
    KINDS,
    check_record,
    index_manifest_entry,
    read_records,
)
from indexcore.warehouse.model import (
    ADD,
    IndexManifestEntry,
    LiveFile,
    ManifestEntry,
    ManifestFileMeta,
    Problem,
    Snapshot,
)
from indexcore.warehouse.table_manifests import gc_paused

KNOWN_INDEX_TYPES = (DELETION_VECTORS, HASH, *DECODED_GLOBAL_TYPES)
# vector and full-text global indexes: listed with their metadata (warehouse.global_index), not searched
LISTED_GLOBAL_TYPES = VECTOR_INDEX_TYPES + FULL_TEXT_INDEX_TYPES
_new = object.__new__
# LiveFile's slot setters in field order (its frozen __setattr__ refuses; its __init__ costs 3x)
_LIVE_SLOTS = tuple(getattr(LiveFile, f).__set__ for f in ("partition", "partition_spec", "bucket", "file", "path",
                                                          "index_path", "deletion_vector", "dv_file_path",
                                                          "bitmap64", "total_buckets"))


@dataclass
class Plan:
    """The live files of one snapshot and its index manifest, with what could not be read."""

    snapshot: Snapshot | None
    files: list[LiveFile] = field(default_factory=list)
    index_entries: list[IndexManifestEntry] = field(default_factory=list)
    hash_indexes: dict[tuple, list[IndexManifestEntry]] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    manifests: list[ManifestFileMeta] = field(default_factory=list)

    @property
    def unknown_indexes(self) -> list[IndexManifestEntry]:
        """Index manifest entries of kinds indexcore does not decode (global indexes...)."""
        return [e for e in self.index_entries if e.index_file.index_type not in KNOWN_INDEX_TYPES]


def merge_into(live: dict[tuple, tuple], entries: Iterable[tuple]) -> None:
    """Paimon's merge of manifest entries, in order: an ADD makes its merge key live, a DELETE
    removes it (``entries`` as :meth:`TableManifests.manifest_entries` gives them)."""
    for e in entries:
        if e[0] == 0:
            live[e[1]] = e
        else:
            live.pop(e[1], None)


class TablePlanning:
    """Planning of :class:`~indexcore.warehouse.table.Table`."""

    def plan(self, snapshot_id: int | None = None) -> Plan:
        """Live files of a snapshot (latest by default), cached per snapshot id."""
        snap = self.snapshot(snapshot_id)
        if snap is None:
            return Plan(None)
        cached = self.caches.plans.get(snap.id)
        if cached is not None:
            return cached
        plan = Plan(snap)
        self._check_options(plan)
        with gc_paused():
            self._plan_files(plan, snap)
        self.caches.plans.put(snap.id, plan)
        return plan

    def _plan_files(self, plan: Plan, snap: Snapshot) -> None:
        """Merge ADD/DELETE entries of every manifest into ``plan.files`` (with index and DV)."""
        live = self.live_entries(snap, plan.problems, plan.manifests)
        self._index_manifest(plan, snap)
        plan.files.extend(self.live_files(live.values(), self.deletion_vector_ranges(plan.index_entries, plan.problems),
                                          plan.problems))

    def deletion_vector_ranges(self, index_entries: Iterable[IndexManifestEntry], problems: list) -> dict[tuple, tuple]:
        """(partition values, bucket, data file name) -> (its DV range, the DV index file's path), from
        the index manifest's live entries."""
        dvs = {}
        for ie in index_entries:
            meta = ie.index_file
            if meta.index_type == DELETION_VECTORS and meta.dv_ranges:
                path = self.index_file_path(ie, self.partition_dir(ie.partition), problems)
                self.storage.note_size(path, meta.file_size)
                for r in meta.dv_ranges:
                    dvs[(ie.partition, ie.bucket, r.data_file)] = (r, path)
        return dvs

    def live_files(self, live: Iterable[tuple], dvs: dict[tuple, tuple], problems: list) -> list[LiveFile]:
        """The :class:`LiveFile` of each merged live entry (:meth:`merge_entries`), with its file-index
        path and deletion vector (``dvs``: :meth:`deletion_vector_ranges`); the one place planned files
        are made, in one process or in the Spark tasks of :mod:`indexcore.spark.jobs.metadata`."""
        bitmap64 = self.core_options.deletion_vectors_bitmap64
        dirs: dict[tuple, tuple] = {}  # (partition bytes, bucket) -> (values, spec, bucket dir + "/")
        files: list[LiveFile] = []
        append = files.append
        for _kind, _key, part, bucket, total, meta in live:
            where = dirs.get((part, bucket))
            if where is None:
                values, spec, pdir = self.partition(part)
                where = dirs[(part, bucket)] = (values, spec, self.bucket_dir(pdir, bucket) + "/")
            values, spec, folder = where
            d = meta.__dict__
            name = d["file_name"]
            external = d["external_path"]
            if external:
                path = self.resolve_external(external, problems)
                folder = posixpath.dirname(path) + "/"
            else:
                path = folder + name
            index_name = meta.index_file_name if d["extra_files"] else None
            dv = dvs.get((values, bucket, name)) if dvs else None
            live_file = _new(LiveFile)  # frozen and slotted: each slot set through its descriptor
            for put, value in zip(_LIVE_SLOTS, (values, spec, bucket, meta, path,
                                                folder + index_name if index_name else None,
                                                dv[0] if dv else None, dv[1] if dv else None, bitmap64, total), strict=True):
                put(live_file, value)
            append(live_file)
        return files

    def _read_lists(self, names: Iterable[str | None], problems: list, into: list[ManifestFileMeta],
                    also: str | None = None) -> None:
        """The rows of manifest lists ``names`` into ``into`` (object stores: the lists and ``also``,
        an index manifest, fetched in one round of parallel requests)."""
        names = [n for n in names if n]
        self.storage.prefetch([Fetch(self.manifest_path(n)) for n in [*names, also]
                               if n and n not in self.caches.manifest_lists])
        for list_name in names:
            try:
                into.extend(self.manifest_list(list_name))
            except IndexCoreError as exc:
                self._problem(self.manifest_path(list_name), "manifest list", exc.message, problems)

    def merge_entries(self, live: dict[tuple, tuple], manifests: Iterable[ManifestFileMeta],
                      problems: list) -> bool:
        """Apply the ADD/DELETE entries of ``manifests`` to ``live`` (merge key -> entry), in order,
        as Paimon's ``FileStoreScan`` merges them; False when a manifest could not be read."""
        manifests = list(manifests)
        self.storage.prefetch([Fetch(self.manifest_path(mf.file_name)) for mf in manifests
                               if mf.file_name not in self.caches.manifests])
        whole = True
        for mf in manifests:
            entries = self.read_manifest(mf, problems)
            if entries is None:
                whole = False
                continue
            merge_into(live, entries)
        return whole

    def read_manifest(self, mf: ManifestFileMeta, problems: list) -> list[tuple] | None:
        """The entries of one manifest (:meth:`manifest_entries`); None, with a problem, when it
        cannot be read."""
        try:
            return self.manifest_entries(mf.file_name)
        except IndexCoreError as exc:
            self._problem(self.manifest_path(mf.file_name), "manifest", exc.message, problems)
            return None

    def manifest_files(self, snap: Snapshot, problems: list) -> list[ManifestFileMeta]:
        """The manifests of ``snap``'s base and delta manifest lists, in the order they merge."""
        manifests: list[ManifestFileMeta] = []
        self._read_lists((snap.base_manifest_list, snap.delta_manifest_list), problems, manifests,
                         snap.index_manifest)
        return manifests

    def plan_head(self, snapshot_id: int | None = None) -> Plan:
        """A plan of a snapshot without its files: the option problems, the manifests to merge and
        the index manifest (for a planner that merges the manifests elsewhere, e.g. in Spark tasks)."""
        snap = self.snapshot(snapshot_id)
        plan = Plan(snap)
        if snap is None:
            return plan
        self._check_options(plan)
        plan.manifests = self.manifest_files(snap, plan.problems)
        self._index_manifest(plan, snap)
        return plan

    def live_entries(self, snap: Snapshot, problems: list,
                     manifests: list[ManifestFileMeta] | None = None) -> dict[tuple, tuple]:
        """The live data-file entries of ``snap`` (base and delta manifest lists merged)."""
        manifests = [] if manifests is None else manifests
        manifests.extend(self.manifest_files(snap, problems))
        live: dict[tuple, tuple] = {}
        self.merge_entries(live, manifests, problems)
        return live

    def delta_manifests(self, snap: Snapshot, problems: list) -> list[ManifestFileMeta] | None:
        """The manifests of ``snap``'s delta manifest list (what this commit changed); None when
        the list cannot be read."""
        if not snap.delta_manifest_list:
            return []
        try:
            return list(self.manifest_list(snap.delta_manifest_list))
        except IndexCoreError as exc:
            self._problem(self.manifest_path(snap.delta_manifest_list), "manifest list", exc.message, problems)
            return None

    def manifest_entry_list(self, snapshot_id: int | None = None) -> list[ManifestEntry]:
        """Every entry (ADD and DELETE) of the snapshot's manifests, unmerged."""
        plan = self.plan(snapshot_id)
        out = []
        for mf in plan.manifests:
            try:
                entries = self.manifest_entries(mf.file_name)
            except IndexCoreError:
                continue
            for kind, _key, part, bucket, total, meta in entries:
                out.append(ManifestEntry(KINDS.get(kind, str(kind)), self.partition(part)[0], bucket, total, meta))
        return out

    def _check_options(self, plan: Plan) -> None:
        for key, reason in self.core_options.problems:
            self._problem(self.path, f"option {key}", reason, plan.problems)

    def index_entries(self, snap: Snapshot, problems: list) -> list[IndexManifestEntry]:
        """The live entries of ``snap``'s index manifest (which Paimon rewrites whole per commit)."""
        if not snap.index_manifest:
            return []
        path = self.manifest_path(snap.index_manifest)
        try:
            recs = read_records(self.storage.read_bytes(path), self.manifest_format, path)
        except IndexCoreError as exc:
            self._problem(path, "index manifest", exc.message, problems)
            return []
        ptypes = self.partition_types()
        live: dict[tuple, IndexManifestEntry] = {}
        for i, r in enumerate(recs):
            try:
                check_record(r, INDEX_MANIFEST_ENTRY, path, i)
                part = self.partition(r["_PARTITION"])[0] if ptypes else ()
                entry = index_manifest_entry(r, part)
            except (IndexCoreError, KeyError, TypeError) as exc:
                self._problem(path, "index manifest entry", str(exc), problems)
                continue
            key = (entry.partition, entry.bucket, entry.index_file.file_name)
            if entry.kind == ADD:
                live[key] = entry
            else:
                live.pop(key, None)
        return list(live.values())

    def _index_manifest(self, plan: Plan, snap: Snapshot) -> None:
        plan.index_entries = self.index_entries(snap, plan.problems)
        for e in plan.index_entries:
            kind = e.index_file.index_type
            if kind == HASH:
                plan.hash_indexes.setdefault((e.partition, e.bucket), []).append(e)
            elif kind not in KNOWN_INDEX_TYPES and not (e.index_file.global_index_meta is not None
                                                        and kind in LISTED_GLOBAL_TYPES):
                what = "global index" if e.index_file.global_index_meta is not None else "index"
                self._problem(posixpath.join(self.data_root, "index", e.index_file.file_name),
                              f"{what} {kind!r}", "index kind not decoded by indexcore", plan.problems)

