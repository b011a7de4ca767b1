"""The plan as Arrow columns: a snapshot's live files, one row each, with no Python object per file.

:meth:`TablePlanColumns.plan_columns <indexcore.warehouse.table_plan_columns.TablePlanColumns.plan_columns>` is :meth:`~indexcore.warehouse.table_planning.TablePlanning.plan`
on columns: each manifest decoded straight to columns (:mod:`.manifest_columns`, kept per manifest
in the table's bounded manifest cache), the ADD/DELETE entries of all manifests merged as Paimon's
``FileStoreScan`` merges them (the last entry of an identifier decides; a file keeps the place of
its first ADD after its last DELETE), then each live file's path, ``.index`` file and deletion
vector as columns. The result is immutable and kept in the table's plan cache, so every page and
session asking for the snapshot shares one copy. :meth:`PlanColumns.live_file` makes the
:class:`~indexcore.warehouse.model.LiveFile` of one row for a caller that needs one file.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from indexcore.cache import LRU
from indexcore.paimon.index_types import HASH
from indexcore.warehouse.avro_columns import all_distinct
from indexcore.warehouse.manifest import data_file_meta
from indexcore.warehouse.model import DeletionVectorRange, IndexManifestEntry, LiveFile, Problem, Snapshot
from indexcore.warehouse.table_manifests import gc_paused

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
_MANIFEST_KEY = "columns"  # the manifest cache's key of a manifest's columns: (_MANIFEST_KEY, name)
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


_HASHED = 1 << 16  # paths made into Python texts at once while their hashes are taken


class PathRows(Mapping):
    """Each text of a column of distinct texts (a plan's paths) -> its row: their hashes sorted with
    their rows (16 bytes a file), not a dict of every path (about 250 bytes a file: 0.24 GB at
    1,000,000 files). A hash found is checked against the column's text at that row."""

    def __init__(self, texts: pa.Array | pa.ChunkedArray):
        self._texts = whole(texts)
        self._hash()

    def __getstate__(self) -> dict:  # Python's text hashes are this process's own: made again where loaded
        return {"_texts": self._texts}

    def __setstate__(self, state: dict) -> None:
        self._texts = state["_texts"]
        self._hash()

    def _hash(self) -> None:
        n = len(self._texts)
        hashes = np.empty(n, np.int64)
        for lo in range(0, n, _HASHED):  # a slice's texts at a time, gone once hashed
            part = self._texts.slice(lo, _HASHED).to_pylist()
            hashes[lo:lo + len(part)] = np.fromiter(map(hash, part), np.int64, len(part))
        self._order = np.argsort(hashes, kind="stable")
        self._hashes = hashes[self._order]

    def __getitem__(self, text: str) -> int:
        h = hash(text)
        at = int(np.searchsorted(self._hashes, h))
        while at < len(self._hashes) and self._hashes[at] == h:  # a hash shared by two texts: each checked
            row = int(self._order[at])
            if self._texts[row].as_py() == text:
                return row
            at += 1
        raise KeyError(text)

    def rows(self, texts: Sequence[str], missing: int | None = None) -> np.ndarray:
        """The row of each of ``texts``, looked up together (one not in the column: ``missing``, or
        KeyError when that is None)."""
        out = np.full(len(texts), -1, np.int64)
        if len(texts) and len(self._hashes):
            h = np.fromiter(map(hash, texts), np.int64, len(texts))
            at = np.minimum(np.searchsorted(self._hashes, h), len(self._hashes) - 1)
            hit = np.flatnonzero(self._hashes[at] == h)
            picked = self._order[at[hit]]
            equal = pc.fill_null(pc.equal(self._texts.take(pa.array(picked)),
                                          pa.array([texts[i] for i in hit.tolist()], pa.string())), False)
            equal = equal.to_numpy(zero_copy_only=False)
            out[hit[equal]] = picked[equal]
        for i in np.flatnonzero(out < 0).tolist():  # a hash two texts share, or a text not there
            row = self.get(texts[i])
            if row is None and missing is None:
                raise KeyError(texts[i])
            out[i] = missing if row is None else row
        return out

    def __contains__(self, text: object) -> bool:
        try:
            self[text]
        except (KeyError, TypeError):
            return False
        return True

    def __iter__(self) -> Iterator[str]:
        for lo in range(0, len(self._texts), _HASHED):
            yield from self._texts.slice(lo, _HASHED).to_pylist()

    def __len__(self) -> int:
        return len(self._texts)


class LiveFilesByPath(Mapping):
    """The live files of a :class:`PlanColumns` by path, each made on first use (a caller that
    looks up a few files of a million does not build the others)."""

    def __init__(self, plan: PlanColumns, table):
        self._plan, self._table = plan, table
        self._rows: PathRows | None = None
        self._made: dict[str, LiveFile] = {}

    def _index(self) -> PathRows:
        if self._rows is None:
            self._rows = PathRows(self._plan.files.column("path"))
        return self._rows

    def __getitem__(self, path: str) -> LiveFile:
        lf = self._made.get(path)
        if lf is None:
            lf = self._made[path] = self._plan.live_file(self._table, self._index()[path])
        return lf

    def many(self, paths: Sequence[str]) -> list[LiveFile | None]:
        """The live file of each of ``paths`` (None where the plan has none), those not made yet made
        in one pass over the columns (a census's thousands of files: not a row at a time)."""
        rows = self._index().rows([p for p in paths if p not in self._made], missing=-1)
        need = np.unique(rows[rows >= 0]).tolist()
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

    @property
    def plan(self) -> PlanColumns:  # the plan whose files these are
        return self._plan

    def paths(self) -> pa.Array:
        """The plan's paths as its Arrow column (no Python text per file)."""
        paths = self._plan.files.column("path")
        return paths.chunk(0) if paths.num_chunks == 1 else paths.combine_chunks()

    def __iter__(self):
        return iter(self._index())

    def __len__(self) -> int:
        return self._plan.num_files
