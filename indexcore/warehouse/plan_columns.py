"""The plan as Arrow columns: a snapshot's live files, one row each, with no Python object per file.

:meth:`TablePlanColumns.plan_columns` is :meth:`~indexcore.warehouse.table_planning.TablePlanning.plan`
on columns: each manifest decoded straight to columns (:mod:`.manifest_columns`, kept per manifest
in the table's bounded manifest cache), the ADD/DELETE entries of all manifests merged as Paimon's
``FileStoreScan`` merges them (the last entry of an identifier decides; a file keeps the place of
its first ADD after its last DELETE), then each live file's path, ``.index`` file and deletion
vector as columns. The result is immutable and kept in the table's plan cache, so every page and
session asking for the snapshot shares one copy. :meth:`PlanColumns.live_file` makes the
:class:`~indexcore.warehouse.model.LiveFile` of one row for a caller that needs one file.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from indexcore.cache import LRU, release_unused
from indexcore.errors import IndexCoreError
from indexcore.io import Fetch
from indexcore.paimon.index_types import DELETION_VECTORS, HASH
from indexcore.warehouse.avro_columns import all_distinct
from indexcore.warehouse.manifest import MANIFEST_ENTRY, data_file_meta
from indexcore.warehouse.manifest_columns import check_table, read_manifest_groups, read_manifest_table
from indexcore.warehouse.model import DeletionVectorRange, IndexManifestEntry, LiveFile, Problem, Snapshot
from indexcore.warehouse.table_manifests import gc_paused
from indexcore.warehouse.table_planning import Plan

_STATS = pa.struct([("_MIN_VALUES", pa.binary()), ("_MAX_VALUES", pa.binary()),
                    ("_NULL_COUNTS", pa.list_(pa.int64()))])
# one row per manifest entry: the entry's fields, then its _FILE record's, flattened
ENTRY = pa.schema([
    ("_KIND", pa.int32()), ("_PARTITION", pa.binary()), ("_BUCKET", pa.int32()), ("_TOTAL_BUCKETS", pa.int32()),
    ("_FILE_NAME", pa.string()), ("_FILE_SIZE", pa.int64()), ("_ROW_COUNT", pa.int64()),
    ("_MIN_KEY", pa.binary()), ("_MAX_KEY", pa.binary()), ("_KEY_STATS", _STATS), ("_VALUE_STATS", _STATS),
    ("_MIN_SEQUENCE_NUMBER", pa.int64()), ("_MAX_SEQUENCE_NUMBER", pa.int64()), ("_SCHEMA_ID", pa.int64()),
    ("_LEVEL", pa.int32()), ("_EXTRA_FILES", pa.list_(pa.string())), ("_CREATION_TIME", pa.timestamp("ms")),
    ("_DELETE_ROW_COUNT", pa.int64()), ("_EMBEDDED_FILE_INDEX", pa.binary()), ("_FILE_SOURCE", pa.int32()),
    ("_VALUE_STATS_COLS", pa.list_(pa.string())), ("_EXTERNAL_PATH", pa.string()), ("_FIRST_ROW_ID", pa.int64()),
    ("_WRITE_COLS", pa.list_(pa.string()))])
# what the plan adds per live file: where it is, its partition (index into PlanColumns.partitions),
# its ``.index`` file, and its deletion vector's range in its DV file
LIVE = pa.schema([*ENTRY, ("path", pa.string()), ("partition_id", pa.int32()), ("index_path", pa.string()),
                  ("dv_offset", pa.int64()), ("dv_length", pa.int64()), ("dv_cardinality", pa.int64()),
                  ("dv_file_path", pa.string())])
MERGE_KEY = ["_PARTITION", "_BUCKET", "_LEVEL", "_FILE_NAME", "_EXTERNAL_PATH"]
_ENTRY_TOP = frozenset(["_KIND", "_PARTITION", "_BUCKET", "_TOTAL_BUCKETS", "_FILE"])  # what ENTRY reads
BATCH_BYTES = 16 << 20  # stored manifest bytes decoded together (their inflated blocks are held at once)
_MANIFEST_KEY = "columns"  # the manifest cache's key of a manifest's columns: (_MANIFEST_KEY, name)
_LIVE_FILES_KEY = "live files by path"  # the derived cache's key of a snapshot's kept live files
# the plan's text columns whose Python strings its frames share (PlanColumns.text_objects): one array each
TEXT_COLUMNS = ("path", "_FILE_NAME", "index_path")
_TEXTS_KEPT = 2 * len(TEXT_COLUMNS)  # their strings, and as many arrays taken from them


def _conform(arr: pa.Array, target: pa.DataType) -> pa.Array:
    """``arr`` as ``target``: struct fields matched by name (a field the file lacks is null),
    narrower or wider integers and other timestamp units cast (ORC/Parquet manifests)."""
    if arr.type == target:
        return arr
    if pa.types.is_struct(target) and pa.types.is_struct(arr.type):
        names = [f.name for f in arr.type]
        children = [_conform(arr.field(names.index(f.name)), f.type) if f.name in names
                    else pa.nulls(len(arr), f.type) for f in target]
        return pa.StructArray.from_arrays(children, fields=list(target), mask=arr.is_null())
    return arr.cast(target, safe=not pa.types.is_timestamp(target))


def entry_columns(table: pa.Table) -> pa.Table:
    """A decoded manifest (:func:`read_manifest_table`) as rows of :data:`ENTRY`."""
    n = table.num_rows
    file = whole(table.column("_FILE")) if n else pa.array([], ENTRY_FILE)
    names = [f.name for f in file.type]
    columns = []
    for f in ENTRY:
        if f.name in table.column_names:
            arr = whole(table.column(f.name))
        elif f.name in names:
            arr = file.field(names.index(f.name))
        else:
            columns.append(pa.nulls(n, f.type))
            continue
        columns.append(_conform(arr, f.type))
    return pa.Table.from_arrays(columns, schema=ENTRY)


def text_key(values: pa.Array) -> tuple:
    """What names a text array's values: its buffers' addresses, offset and length (equal for the
    same array and its views, not for a copy). Valid while the array is alive (a freed buffer's
    address may be reused)."""
    return (*(None if b is None else b.address for b in values.buffers()[1:]), values.offset, len(values))


def take_rows(table: pa.Table, rows) -> pa.Table:
    """``table.take(rows)`` without joining its chunks: Arrow's take of a column of several chunks
    first concatenates them, a copy of the whole column per call (a plan's columns are a chunk per
    decoded batch: at 1,000,000 files, about 1.3 GB for a take of 4,096 rows). Taken from the
    table's batches (zero-copy slices of its chunks): a run of rows in one batch at a time, in the
    order asked (a plan's merge asks in about stored order), or sorted and put back in order when
    the rows jump between batches more often than :data:`TAKE_RUNS`."""
    rows = np.asarray(rows, np.int64)
    if not len(rows):
        return table.slice(0, 0)
    if rows[-1] - rows[0] + 1 == len(rows) and (len(rows) == 1 or bool((np.diff(rows) == 1).all())):
        return table.slice(int(rows[0]), len(rows))
    batches = table.to_batches()
    if all(c.num_chunks <= 1 for c in table.columns) or not batches:
        return table.take(pa.array(rows, pa.int64()))
    starts = np.cumsum([0] + [b.num_rows for b in batches])
    which = np.searchsorted(starts, rows, side="right") - 1
    cuts = np.flatnonzero(np.diff(which)) + 1
    if len(cuts) < TAKE_RUNS:  # few runs: each taken from its batch, in the order asked
        parts = [batches[int(which[lo])].take(pa.array(rows[lo:hi] - starts[which[lo]], pa.int64()))
                 for lo, hi in zip([0, *cuts.tolist()], [*cuts.tolist(), len(rows)], strict=True)]
        return pa.Table.from_batches(parts, schema=table.schema)
    order = np.argsort(rows, kind="stable")
    taken = take_rows(table, rows[order]).combine_chunks()  # sorted: a run per batch; the rows only
    back = np.empty(len(order), np.int64)
    back[order] = np.arange(len(order))
    return taken.take(pa.array(back))


TAKE_RUNS = 256  # runs of rows in one batch past which take_rows sorts the rows first


def whole(column: pa.ChunkedArray | pa.Array) -> pa.Array:
    """One array of a column (its only chunk as it is: combine_chunks would copy it; an array as it is)."""
    if not isinstance(column, pa.ChunkedArray):
        return column
    return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()


def full_entries(entries: pa.Table) -> pa.Table:
    """``entries`` as :data:`ENTRY` rows: the columns it has (in :data:`ENTRY`'s types), null for
    those it lacks (what a Spark task ships of a manifest: only the columns its work reads)."""
    if entries.schema == ENTRY:
        return entries
    n = entries.num_rows
    return pa.Table.from_arrays([_conform(whole(entries.column(f.name)), f.type)
                                 if f.name in entries.column_names else pa.nulls(n, f.type) for f in ENTRY],
                                schema=ENTRY)


ENTRY_FILE = pa.struct([f for f in ENTRY if f.name not in ("_KIND", "_PARTITION", "_BUCKET", "_TOTAL_BUCKETS")])


def merge_rows(entries: pa.Table) -> np.ndarray:
    """The rows of ``entries`` (manifests in order) live after merging, in plan order.

    As :meth:`TablePlanning.merge_entries`: per identifier (:data:`MERGE_KEY`) the last entry
    decides (an ADD is live, a DELETE removes); a live file sits where its first ADD after its
    last DELETE did."""
    n = entries.num_rows
    if n == 0:
        return np.zeros(0, np.int64)
    kinds = entries.column("_KIND").to_numpy()
    if not (kinds == 1).any() and _names_distinct(entries.column("_FILE_NAME")):
        return np.arange(n, dtype=np.int64)  # every file added once (its name alone is unique), none deleted
    keyed = entries.select(MERGE_KEY).append_column("_ORDER", pa.array(np.arange(n, dtype=np.int64)))
    lists = keyed.group_by(MERGE_KEY, use_threads=False).aggregate([("_ORDER", "list")]).column("_ORDER_list")
    lists = lists.combine_chunks()
    group = pc.list_parent_indices(lists).to_numpy()
    order = pc.list_flatten(lists).to_numpy()
    groups = len(lists)
    kind = kinds[order]
    last = np.full(groups, -1, np.int64)
    np.maximum.at(last, group, order)
    deleted = kind == 1
    last_delete = np.full(groups, -1, np.int64)
    np.maximum.at(last_delete, group[deleted], order[deleted])
    live = kinds[last] == 0
    adds = ~deleted & (order > last_delete[group])
    place = np.full(groups, n, np.int64)
    np.minimum.at(place, group[adds], order[adds])
    return last[live][np.argsort(place[live], kind="stable")]


def _names_distinct(names: pa.ChunkedArray) -> bool:
    """No two file names equal: the C extension's exact hash pass where built, else ``pc.unique``."""
    distinct = all_distinct(names)
    return len(pc.unique(names)) == len(names) if distinct is None else distinct


def distinct_texts(values: pa.Array) -> bool:
    """No text twice in ``values`` (no nulls): the C extension's exact hash pass where built (a
    table of pointers), else ``pc.count_distinct``, whose memo copies every text (at 1,000,000
    paths about 0.5 GB at once)."""
    distinct = all_distinct(values)
    return pc.count_distinct(values).as_py() == len(values) if distinct is None else distinct


@dataclass(frozen=True)
class PlanColumns:
    """The live files of one snapshot as columns (:data:`LIVE`), with the index manifest's
    entries and what could not be read; ``partitions[i]`` is the (values, spec, folder) of
    ``partition_id`` i."""

    snapshot: Snapshot | None
    files: pa.Table
    partitions: tuple[tuple, ...] = ()
    index_entries: tuple[IndexManifestEntry, ...] = ()
    problems: tuple[Problem, ...] = ()
    bitmap64: bool = False
    manifests: tuple = field(default=(), repr=False)
    # the Python strings of TEXT_COLUMNS, made when a frame first asks (text_objects), and the arrays
    # taken from them (note_taken), gone with the plan
    texts: LRU = field(default_factory=lambda: LRU(_TEXTS_KEPT), repr=False, compare=False)

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "texts"}  # its lock does not pickle

    def __setstate__(self, state: dict) -> None:
        for k, v in {**state, "texts": LRU(_TEXTS_KEPT)}.items():
            object.__setattr__(self, k, v)

    @property
    def num_files(self) -> int:
        return self.files.num_rows

    def text_objects(self, column: str) -> np.ndarray:
        """Column ``column`` of :data:`TEXT_COLUMNS` as Python strings (None for null), made once per
        plan and kept with it: the ``$files`` frame and the census frame take theirs from here (one
        string per path, name and ``.index`` path, not one per frame: about 0.45 KiB per live file
        at 1,000,000 files). Read-only: the frames take copies of the pointers, not of the texts."""
        def made() -> np.ndarray:
            objects = whole(self.files.column(column)).to_numpy(zero_copy_only=False)
            objects.flags.writeable = False
            return objects

        if column not in TEXT_COLUMNS:
            raise KeyError(f"{column!r} is not one of the plan's shared text columns {TEXT_COLUMNS}")
        return self.texts.get_or_build(column, made)

    def note_taken(self, column: str, rows: np.ndarray, taken: pa.Array) -> None:
        """Note that ``taken`` is column ``column`` of :data:`TEXT_COLUMNS` at plan rows ``rows`` (a
        census's dictionary of the ``.index`` paths it uses, when some files embed theirs): a frame
        of it takes its strings from :meth:`text_objects` (:meth:`objects_of`)."""
        self.texts.put(("taken", text_key(taken)), (column, np.asarray(rows, np.int64), taken))

    def objects_of(self, values: pa.Array) -> np.ndarray | None:
        """The plan's Python strings of a text array that is one of its :data:`TEXT_COLUMNS` (its
        buffers, not a copy) or an array :meth:`note_taken` noted; None for any other array."""
        key = text_key(values)
        for name in TEXT_COLUMNS:
            column = self.files.column(name)
            if column.num_chunks == 1 and text_key(column.chunk(0)) == key:
                return self.text_objects(name)
        noted = self.texts.get(("taken", key))
        if noted is None:
            return None
        column, rows, _taken = noted  # the taken array kept with its note: its buffers' addresses stay its
        return self.text_objects(column)[rows]

    @property
    def hash_indexes(self) -> dict[tuple, list[IndexManifestEntry]]:
        """The HASH index entries per (partition values, bucket), in index-manifest order, as
        :attr:`Plan.hash_indexes <indexcore.warehouse.table_planning.Plan.hash_indexes>`."""
        out: dict[tuple, list[IndexManifestEntry]] = {}
        for e in self.index_entries:
            if e.index_file.index_type == HASH:
                out.setdefault((e.partition, e.bucket), []).append(e)
        return out

    def partition_values(self) -> list[tuple]:
        """Each file's partition values (the distinct ones shared)."""
        values = [p[0] for p in self.partitions]
        return [values[i] for i in self.files.column("partition_id").to_numpy()]

    def live_file(self, table, row: int) -> LiveFile:
        """Row ``row`` as the :class:`LiveFile` :meth:`Table.plan` gives (built on request)."""
        return self._live_file(table, self.files.slice(row, 1).to_pylist()[0])

    def _live_file(self, table, rec: dict) -> LiveFile:
        meta = data_file_meta(rec, table._stats_types)
        values, spec, _folder = self.partitions[rec["partition_id"]]
        dv = None
        if rec["dv_offset"] is not None:
            dv = DeletionVectorRange(rec["_FILE_NAME"], rec["dv_offset"], rec["dv_length"], rec["dv_cardinality"])
        return LiveFile(values, spec, rec["_BUCKET"], meta, rec["path"], rec["index_path"], dv,
                        rec["dv_file_path"] if dv else None, self.bitmap64, rec["_TOTAL_BUCKETS"])

    def by_path(self, table) -> Mapping[str, LiveFile]:
        """Data file path -> its :class:`LiveFile`, each made when first asked for."""
        return LiveFilesByPath(self, table)

    def live_files(self, table, rows=None) -> list[LiveFile]:
        """:meth:`live_file` of ``rows`` (every row by default), their columns read into Python in
        one pass (a row at a time costs about 0.1 ms each; in one pass about 10 us at 50,000 files,
        half the object plan's cost per file)."""
        chosen = self.files if rows is None else take_rows(self.files, rows)
        names = chosen.column_names  # read a column at a time: half the time of Table.to_pylist's rows
        values = [chosen.column(n).to_pylist() for n in names]
        with gc_paused():  # long-lived acyclic objects, as planning makes: half the time without GC passes
            return [self._live_file(table, dict(zip(names, rec, strict=True))) for rec in zip(*values, strict=True)]


class LiveFilesByPath(Mapping):
    """The live files of a :class:`PlanColumns` by path, each made on first use (a caller that
    looks up a few files of a million does not build the others)."""

    def __init__(self, plan: PlanColumns, table):
        self._plan, self._table = plan, table
        self._rows: dict[str, int] | None = None
        self._made: dict[str, LiveFile] = {}

    def _index(self) -> dict[str, int]:
        if self._rows is None:
            self._rows = {p: i for i, p in enumerate(self._plan.files.column("path").to_pylist())}
        return self._rows

    def __getitem__(self, path: str) -> LiveFile:
        lf = self._made.get(path)
        if lf is None:
            lf = self._made[path] = self._plan.live_file(self._table, self._index()[path])
        return lf

    def many(self, paths: Sequence[str]) -> list[LiveFile | None]:
        """The live file of each of ``paths`` (None where the plan has none), those not made yet made
        in one pass over the columns (a census's thousands of files: not a row at a time)."""
        index = self._index()
        need = sorted({index[p] for p in paths if p in index and p not in self._made})
        every = len(need) == self._plan.num_files  # no take of every column's values: the plan's own
        for lf in self._plan.live_files(self._table, None if every else need):
            self._made[lf.path] = lf
        return [self._made.get(p) for p in paths]

    def at_rows(self, rows: np.ndarray) -> list[LiveFile]:
        """The live files of plan rows ``rows``, those made already taken, the others made in one
        pass and not kept (a caller going through many files a slice at a time holds a slice),
        without the map of every path :meth:`many` needs (at 1,000,000 files, 0.3 GB of strings)."""
        if not len(rows):
            return []
        paths = self._plan.files.column("path").take(pa.array(rows, pa.int64())).to_pylist()
        need = [int(r) for r, p in zip(rows, paths, strict=True) if p not in self._made]
        made = {lf.path: lf for lf in self._plan.live_files(self._table, need)} if need else {}
        return [self._made.get(p) or made[p] for p in paths]

    def __contains__(self, path: object) -> bool:
        return path in self._index()

    def paths(self) -> pa.Array:
        """The plan's paths as its Arrow column (no Python text per file)."""
        paths = self._plan.files.column("path")
        return paths.chunk(0) if paths.num_chunks == 1 else paths.combine_chunks()

    def __iter__(self):
        return iter(self._index())

    def __len__(self) -> int:
        return self._plan.num_files


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
