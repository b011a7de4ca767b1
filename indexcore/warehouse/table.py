"""A Paimon table read-only: schemas, snapshots, tags, branches, and the live-file scan.

:meth:`Table.plan` does what Paimon's ``FileStoreScan`` does: read the snapshot's base and
delta manifest lists, decode every manifest once (cached on the Table), merge ADD/DELETE
entries into the live set, and attach each live file's file-index location and deletion
vector from the index manifest. A bad part becomes a :class:`Problem`; the rest goes on.
"""

from __future__ import annotations

import gc
import posixpath
from collections.abc import Callable, Hashable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from indexcore.cache import LRU, env_int
from indexcore.errors import CorruptFileError, IndexCoreError, StorageError
from indexcore.formats.binary_row import decode_binary_row
from indexcore.formats.container import STRUCTURE as HEAD_STRUCTURE
from indexcore.formats.container import ContainerHead, IndexEntry, head_bytes, head_length, parse_head
from indexcore.formats.vector_index import FULL_TEXT_INDEX_TYPES, VECTOR_INDEX_TYPES
from indexcore.io import ByteSource, BytesSource, Fetch, Storage
from indexcore.paimon.index_types import DELETION_VECTORS, HASH
from indexcore.paimon.layout import (
    BRANCH_PREFIX,
    SNAPSHOT_PREFIX,
    TAG_PREFIX,
    PathLayout,
    branch_path,
    schema_path,
    snapshot_path,
    strip_scheme,
    tag_path,
)
from indexcore.paimon.options import CoreOptions
from indexcore.types import DataType
from indexcore.warehouse.global_index import DECODED_GLOBAL_TYPES
from indexcore.warehouse.manifest import (
    INDEX_MANIFEST_ENTRY,
    KINDS,
    MANIFEST_ENTRY,
    MANIFEST_LIST,
    StatsTypes,
    check_record,
    data_file_meta,
    entry_ok,
    index_manifest_entry,
    manifest_file_meta,
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
    TableSchema,
)
from indexcore.warehouse.schema import parse_schema, schema_id_from_name
from indexcore.warehouse.snapshot import numbered, parse_snapshot

KNOWN_INDEX_TYPES = (DELETION_VECTORS, HASH, *DECODED_GLOBAL_TYPES)
# vector and full-text global indexes: listed with their metadata (warehouse.global_index), not searched
LISTED_GLOBAL_TYPES = VECTOR_INDEX_TYPES + FULL_TEXT_INDEX_TYPES
_new = object.__new__
_setattr = object.__setattr__
# per table: plans of this many snapshots, decoded manifests holding this many entries in all
PLAN_CACHE = env_int("INDEXCORE_PLAN_CACHE", 8)
MANIFEST_CACHE_ENTRIES = env_int("INDEXCORE_MANIFEST_CACHE_ENTRIES", 500_000)
# container heads kept per table (files; Paimon's data and index files never change once written)
HEAD_CACHE_FILES = env_int("INDEXCORE_HEAD_CACHE_FILES", 200_000)
# and their bytes, unparsed (a census reads them column-wise), weighed by bytes
HEAD_CACHE_BYTES = env_int("INDEXCORE_HEAD_CACHE_BYTES", 64 << 20)
HEAD_PREFETCH_BYTES = 4096
# opened file-index readers kept per table, weighed by their blobs' bytes
READER_CACHE_BYTES = env_int("INDEXCORE_READER_CACHE_BYTES", 32 << 20)
# results derived from one snapshot (its views' rows) kept per table, weighed by rows
DERIVED_CACHE_ROWS = env_int("INDEXCORE_DERIVED_ROWS", 2_000_000)
_ABSENT = object()
SYSTEM_BIGINT_FIELDS = ("_ROW_ID", "_SEQUENCE_NUMBER", "_KEY__SEQUENCE_NUMBER")


@contextmanager
def _gc_paused() -> Iterator[None]:
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


def _head_key(lf: LiveFile) -> tuple:
    """A file index container's identity: its ``.index`` file, or the data file it is embedded in."""
    return (lf.path, lf.index_path if lf.file.embedded_index is None else None)


