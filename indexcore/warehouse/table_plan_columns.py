"""Columnar planning on the table (:class:`TablePlanColumns`, a mixin of
:class:`~indexcore.warehouse.table.Table`): a snapshot's manifests decoded to columns and merged
into its :class:`~indexcore.warehouse.plan_columns.PlanColumns` (paths, partitions, ``.index``
files, DV ranges located per live file), kept in the table's plan cache. The plan's columns and
what reads them live in :mod:`indexcore.warehouse.plan_columns`."""

from __future__ import annotations

import posixpath
from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from indexcore.cache import release_unused
from indexcore.errors import IndexCoreError
from indexcore.io import Fetch
from indexcore.paimon.index_types import DELETION_VECTORS
from indexcore.warehouse.manifest import MANIFEST_ENTRY
from indexcore.warehouse.manifest_columns import check_table, read_manifest_groups, read_manifest_table
from indexcore.warehouse.model import IndexManifestEntry, LiveFile, Problem, Snapshot
from indexcore.warehouse.plan_columns import (
    _MANIFEST_KEY,
    ENTRY,
    LIVE,
    LiveFilesByPath,
    PlanColumns,
    entry_columns,
    full_entries,
    merge_rows,
    take_rows,
    whole,
)
from indexcore.warehouse.table_planning import Plan

_ENTRY_TOP = frozenset(["_KIND", "_PARTITION", "_BUCKET", "_TOTAL_BUCKETS", "_FILE"])  # what ENTRY reads
BATCH_BYTES = 16 << 20  # stored manifest bytes decoded together (their inflated blocks are held at once)
_LIVE_FILES_KEY = "live files by path"  # the derived cache's key of a snapshot's kept live files