@dataclass(frozen=True)
class KeptContainer:
    """A file's index container whose head and readers come from its table's caches
    (:meth:`Table.index_container`); it answers as :class:`FileIndexContainer` does."""

    table: Table
    file: LiveFile
    head: ContainerHead

    def reader(self, entry: IndexEntry, dtype: DataType, options: dict | None = None):
        return self.table.index_reader(self.file, entry, dtype, options)

    def prefetch(self, columns: Iterable[str]) -> None:
        """Nothing to fetch ahead: kept readers have read their bytes."""


class Table:
    """One table (or one branch of it) under a read-only :class:`Storage`."""

    def __init__(self, storage: Storage, path: str, name: str, branch: str | None = None,
                 data_root: str | None = None):
        self.storage = storage
        self.path = path.rstrip("/")
        self.name = name
        self.branch_name = branch
        self.data_root = data_root or self.path
        self.problems: list[Problem] = []
        self._problem_keys: set[tuple] = set()
        self._schemas: dict[int, TableSchema] | None = None
        self._snapshots: dict[int, Snapshot] = {}
        self._manifest_lists: dict[str, list[ManifestFileMeta]] = {}
        # decoded manifests (weighed by entries) and plans (one each), least recently used out
        self._manifests = LRU(MANIFEST_CACHE_ENTRIES)
        self._plans = LRU(PLAN_CACHE)
        self._heads = LRU(HEAD_CACHE_FILES)
        self._head_bytes = LRU(HEAD_CACHE_BYTES)
        self._readers = LRU(READER_CACHE_BYTES)
        self._derived = LRU(DERIVED_CACHE_ROWS)
        self._partitions: dict[bytes, tuple] = {}
        self._external_roots: dict[str, str | None] = {}
        self._layout: tuple[TableSchema, PathLayout] | None = None
        self._stats_types = StatsTypes(self._key_types, self._value_types)

    def __repr__(self) -> str:
        return f"Table({self.name!r})"

    def _repr_html_(self) -> str:
        from indexcore.warehouse.html import table_html

        return table_html(self)

    def _problem(self, path: str, structure: str, reason: str, into: list | None = None) -> None:
        p = Problem(path, structure, reason)
        if into is not None and p not in into:
            into.append(p)
        key = (path, structure, reason)
        if key not in self._problem_keys:
            self._problem_keys.add(key)
            self.problems.append(p)

    def _list(self, sub: str) -> list[str]:
        try:
            entries = self.storage.listdir(posixpath.join(self.path, sub))
        except StorageError as exc:
            self._problem(posixpath.join(self.path, sub), "directory", str(exc))
            return []
        return [posixpath.basename(e["name"].rstrip("/")) for e in entries]

    # -- schemas ---------------------------------------------------------------------------
    def schemas(self) -> list[TableSchema]:
        """Every readable schema version, by id."""
        if self._schemas is None:
            schemas = {}
            for name in self._list("schema"):
                sid = schema_id_from_name(name)
                if sid is None:
                    continue
                path = posixpath.join(self.path, "schema", name)
                try:
                    schemas[sid] = parse_schema(self.storage.read_bytes(path), path)
                except IndexCoreError as exc:
                    self._problem(path, "schema", exc.message)
            self._schemas = dict(sorted(schemas.items()))
        return list(self._schemas.values())

    def schema(self, schema_id: int | None = None) -> TableSchema:
        """The latest schema, or the one with ``schema_id``."""
        if self._schemas is None:
            self.schemas()
        schemas = self._schemas
        if not schemas:
            why = next((p for p in self.problems if p.structure == "schema"), None)
            raise StorageError(f"table {self.name} has no readable schema" + (f": {why.reason}" if why else ""),
                               file=why.path if why else self.path)
        if schema_id is None:
            return schemas[max(schemas)]
        if schema_id not in schemas:
            raise StorageError(f"no schema {schema_id}", file=schema_path(self.path, schema_id))
        return schemas[schema_id]

    def schema_or_latest(self, schema_id: int | None, path: str | None = None,
                         problems: list | None = None) -> TableSchema:
        """Schema ``schema_id``, or the latest one when it is missing or unreadable.

        The one fallback policy for "the schema this was written under": the fallback is
        reported as a :class:`Problem` naming ``path`` (also appended to ``problems``).
        """
        if schema_id is None:
            return self.schema()
        try:
            return self.schema(schema_id)
        except IndexCoreError as exc:
            latest = self.schema()
            self._problem(path or self.path, "schema", f"{exc.message}; using the latest schema {latest.id}",
                          problems)
            return latest

    def file_schema(self, live_file: LiveFile, problems: list | None = None) -> TableSchema:
        """The schema a data file was written under (see :meth:`schema_or_latest`)."""
        return self.schema_or_latest(live_file.file.schema_id, live_file.path, problems)

    def snapshot_schema(self, snapshot: Snapshot | None, problems: list | None = None) -> TableSchema:
        """The schema a snapshot was committed under (the latest for no snapshot)."""
        if snapshot is None:
            return self.schema()
        return self.schema_or_latest(snapshot.schema_id, snapshot.path, problems)

    def read_schema(self, snapshot_id: int | None, snapshot: Snapshot | None) -> TableSchema:
        """The schema a read uses: a time-travelled snapshot's own, else the latest."""
        return self.snapshot_schema(snapshot if snapshot_id is not None else None)

    @property
    def options(self) -> dict[str, str]:
        return self.schema().options

    @property
    def core_options(self) -> CoreOptions:
        """The latest schema's options as a typed record."""
        return self.schema().core_options

    @property
    def layout(self) -> PathLayout:
        """Folders of this table under the latest schema (partition, bucket, index paths)."""
        schema = self.schema()
        if self._layout is None or self._layout[0] is not schema:
            self._layout = (schema, schema.path_layout(self.data_root))
        return self._layout[1]

    # -- snapshots, tags, branches ---------------------------------------------------------
    def snapshot_ids(self) -> list[int]:
        ids = [numbered(n, SNAPSHOT_PREFIX) for n in self._list("snapshot")]
        return sorted(i for i in ids if i is not None)

    def _load_snapshot(self, sid: int) -> Snapshot | None:
        if sid not in self._snapshots:
            path = snapshot_path(self.path, sid)
            try:
                self._snapshots[sid] = parse_snapshot(self.storage.read_bytes(path), path)
            except IndexCoreError as exc:
                self._problem(path, "snapshot", exc.message)
                return None
        return self._snapshots[sid]

    def snapshots(self) -> list[Snapshot]:
        """Every readable snapshot, oldest first (expired ones are simply absent)."""
        return [s for s in (self._load_snapshot(i) for i in self.snapshot_ids()) if s is not None]

    def snapshot(self, snapshot_id: int | None = None) -> Snapshot | None:
        """The snapshot with ``snapshot_id``, or the latest; None when the table has none."""
        if snapshot_id is not None:
            tagged = None if int(snapshot_id) in self._snapshots else self._expired_tagged(int(snapshot_id))
            snap = tagged or self._load_snapshot(int(snapshot_id))
            if snap is None:
                raise StorageError(f"table {self.name} has no readable snapshot {snapshot_id}",
                                   file=posixpath.join(self.path, "snapshot"))
            return snap
        ids = self.snapshot_ids()
        if not ids:
            return None
        snap = self._load_snapshot(ids[-1])
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
                self._snapshots[sid] = snap
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

    def branch(self, name: str) -> Table:
        """The table as seen on branch ``name`` (own schemas and snapshots, shared data files)."""
        if name in ("main", None):
            return self
        path = branch_path(self.data_root, name)
        if not self.storage.exists(posixpath.join(path, "schema")):
            raise StorageError(f"table {self.name} has no branch {name!r}", file=path)
        return Table(self.storage, path, f"{self.name}$branch_{name}", branch=name,
                     data_root=self.data_root)

    # -- manifests -------------------------------------------------------------------------
    @property
    def manifest_format(self) -> str:
        return self.core_options.manifest_format

    def _manifest_path(self, name: str) -> str:
        path = posixpath.join(self.path, "manifest", name)
        if self.path != self.data_root and not self.storage.exists(path):
            path = posixpath.join(self.data_root, "manifest", name)
        return path

    def manifest_path(self, name: str) -> str:
        """Where a manifest, manifest list or index manifest named ``name`` lives (branch-aware)."""
        return self._manifest_path(name)

    def _partition_types(self) -> list:
        schema = self.schema()
        return [f.type for f in schema.partition_fields]

    def manifest_list(self, name: str) -> list[ManifestFileMeta]:
        """Rows of one manifest list (cached); raises IndexCoreError if unreadable."""
        if name not in self._manifest_lists:
            path = self._manifest_path(name)
            recs = read_records(self.storage.read_bytes(path), self.manifest_format, path)
            ptypes = self._partition_types()
            for i, r in enumerate(recs):
                check_record(r, MANIFEST_LIST, path, i)
            self._manifest_lists[name] = [manifest_file_meta(r, ptypes) for r in recs]
        return self._manifest_lists[name]

    def _key_types(self, schema_id: int) -> list:
        schema = self.schema_or_latest(schema_id)
        return [schema.field(k).type for k in schema.trimmed_primary_keys]

    def _value_types(self, schema_id: int, cols: tuple | None, write_cols: tuple | None) -> list:
        schema = self.schema_or_latest(schema_id)
        names = cols if cols is not None else write_cols
        if names is None:
            return [f.type for f in schema.fields]
        latest = self.schema()
        out = []
        for n in names:
            for candidate in (schema, latest):
                try:
                    out.append(candidate.field(n).type)
                    break
                except KeyError:
                    continue
            else:  # system fields (_ROW_ID, _SEQUENCE_NUMBER) are BIGINT; others undecoded
                out.append(DataType("BIGINT") if n in SYSTEM_BIGINT_FIELDS else DataType("UNKNOWN"))
        return out

    def manifest_entries(self, name: str) -> list[tuple]:
        """Entries of one manifest as (kind, merge key, partition bytes, bucket, total, file)."""
        cached = self._manifests.get(name)
        if cached is not None:
            return cached
        path = self._manifest_path(name)
        types = self._stats_types
        to_meta = data_file_meta
        out = []
        append = out.append
        with _gc_paused():
            for i, r in enumerate(read_records(self.storage.read_bytes(path), self.manifest_format, path)):
                if not entry_ok(r):
                    check_record(r, MANIFEST_ENTRY, path, i)
                part = r["_PARTITION"]
                bucket = r["_BUCKET"]
                meta = to_meta(r["_FILE"], types)
                d = meta.__dict__
                append((r["_KIND"], (part, bucket, d["level"], d["file_name"], d["external_path"]),
                        part, bucket, r["_TOTAL_BUCKETS"], meta))
        self._manifests.put(name, out, max(len(out), 1))
        return out

    # -- paths -----------------------------------------------------------------------------
    def partition(self, raw: bytes) -> tuple:
        """(values, spec, relative dir) of a partition BinaryRow, cached by its bytes."""
        hit = self._partitions.get(raw)
        if hit is None:
            layout = self.layout
            fields = layout.partition_fields
            values = decode_binary_row(raw, [f.type for f in fields], "partition") if fields else ()
            spec = {f.name: v for f, v in zip(fields, values, strict=True)}
            hit = (values, spec, layout.partition_dir(values))
            self._partitions[raw] = hit
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
            if root not in self._external_roots:
                self._external_roots[root] = self._relocate_root(root, rel)
            new_root = self._external_roots[root]
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

    def derived(self, key: Hashable, build: Callable[[], object],
                weight: Callable[[object], int] | None = None) -> object:
        """``build()``, kept under ``key`` (which names the snapshot it comes from): a snapshot
        never changes, so a view of it built once serves every page, session and health check
        after it. Bounded by ``weight`` (rows) in all, least recently used out."""
        hit = self._derived.get(key, _ABSENT)
        if hit is not _ABSENT:
            return hit
        value = build()
        self._derived.put(key, value, max(int(weight(value)) if weight else 1, 1))
        return value

    # -- planning --------------------------------------------------------------------------
    def plan(self, snapshot_id: int | None = None) -> Plan:
        """Live files of a snapshot (latest by default), cached per snapshot id."""
        snap = self.snapshot(snapshot_id)
        if snap is None:
            return Plan(None)
        cached = self._plans.get(snap.id)
        if cached is not None:
            return cached
        plan = Plan(snap)
        self._check_options(plan)
        with _gc_paused():
            self._plan_files(plan, snap)
        self._plans.put(snap.id, plan)
        return plan

    def _plan_files(self, plan: Plan, snap: Snapshot) -> None:
        """Merge ADD/DELETE entries of every manifest into ``plan.files`` (with index and DV)."""
        live = self.live_entries(snap, plan.problems, plan.manifests)
        self._index_manifest(plan, snap)
        dvs = {}
        bitmap64 = self.core_options.deletion_vectors_bitmap64
        for ie in plan.index_entries:
            meta = ie.index_file
            if meta.index_type == DELETION_VECTORS and meta.dv_ranges:
                path = self.index_file_path(ie, self.partition_dir(ie.partition), plan.problems)
                self.storage.note_size(path, meta.file_size)
                for r in meta.dv_ranges:
                    dvs[(ie.partition, ie.bucket, r.data_file)] = (r, path)
        dirs: dict[tuple, tuple] = {}  # (partition bytes, bucket) -> (values, spec, bucket dir + "/")
        files = plan.files
        append = files.append
        for _kind, _key, part, bucket, total, meta in live.values():
            where = dirs.get((part, bucket))
            if where is None:
                values, spec, pdir = self.partition(part)
                where = dirs[(part, bucket)] = (values, spec, self.bucket_dir(pdir, bucket) + "/")
            values, spec, folder = where
            d = meta.__dict__
            name = d["file_name"]
            external = d["external_path"]
            if external:
                path = self.resolve_external(external, plan.problems)
                folder = posixpath.dirname(path) + "/"
            else:
                path = folder + name
            index_name = meta.index_file_name if d["extra_files"] else None
            dv = dvs.get((values, bucket, name)) if dvs else None
            live_file = _new(LiveFile)  # frozen: set its __dict__ directly (10,000s per plan)
            _setattr(live_file, "__dict__", {
                "partition": values, "partition_spec": spec, "bucket": bucket, "file": meta,
                "path": path, "index_path": folder + index_name if index_name else None,
                "deletion_vector": dv[0] if dv else None, "dv_file_path": dv[1] if dv else None,
                "bitmap64": bitmap64, "total_buckets": total})
            append(live_file)

    def _read_lists(self, names: Iterable[str | None], problems: list, into: list[ManifestFileMeta],
                    also: str | None = None) -> None:
        """The rows of manifest lists ``names`` into ``into`` (object stores: the lists and ``also``,
        an index manifest, fetched in one round of parallel requests)."""
        names = [n for n in names if n]
        self.storage.prefetch([Fetch(self._manifest_path(n)) for n in [*names, also]
                               if n and n not in self._manifest_lists])
        for list_name in names:
            try:
                into.extend(self.manifest_list(list_name))
            except IndexCoreError as exc:
                self._problem(self._manifest_path(list_name), "manifest list", exc.message, problems)

    def merge_entries(self, live: dict[tuple, tuple], manifests: Iterable[ManifestFileMeta],
                      problems: list) -> bool:
        """Apply the ADD/DELETE entries of ``manifests`` to ``live`` (merge key -> entry), in order,
        as Paimon's ``FileStoreScan`` merges them; False when a manifest could not be read."""
        manifests = list(manifests)
        self.storage.prefetch([Fetch(self._manifest_path(mf.file_name)) for mf in manifests
                               if mf.file_name not in self._manifests])
        whole = True
        for mf in manifests:
            try:
                entries = self.manifest_entries(mf.file_name)
            except IndexCoreError as exc:
                self._problem(self._manifest_path(mf.file_name), "manifest", exc.message, problems)
                whole = False
                continue
            for e in entries:
                if e[0] == 0:
                    live[e[1]] = e
                else:
                    live.pop(e[1], None)
        return whole

    def live_entries(self, snap: Snapshot, problems: list,
                     manifests: list[ManifestFileMeta] | None = None) -> dict[tuple, tuple]:
        """The live data-file entries of ``snap`` (base and delta manifest lists merged)."""
        manifests = [] if manifests is None else manifests
        self._read_lists((snap.base_manifest_list, snap.delta_manifest_list), problems, manifests,
                         snap.index_manifest)
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
            self._problem(self._manifest_path(snap.delta_manifest_list), "manifest list", exc.message, problems)
            return None

    def partition_dir(self, values: tuple) -> str:
        """The relative directory (``k=v/k2=v2``) of a partition given its internal values."""
        for hit in self._partitions.values():
            if hit[0] == values:
                return hit[2]
        return self.layout.partition_dir(values)

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
        path = self._manifest_path(snap.index_manifest)
        try:
            recs = read_records(self.storage.read_bytes(path), self.manifest_format, path)
        except IndexCoreError as exc:
            self._problem(path, "index manifest", exc.message, problems)
            return []
        ptypes = self._partition_types()
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

    # -- opening index parts ---------------------------------------------------------------
    def prefetch(self, files: Iterable[LiveFile], index: bool = True, dv: bool = True,
                 data: bool = False) -> int:
        """Fetch the ``.index`` files, deletion-vector ranges (and data files) of ``files`` concurrently.

        On an object store this turns a walk over many files into rounds of parallel requests
        (one per ``.index`` head, one per DV file spanning its needed ranges, one per data
        file); the walk then reads from the storage cache. Nothing happens on local storage.
        """
        storage = self.storage
        if storage.cache is None:
            return 0
        fetches = []
        spans: dict[str, list[int]] = {}
        for lf in files:
            if index and lf.index_path and lf.file.embedded_index is None:
                fetches.append(Fetch(lf.index_path, 0, max(storage.readahead, 1) * 4))
            if data:
                fetches.append(Fetch(lf.path))
            r = lf.deletion_vector
            if dv and r is not None and lf.dv_file_path:
                lo_hi = spans.setdefault(lf.dv_file_path, [r.offset, r.offset + r.length + 8])
                lo_hi[0] = min(lo_hi[0], r.offset)
                lo_hi[1] = max(lo_hi[1], r.offset + r.length + 8)
        fetches += [Fetch(path, lo, hi) for path, (lo, hi) in spans.items()]
        return storage.prefetch(fetches)

    def iter_prefetched(self, files: Iterable[LiveFile], index: bool = True, dv: bool = True,
                        data: bool = False) -> Iterator[LiveFile]:
        """``files`` in order, each batch :meth:`prefetch`-ed before it is yielded (bounded memory)."""
        files = list(files)
        step = max(self.storage.concurrency * (1 if data else 8), 1)
        for i in range(0, len(files), step):
            batch = files[i:i + step]
            self.prefetch(batch, index=index, dv=dv, data=data)
            yield from batch

    def iter_index_heads(self, files: Iterable[LiveFile]) -> Iterator[tuple[LiveFile, object, str | None]]:
        """(file, container head, error) for each file with a file index, reading heads only.

        What work over a few files' indexes needs (their entries, without a reader per blob);
        ``head`` is None when ``error`` says why it is unreadable. Parsed heads are kept per file
        (bounded), over the kept head bytes of :meth:`iter_head_bytes`.
        """
        files = [lf for lf in files if lf.has_file_index]
        heads = self._heads
        hits = [heads.get(_head_key(lf)) for lf in files]
        fresh = self._parsed(self.iter_head_bytes([lf for lf, hit in zip(files, hits, strict=True) if hit is None]))
        for lf, hit in zip(files, hits, strict=True):
            yield (lf, *hit) if hit is not None else next(fresh)

    def _parsed(self, raw: Iterable[tuple]) -> Iterator[tuple[LiveFile, object, str | None]]:
        """:meth:`iter_head_bytes` rows parsed into heads, each kept."""
        for lf, head, size, name, error in raw:
            if error is None:
                try:
                    hit = (parse_head(head, size, name), None)
                except IndexCoreError as exc:
                    hit = (None, str(exc))
            else:
                hit = (None, error)
            self._heads.put(_head_key(lf), hit)
            yield lf, *hit

    def iter_head_bytes(self, files: Iterable[LiveFile]) -> Iterator[tuple[LiveFile, bytes | None, int, str,
                                                                          str | None]]:
        """(file, head bytes, container size, container name, error) for each file with a file index:
        each head checked (magic, version, length) but not parsed, for a census that reads 50,000
        of them column-wise (:func:`~indexcore.formats.container.head_spans`) without an object
        per entry. Kept per file (bounded by bytes), so the views and pages that walk the same
        snapshot read each container head once; uncached ``.index`` heads are read a batch at a
        time (:meth:`Storage.read_prefixes`, prefetched concurrently on object stores).
        """
        files = [lf for lf in files if lf.has_file_index]
        kept = self._head_bytes
        step = max(self.storage.concurrency * 8, 256)
        for i in range(0, len(files), step):
            batch = files[i:i + step]
            keys = [_head_key(lf) for lf in batch]
            hits = [kept.get(key) for key in keys]
            prefixes: dict[int, tuple | IndexCoreError] = {}
            on_disk = [lf for lf, hit in zip(batch, hits, strict=True)
                       if hit is None and lf.file.embedded_index is None]
            if on_disk:
                self.prefetch(on_disk, dv=False)
                prefixes = dict(zip((id(lf) for lf in on_disk),
                                    self.storage.read_prefixes([lf.index_path for lf in on_disk],
                                                               HEAD_PREFETCH_BYTES), strict=True))
            for lf, key, hit in zip(batch, keys, hits, strict=True):
                if hit is None:
                    try:
                        head, size, name = self._container_head_bytes(lf, prefixes.get(id(lf)))
                        hit = (head, size, name, None)
                        weight = len(head) + 200
                    except IndexCoreError as exc:
                        hit = (None, 0, lf.index_path or lf.path, str(exc))
                        weight = 200
                    kept.put(key, hit, weight)
                yield lf, *hit

    def _container_head_bytes(self, lf: LiveFile, prefix: tuple | IndexCoreError | None = None
                              ) -> tuple[bytes, int, str]:
        """A file's container head bytes, its container's size and name: from the manifest's bytes,
        or from the first bytes of its ``.index`` file (``prefix``: :meth:`Storage.read_prefixes`
        of it, read here when None); a head longer than that is read in full."""
        embedded = lf.file.embedded_index
        if embedded is not None:
            data, size, name = embedded, len(embedded), f"{lf.path} (embedded file index)"
        else:
            if prefix is None:
                prefix = self.storage.read_prefix(lf.index_path, HEAD_PREFETCH_BYTES)
            if isinstance(prefix, IndexCoreError):
                raise prefix
            data, size, name = prefix
        head = head_bytes(data, size, name)
        if head is None:  # longer than the prefix read
            source = self.file_index_source(lf, keep_descriptor=False)
            head = source.read(0, head_length(data, size, name), HEAD_STRUCTURE)
        return head, size, name

    def index_container(self, lf: LiveFile) -> KeptContainer:
        """A file's index container read through the table's caches: its head kept per file, each
        blob's reader kept within the reader budget (:meth:`index_reader`). For work that asks the
        same files many times (trying candidate predicates); a bytes count taken around it sees
        only what was not read before. An unreadable head raises :class:`CorruptFileError`."""
        for _lf, head, error in self.iter_index_heads([lf]):
            if head is None:
                raise CorruptFileError(error or "unreadable file index", file=lf.index_path or lf.path,
                                       structure="file index container")
            return KeptContainer(self, lf, head)
        raise IndexCoreError(f"{lf.path} has no file index")

    def index_reader(self, lf: LiveFile, entry: IndexEntry, dtype: DataType, options: dict | None):
        """The reader of one blob of a file's index container, kept while it fits the table's reader
        budget: the views and metrics of one page that walk the same files (summaries, values,
        lookups) then open and decode each blob once. A kept reader holds no file descriptor
        between reads. An error opening it is raised, not kept."""
        from indexcore.formats.container import FileIndexContainer

        key = (_head_key(lf), entry, dtype, tuple(sorted((options or {}).items())))
        reader = self._readers.get(key)
        if reader is None:
            source = self.file_index_source(lf, keep_descriptor=False)
            reader = FileIndexContainer(source, None).reader(entry, dtype, options)
            self._readers.put(key, reader, max(entry.length, 1))
        return reader

    def file_index_source(self, live_file: LiveFile, keep_descriptor: bool = True) -> ByteSource | None:
        """The file's file-index bytes: embedded in the manifest, or its ``.index`` file."""
        embedded = live_file.file.embedded_index
        if embedded is not None:
            return BytesSource(embedded, name=f"{live_file.path} (embedded file index)",
                               stats=self.storage.stats)
        if live_file.index_path:
            return self.storage.open(live_file.index_path, keep_descriptor=keep_descriptor)
        return None

    def deletion_vector(self, live_file: LiveFile):
        """The file's deletion vector (decoded), or None when it has none."""
        dv = live_file.deletion_vector
        if dv is None or live_file.dv_file_path is None:
            return None
        return self.read_dv_range(dv, live_file.dv_file_path, live_file.bitmap64)

    def read_dv_range(self, dv_range, path: str, bitmap64: bool | None = None):
        """The deletion vector an index manifest's DV range points at in the DV file ``path``."""
        from indexcore.formats.deletion_vector import read_deletion_vector

        return read_deletion_vector(self.storage.open(path), dv_range.offset, dv_range.length, bitmap64)

    def hash_index(self, entry: IndexManifestEntry):
        """The hashes of one HASH index file (Paimon's dynamic-bucket index)."""
        from indexcore.formats.hash_index import read_hash_index

        path = self.index_file_path(entry, self.partition_dir(entry.partition))
        return read_hash_index(self.storage.open(path))