class TablePlanColumns:
    """Columnar planning of :class:`~indexcore.warehouse.table.Table`."""

    def plan_columns(self, snapshot_id: int | None = None) -> PlanColumns:
        """The live files of a snapshot (latest by default) as columns, kept per snapshot id (built
        once when sessions ask at the same time)."""
        snap = self.snapshot(snapshot_id)
        if snap is None:
            return PlanColumns(None, LIVE.empty_table())
        return self.caches.plans.get_or_build((_MANIFEST_KEY, snap.id), lambda: self._build_plan_columns(snap))

    def _build_plan_columns(self, snap: Snapshot) -> PlanColumns:
        plan = self._plan_columns(snap)
        release_unused()  # the decode's inflated blocks and the merge's scratch columns: not kept
        return plan

    def kept_plan_columns(self, snapshot_id: int | None = None) -> PlanColumns | None:
        """The snapshot's columnar plan when the table keeps it already, else None (nothing planned)."""
        snap = self.snapshot(snapshot_id)
        return None if snap is None else self.caches.plans.peek((_MANIFEST_KEY, snap.id))

    def live_files_by_path(self, snapshot_id: int | None = None) -> LiveFilesByPath:
        """:meth:`PlanColumns.by_path` of the snapshot's columnar plan, kept per snapshot id: the
        live files one view makes (a decode sample's 2,000) serve the next view of the same
        files, not made again per view. Weighed by the plan's files (the most it can hold)."""
        plan = self.plan_columns(snapshot_id)
        if plan.snapshot is None:
            return plan.by_path(self)
        return self.derived((_LIVE_FILES_KEY, plan.snapshot.id), lambda: plan.by_path(self),
                            weight=lambda by_path: len(by_path))

    def plan_columns_alone(self, snapshot_id: int | None = None) -> PlanColumns | None:
        """:meth:`kept_plan_columns` when the table keeps no object plan of the snapshot (what
        :meth:`planned_objects` makes its files from), else None."""
        snap = self.snapshot(snapshot_id)
        return None if snap is None or snap.id in self.caches.plans else self.kept_plan_columns(snap.id)

    def planned_objects(self, snapshot_id: int | None = None) -> tuple[list[LiveFile], Snapshot | None,
                                                                        tuple[Problem, ...]]:
        """The snapshot's live files as objects (in plan order), its snapshot and its plan's
        problems, from the plan the table keeps: made from the columnar plan's columns when the
        table keeps that one and not the object plan (a page's census planned it: about half the
        object plan's cost, and one plan, not two), else the object plan (:meth:`plan`)."""
        columns = self.plan_columns_alone(snapshot_id)
        if columns is not None:
            files = self.live_files_by_path(columns.snapshot.id).many(columns.files.column("path").to_pylist())
            return files, columns.snapshot, columns.problems
        plan = self.plan(snapshot_id)
        return list(plan.files), plan.snapshot, tuple(plan.problems)

    def manifest_columns(self, name: str) -> pa.Table:
        """One manifest's entries as :data:`ENTRY` rows (kept, weighed by entries); raises
        IndexCoreError when it cannot be read."""
        key = (_MANIFEST_KEY, name)
        cached = self.caches.manifests.get(key)
        if cached is None:
            path = self.manifest_path(name)
            table = read_manifest_table(self.storage.read_bytes(path), self.manifest_format, path,
                                        fields=_ENTRY_TOP, programs=self.caches.manifests)
            check_table(table, MANIFEST_ENTRY, path)
            cached = entry_columns(table)
            self.caches.manifests.put(key, cached, max(cached.num_rows, 1))
        return cached

    def _decode_together(self, names: list[str]) -> list[pa.Table] | None:
        """Manifests not kept yet decoded in one pass per writer schema and kept as
        :meth:`manifest_columns` keeps them (slices of one table); a batch holds up to
        :data:`BATCH_BYTES` of stored manifests, so memory stays bounded. One that cannot be read
        or decoded is left for :meth:`manifest_columns`, which reports it.

        Returns each batch's entries when every batch decoded whole, in ``names``' order (one
        schema, no file left out), else None: the manifests' entries as whole columns, which a
        plan takes without joining (and copying) a slice per manifest."""
        files: list[tuple[bytes, str]] = []
        stored = 0
        whole: list[pa.Table] | None = []
        for at, name in enumerate(names):
            path = self.manifest_path(name)
            try:
                data = self.storage.read_bytes(path)
            except IndexCoreError:
                data = b""
            files.append((data, path))
            stored += len(data)
            if stored >= BATCH_BYTES or at == len(names) - 1:
                batch = names[at + 1 - len(files):at + 1]
                groups = read_manifest_groups(files, MANIFEST_ENTRY, _ENTRY_TOP, self.caches.manifests)
                for table, spans in groups:
                    entries = entry_columns(table)
                    for i, start, rows in spans:
                        self.caches.manifests.put((_MANIFEST_KEY, batch[i]), entries.slice(start, rows), max(rows, 1))
                    if whole is not None and len(groups) == 1 and [i for i, _, _ in spans] == list(range(len(batch))):
                        whole.append(entries)
                    else:
                        whole = None
                if not groups:
                    whole = None
                files, stored = [], 0
        return whole

    def _plan_columns(self, snap: Snapshot) -> PlanColumns:
        problems: list[Problem] = []
        for key, reason in self.core_options.problems:
            self._problem(self.path, f"option {key}", reason, problems)
        manifests: list = []
        self._read_lists((snap.base_manifest_list, snap.delta_manifest_list), problems, manifests,
                         snap.index_manifest)
        missing = list(dict.fromkeys(mf.file_name for mf in manifests
                                     if (_MANIFEST_KEY, mf.file_name) not in self.caches.manifests))
        self.storage.prefetch([Fetch(self.manifest_path(name)) for name in missing])
        whole = self._decode_together(missing) if self.manifest_format == "avro" and missing else None
        if whole and len(missing) == len(manifests):  # every manifest decoded now, once each, in order
            entries = pa.concat_tables(whole)  # a chunk per batch (usually one), not one per manifest
        else:
            parts = []
            for mf in manifests:
                try:
                    parts.append(self.manifest_columns(mf.file_name))
                except IndexCoreError as exc:
                    self._problem(self.manifest_path(mf.file_name), "manifest", exc.message, problems)
            entries = pa.concat_tables(parts) if parts else ENTRY.empty_table()
        index = Plan(snap)
        index.problems = problems
        self._index_manifest(index, snap)
        plan, _rows = self.plan_of_entries(snap, entries, index.index_entries, problems)
        return PlanColumns(snap, plan.files, plan.partitions, plan.index_entries, plan.problems, plan.bitmap64,
                           tuple(manifests))

    def plan_of_entries(self, snap: Snapshot | None, entries: pa.Table, index_entries: Sequence[IndexManifestEntry],
                        problems: list[Problem]) -> tuple[PlanColumns, np.ndarray]:
        """The :class:`PlanColumns` of some manifest entries (:data:`ENTRY` rows, or a subset of its
        columns whose missing ones are null; manifests in order), merged as :meth:`plan_columns`
        merges a snapshot's, and the rows of ``entries`` it keeps, in plan order. What a Spark task
        plans from its share of a snapshot's entries (every entry of a (partition, bucket))."""
        entries = full_entries(entries)
        rows = merge_rows(entries)
        if len(rows) != entries.num_rows or not np.array_equal(rows, np.arange(len(rows))):
            live = take_rows(entries, rows)
        else:  # every entry live, in order: the kept manifests' own buffers, not a copy
            live = entries
        files, partitions = self._locate(live, index_entries, problems)
        return PlanColumns(snap, files, partitions, tuple(index_entries), tuple(problems),
                           self.core_options.deletion_vectors_bitmap64), rows

    def _locate(self, live: pa.Table, index_entries, problems: list) -> tuple[pa.Table, tuple]:
        """:data:`LIVE` rows of the live entries: paths, partitions, ``.index`` files, DV ranges."""
        n = live.num_rows
        raw = whole(live.column("_PARTITION"))
        encoded = raw.dictionary_encode()  # distinct partitions in first-seen order, one hash pass
        partitions = tuple(self.partition(p) for p in encoded.dictionary.to_pylist())
        pid = encoded.indices.to_numpy().astype(np.int32)
        bucket = live.column("_BUCKET").to_numpy()
        # one folder per (partition, bucket)
        pairs = pa.array((pid.astype(np.int64) << 32) | (bucket.astype(np.int64) & 0xFFFFFFFF)).dictionary_encode()
        folders = pa.array([self.bucket_dir(partitions[k >> 32][2], _signed32(k & 0xFFFFFFFF)) + "/"
                            for k in pairs.dictionary.to_pylist()], pa.string())
        # one folder (an unpartitioned table's bucket): joined as a scalar, not taken per file
        folder = folders[0] if len(folders) == 1 else folders.take(pairs.indices)
        names = whole(live.column("_FILE_NAME"))
        external = whole(live.column("_EXTERNAL_PATH"))
        if external.null_count < n:
            folder_list = folders.take(pairs.indices).to_pylist()
            path_list = pc.binary_join_element_wise(folder, names, "").to_pylist()
            for i, ext in enumerate(external.to_pylist()):
                if ext:
                    path_list[i] = self.resolve_external(ext, problems)
                    folder_list[i] = posixpath.dirname(path_list[i]) + "/"
            folder, path = pa.array(folder_list, pa.string()), pa.array(path_list, pa.string())
        else:
            path = pc.binary_join_element_wise(folder, names, "")
        index_names = _index_names(live.column("_EXTRA_FILES"))
        index_path = (pa.nulls(n, pa.string()) if index_names.null_count == n  # no file has an index file
                      else pc.binary_join_element_wise(folder, index_names, ""))
        dv = self._dv_columns(pid, bucket, names, partitions, index_entries, problems)
        columns = list(live.columns)
        # the names as one array (the census and $files take it as theirs, not a joined copy each)
        columns[ENTRY.get_field_index("_FILE_NAME")] = names
        columns += [path, pa.array(pid, pa.int32()), index_path, *dv]
        return pa.Table.from_arrays(columns, schema=LIVE), partitions

    def _dv_columns(self, pid: np.ndarray, bucket: np.ndarray, names: pa.Array, partitions: tuple,
                    index_entries, problems: list) -> list[pa.Array]:
        """Each file's DV range (offset, length, cardinality) and DV file, from the index manifest."""
        n = len(pid)
        of_values = {p[0]: i for i, p in enumerate(partitions)}
        rows = {"pid": [], "bucket": [], "name": [], "offset": [], "length": [], "cardinality": [], "file": []}
        for ie in index_entries:
            meta = ie.index_file
            if meta.index_type != DELETION_VECTORS or not meta.dv_ranges:
                continue
            path = self.index_file_path(ie, self.partition_dir(ie.partition), problems)
            self.storage.note_size(path, meta.file_size)
            p = of_values.get(ie.partition)
            if p is None:
                continue
            for r in meta.dv_ranges:
                for key, value in zip(rows, (p, ie.bucket, r.data_file, r.offset, r.length, r.cardinality, path),
                                      strict=True):
                    rows[key].append(value)
        empty = [pa.nulls(n, pa.int64())] * 3 + [pa.nulls(n, pa.string())]
        if not rows["pid"] or not n:
            return empty
        ranges = pa.table({"pid": pa.array(rows["pid"], pa.int32()), "bucket": pa.array(rows["bucket"], pa.int32()),
                           "name": pa.array(rows["name"], pa.string()), "at": pa.array(range(len(rows["pid"])),
                                                                                      pa.int64())})
        # a later range of the same file replaces an earlier one, as the dict of the object plan
        ranges = ranges.group_by(["pid", "bucket", "name"], use_threads=False).aggregate([("at", "max")])
        files = pa.table({"pid": pa.array(pid, pa.int32()), "bucket": pa.array(bucket, pa.int32()), "name": names,
                          "row": pa.array(np.arange(n, dtype=np.int64))})
        hit = files.join(ranges, ["pid", "bucket", "name"], join_type="inner", use_threads=False)
        row, at = hit.column("row").to_numpy(), hit.column("at_max").to_numpy()
        out = []
        for key, kind in (("offset", pa.int64()), ("length", pa.int64()), ("cardinality", pa.int64()),
                          ("file", pa.string())):
            values = np.full(n, None, object)
            values[row] = np.asarray(rows[key], object)[at]
            out.append(pa.array(values, kind))
        return out


def _signed32(u: int) -> int:
    """A bucket number back from the low 32 bits of a (partition, bucket) key (buckets may be -1, -2)."""
    return u - (1 << 32) if u >= 1 << 31 else u


def _index_names(extra: pa.ChunkedArray) -> pa.Array:
    """Each file's ``.index`` file among its extra files (the first; null when none)."""
    extra = whole(extra)
    n = len(extra)
    flat = pc.list_flatten(extra)
    if len(flat) == 0:
        return pa.nulls(n, pa.string())
    parent = pc.list_parent_indices(extra).to_numpy()
    hit = pc.fill_null(pc.ends_with(flat, ".index"), False).to_numpy(zero_copy_only=False)
    owners, first = np.unique(parent[hit], return_index=True)
    at = np.full(n, -1, np.int64)
    at[owners] = np.flatnonzero(hit)[first]
    # taken in Arrow (a null index: no .index file): no Python string per file, no object array
    return flat.take(pa.array(at, pa.int64(), mask=at < 0))
