"""The file-index census: every (data file, column, index kind) of a snapshot, from container heads.

``$file_indexes`` is built here, column by column from the kept head bytes
(:meth:`~indexcore.warehouse.table.Table.iter_head_bytes`, read column-wise by
:func:`~indexcore.formats.container.head_spans`): at 50,000 files it has hundreds of thousands of
rows, and no object is made per entry. On local storage the heads are read and parsed a batch
at a time in C (:mod:`~indexcore.formats.head_batch`, :func:`_native_walk`): the same census, no
head kept. Everything that walks a snapshot's file indexes (:func:`iter_file_indexes`, the index
views, the inventory, health) reads that one census.
"""

from __future__ import annotations

import posixpath
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from indexcore.cache import release_unused
from indexcore.errors import IndexCoreError
from indexcore.formats.container import EMPTY_INDEX_FLAG, head_spans
from indexcore.formats.head_batch import Layouts, native_storage, read_heads
from indexcore.formats.registry import FILE_INDEX_TYPES, index_kind
from indexcore.views.census_rows import (
    FILE_INDEXES,
    NO_VERDICTS,
    Verdicts,
    Walked,
    distinct_codes,
    storage_types,
)
from indexcore.views.common import (
    Progress,
    kept_view,
    kept_view_if_built,
    partition_labels,
    partition_types,
    plan_partition_labels,
    tick,
)
from indexcore.warehouse.file_sample import sample_files, sample_positions
from indexcore.warehouse.model import LiveFile
from indexcore.warehouse.plan_columns import PlanColumns, distinct_texts, take_rows, whole
from indexcore.warehouse.table_heads import HEAD_PREFETCH_BYTES
from indexcore.warehouse.table_manifests import gc_paused

# files whose heads one C call reads (:func:`_native_walk`): a few per-batch costs (the batch's
# columns as lists, its layouts) over many files, the batch's lists still small
NATIVE_BATCH = 2048
# the columns of ``$file_indexes`` that belong to the data file (the same on each of its rows)
_FILE_LEVEL = ("partition", "bucket", "file_path", "file_size_in_bytes", "record_count", "schema_id",
               "storage_type", "index_file_path", "file_name")


def judge_entry(schema, column: str, index_type: str) -> tuple:
    """(column type, why the column cannot be used, why the kind cannot be read, options) for one
    schema's column and index kind: the same for every file of that schema, so judged once."""
    try:
        dtype = schema.field(column).type
    except KeyError:
        return None, f"column {column!r} is not in schema {schema.id}", None, None
    kind_error = None
    if index_type not in FILE_INDEX_TYPES:
        try:
            index_kind(index_type)  # the error opening its reader would raise
        except IndexCoreError as exc:
            kind_error = str(exc)
    return dtype, None, kind_error, schema.file_index_options(column, index_type)


def _verdicts(schema, pairs: tuple[tuple[str, str], ...], empty: tuple[bool, ...], judged: dict) -> Verdicts:
    types, errors, options = [], [], []
    for (column, kind), is_empty in zip(pairs, empty, strict=True):
        key = (schema.id, column, kind)
        known = judged.get(key)
        if known is None:
            known = judged[key] = judge_entry(schema, column, kind)
        dtype, column_error, kind_error, opts = known
        types.append(dtype)
        errors.append(column_error or (None if is_empty else kind_error))
        options.append(opts)
    unusable = tuple(why is not None or kind not in FILE_INDEX_TYPES
                     for (_, kind), why in zip(pairs, errors, strict=True))
    return Verdicts(tuple(c for c, _ in pairs), tuple(k for _, k in pairs), empty, tuple(types), tuple(errors),
                    tuple(options), unusable, any(unusable))


def census_heads(table, files: Iterable[LiveFile], progress: Progress | None = None
                 ) -> Iterator[tuple[LiveFile, tuple[int, ...], int | None, str | None, Verdicts]]:
    """The census one file at a time: ``(live file, spans, container size, error, verdicts)`` for
    each of ``files`` (each with a file index); ``spans`` are the head's flat ``(offset, length, ...)``
    values and ``verdicts`` judge its entries. A container that cannot be read is
    ``(live file, (), None, error, NO_VERDICTS)``."""
    files = [lf for lf in files if lf.has_file_index]

    def columns(lo: int, hi: int) -> tuple[list, list, list]:
        part = files[lo:hi]
        return [lf.path for lf in part], [lf.index_path for lf in part], [lf.file.embedded_index for lf in part]

    for i, spans, size, error, verdicts in _census_walk(table, [lf.file.schema_id for lf in files], columns,
                                                        progress):
        yield files[i], spans, size, error, verdicts


class _Judge:
    """The verdicts of one walk's heads, judged once per (schema, layout): ``(schema id, column,
    kind)`` judged once (:func:`judge_entry`), each head shape's verdicts kept."""

    def __init__(self, table):
        self.table = table
        self.judged: dict[tuple, tuple] = {}  # (schema id, column, kind) -> what judge_entry says
        self.shapes: dict[tuple, Verdicts] = {}  # (schema id, (column, kind) pairs, empties) -> verdicts
        self.schemas: dict[int, object] = {}
        # (schema id, id of pairs, empties) -> (pairs, verdicts): heads of one layout share their pairs,
        # so most files find their verdicts without hashing the pairs (pairs kept, so an id is not reused)
        self.by_id: dict[tuple, tuple] = {}

    def verdicts(self, sid: int, pairs: tuple, empty: tuple[bool, ...], path: str) -> Verdicts:
        verdicts = self.shapes.get((sid, pairs, empty))
        if verdicts is None:
            schema = self.schemas.get(sid)
            if schema is None:
                schema = self.schemas[sid] = self.table.schema_or_latest(sid, path)
            verdicts = self.shapes[sid, pairs, empty] = _verdicts(schema, pairs, empty, self.judged)
        return verdicts

    def head(self, sid: int, path: str, head: bytes | None, size: int, name: str, error: str | None
             ) -> tuple[tuple[int, ...], int | None, str | None, Verdicts]:
        """One head's ``(spans, container size, error, verdicts)`` (:func:`census_heads`), or its
        read's or parse's error as ``((), None, error, NO_VERDICTS)``: the one place a head becomes
        a census file (the Python walk's heads, the C walk's faults)."""
        if error is None:
            try:
                pairs, spans = head_spans(head, size, name)
            except IndexCoreError as exc:
                error = str(exc)
        if error is not None:
            return (), None, error, NO_VERDICTS
        empty = _empties(spans)
        known = self.by_id.get((sid, id(pairs), empty))
        if known is not None and known[0] is pairs:
            return spans, size, None, known[1]
        verdicts = self.verdicts(sid, pairs, empty, path)
        if len(self.by_id) > 4096:  # heads that share no layout: each has its own pairs
            self.by_id.clear()
        self.by_id[sid, id(pairs), empty] = (pairs, verdicts)
        return spans, size, None, verdicts


def _empties(spans: tuple[int, ...]) -> tuple[bool, ...]:
    """Which entries of a head's flat spans are empty-index entries."""
    offsets = spans[::2]
    return (tuple(offset == EMPTY_INDEX_FLAG for offset in offsets) if EMPTY_INDEX_FLAG in offsets
            else (False,) * len(offsets))


def _census_walk(table, schema_ids: Sequence[int], columns: Callable[[int, int], tuple[list, list, list]],
                 progress: Progress | None
                 ) -> Iterator[tuple[int, tuple[int, ...], int | None, str | None, Verdicts]]:
    """:func:`census_heads` of the data files written under ``schema_ids`` (``i`` for the i-th), whose
    containers ``columns(lo, hi)`` gives for files ``lo`` to ``hi`` (their paths, ``.index`` paths
    and embedded index bytes): made a batch at a time as the walk goes (a 1,000,000-file census
    holds no list of every path), each batch's heads read at once (:meth:`head_batch`)."""
    judge = _Judge(table)
    total = len(schema_ids)
    step = table.head_batch_size()
    for lo in range(0, total, step):
        hi = min(lo + step, total)
        paths, index_paths, embedded = columns(lo, hi)
        tick(progress, lo, total, posixpath.basename(paths[0]))
        sids = [int(sid) for sid in schema_ids[lo:hi]]
        for j, (head, size, name, error) in enumerate(table.head_batch(paths, index_paths, embedded)):
            yield lo + j, *judge.head(sids[j], paths[j], head, size, name, error)
    tick(progress, total, total, "done")


NATIVE_AHEAD = 2  # batches whose heads are read at once (the C reads release the GIL: one core each)


def read_ahead(read: Callable[[int], Any], starts: Sequence[int]) -> Iterator[tuple[int, Any]]:
    """``(start, read(start))`` for each of ``starts`` in order, the next :data:`NATIVE_AHEAD` - 1
    batches read on a thread while the caller folds this one (one batch: no thread)."""
    if len(starts) < 2:
        for lo in starts:
            yield lo, read(lo)
        return
    with ThreadPoolExecutor(NATIVE_AHEAD) as pool:
        pending = deque(pool.submit(read, lo) for lo in starts[:NATIVE_AHEAD])
        for i, lo in enumerate(starts):
            got = pending.popleft().result()
            if i + NATIVE_AHEAD < len(starts):
                pending.append(pool.submit(read, starts[i + NATIVE_AHEAD]))
            yield lo, got


def _native_walk(table, picked: pa.Table, who: np.ndarray, walked: Walked, progress: Progress | None) -> None:
    """:func:`_census_walk` of local containers folded into ``walked`` a batch at a time, each batch's
    heads read and parsed in one C call (:func:`~indexcore.formats.head_batch.read_heads`) and laid
    into ``walked`` as arrays (no Python per file); the files it faults on take the Python path
    (:meth:`head_batch`), which names what is wrong. ``picked``: the files' plan columns (path,
    ``.index`` path, embedded index, schema id); ``who``: what each file is to the caller."""
    judge, layouts = _Judge(table), Layouts()
    pattern_of: dict[tuple[int, int], int] = {}  # (schema id, layout id) -> walked pattern (-2: not shown)
    schema_ids = picked.column("_SCHEMA_ID").to_numpy()
    total = len(schema_ids)

    def read(lo: int) -> tuple:
        part = picked.slice(lo, NATIVE_BATCH)
        n = part.num_rows
        inline = part.column("_EMBEDDED_FILE_INDEX")
        embedded = [None] * n if inline.null_count == n else inline.to_pylist()
        index_paths = part.column("index_path").to_pylist()
        return part, embedded, index_paths, read_heads(table.storage, index_paths, embedded, layouts,
                                                       HEAD_PREFETCH_BYTES)

    for lo, (part, embedded, index_paths, got) in read_ahead(read, range(0, total, NATIVE_BATCH)):
        n = part.num_rows
        path = part.column("path")  # texts made only where needed: the tick, a new layout, a fault
        tick(progress, lo, total, posixpath.basename(path[0].as_py()))
        sids = np.asarray(schema_ids[lo:lo + n], np.int64)
        pattern = np.full(n, -1, np.int64)
        ok = got.layout >= 0
        if ok.any():
            combos, first, inverse = np.unique(np.stack([sids[ok], got.layout[ok]]), axis=1, return_index=True,
                                               return_inverse=True)
            at = np.flatnonzero(ok)
            mapped = np.empty(combos.shape[1], np.int64)
            for c, (sid, lid) in enumerate(combos.T.tolist()):
                p = pattern_of.get((sid, lid))
                if p is None:
                    pairs, empty = layouts.shapes[lid]
                    p = pattern_of[sid, lid] = walked.pattern(judge.verdicts(sid, pairs, empty,
                                                                             path[int(at[first[c]])].as_py()))
                mapped[c] = p
            pattern[ok] = mapped[inverse.ravel()]
        faults = {}
        if got.faults:
            at = [i for i, _kind, _detail in got.faults]
            paths = [path[i].as_py() for i in at]
            heads = table.head_batch(paths, [index_paths[i] for i in at], [embedded[i] for i in at])
            for i, file_path, hit in zip(at, paths, heads, strict=True):
                faults[i] = judge.head(int(sids[i]), file_path, *hit)
        walked.add_many(who[lo:lo + n], pattern, got.entries, got.spans, got.size, faults)
    tick(progress, total, total, "done")


def indexed_rows(plan: PlanColumns, sample: int | None = None) -> np.ndarray:
    """The rows of ``plan.files`` with a file index (embedded or a ``.index`` file), in plan order;
    ``sample``: that many of them as :func:`~indexcore.warehouse.file_sample.sample_files` picks."""
    live = plan.files
    has = pc.or_(pc.is_valid(live.column("_EMBEDDED_FILE_INDEX")), pc.is_valid(live.column("index_path")))
    if isinstance(has, pa.ChunkedArray):
        has = has.combine_chunks()
    rows = np.flatnonzero(has.to_numpy(zero_copy_only=False))
    if sample is None or sample >= len(rows):
        return rows
    paths = plan.text_objects("path")[rows]  # the plan's kept strings (its frames'): no new string per path
    return rows[sample_positions(paths, sample)]


def file_indexes(table, snapshot_id: int | None = None, errors_only: bool = False,
                 progress: Progress | None = None, sample: int | None = None,
                 files: Sequence[LiveFile] | None = None, plan: PlanColumns | None = None) -> pa.Table:
    """``$file_indexes``: one row per (data file, column, index type) from each container's head.

    ``storage_type`` is EMBEDDED (in the manifest) or FILE (a ``.index`` file beside the data);
    a container that cannot be read is one row with ``error`` set and no column. ``errors_only``:
    just the rows of unusable indexes (an ``error``, or a kind that is not a file index), for a
    page that lists those and nothing else. ``sample``: only that many of the files with a file
    index (:func:`~indexcore.warehouse.file_sample.sample_files`). ``files``: these planned live
    files instead of the snapshot's (advise's object plan: :func:`_file_indexes_of`). ``plan``: this
    columnar plan instead of the snapshot's (a Spark task's share of a plan, made by
    :meth:`~indexcore.warehouse.table_plan_columns.TablePlanColumns.plan_of_entries`).

    Built as arrays over the columnar plan (:meth:`~indexcore.warehouse.Table.plan_columns`): a
    file's rows are a pattern (the verdicts of its head's shape, and which of its entries are
    shown) laid over its spans, so the hundreds of thousands of rows of a 50,000-file census are
    indexes into a few patterns, its files and their spans; no object per file.

    A sample or ``errors_only`` is taken from the whole census when the table keeps it already
    (a page counts every file, then decodes a sample): no head is walked twice.
    """
    if files is not None:
        return _file_indexes_of(table, files, errors_only, progress, sample)
    if plan is None and (sample is not None or errors_only):
        snap = table.snapshot(snapshot_id)
        whole = None if snap is None else kept_view_if_built(table, "file_indexes", snap.id)
        if whole is not None:
            part = whole if sample is None else census_of_sample(table, whole, snap.id, sample)
            return unusable_rows(part) if errors_only else part
    plan = plan if plan is not None else table.plan_columns(snapshot_id)
    rows = indexed_rows(plan, sample)
    picked = plan.files.select(["path", "index_path", "_EMBEDDED_FILE_INDEX", "_SCHEMA_ID"])
    if len(rows) < picked.num_rows:  # else every file, in order: no copy of the embedded indexes
        picked = take_rows(picked, rows)
    walked = Walked(errors_only, rows=True)

    def columns(lo: int, hi: int) -> tuple[list, list, list]:
        part = picked.slice(lo, hi - lo)
        return (part.column("path").to_pylist(), part.column("index_path").to_pylist(),
                part.column("_EMBEDDED_FILE_INDEX").to_pylist())

    with gc_paused():  # the kept heads and the walk's tuples are acyclic: no collector passes over them
        if native_storage(table.storage):
            _native_walk(table, picked, rows, walked, progress)
        else:
            plan_rows = rows.tolist()
            for i, spans, size, why, v in _census_walk(table, picked.column("_SCHEMA_ID").to_numpy(), columns,
                                                       progress):
                walked.add(plan_rows[i], spans, size, why, v)
    census = walked.table(lambda shown: _plan_file_columns(table, plan, np.asarray(shown, np.int64)))
    release_unused()  # the walk's scratch arrays and freed heads: back to the system, not kept
    return census


def _file_indexes_of(table, planned: Sequence[LiveFile], errors_only: bool, progress: Progress | None,
                     sample: int | None) -> pa.Table:
    """:func:`file_indexes` over planned live file objects (advise holds the object plan and does
    not build the columnar one); the same rows as the columnar walk (tests/test_advise.py)."""
    files = sample_files([lf for lf in planned if lf.has_file_index], sample)
    if native_storage(table.storage):  # the C walk over the files' columns; ``shown`` are their positions
        walked = Walked(errors_only, rows=True)
        picked = pa.table({"path": [lf.path for lf in files], "index_path": [lf.index_path for lf in files],
                           "_EMBEDDED_FILE_INDEX": pa.array([lf.file.embedded_index for lf in files], pa.binary()),
                           "_SCHEMA_ID": pa.array([lf.file.schema_id for lf in files], pa.int64())})
        with gc_paused():
            _native_walk(table, picked, np.arange(len(files), dtype=np.int64), walked, progress)
        return walked.table(lambda shown: _object_file_columns(table, [files[i] for i in shown]))
    walked = Walked(errors_only)
    for lf, spans, size, why, v in census_heads(table, files, progress):
        walked.add(lf, spans, size, why, v)
    return walked.table(lambda shown: _object_file_columns(table, shown))


def _plan_file_columns(table, plan: PlanColumns, shown: np.ndarray) -> dict:
    """The census's per-file columns (:data:`_FILE_LEVEL`) of the plan's rows ``shown``; its text
    columns index into the plan's own columns (no copy of a path: :data:`SHARED_TEXT`)."""
    live = plan.files.select(["partition_id", "_BUCKET", "_FILE_SIZE", "_ROW_COUNT", "_SCHEMA_ID",
                              "_EMBEDDED_FILE_INDEX"])
    at = pa.array(shown)
    embedded = pc.is_valid(live.column("_EMBEDDED_FILE_INDEX")).take(at)
    live = live.drop_columns(["_EMBEDDED_FILE_INDEX"]).take(at)  # the bytes stay in the plan
    labels = plan_partition_labels(plan, None, partition_types(table), table.caches.labels)
    on_disk = np.where(embedded.to_numpy(zero_copy_only=False), -1, shown)
    return dict(zip(_FILE_LEVEL, (
        _shared(whole(live.column("partition_id")).to_numpy(zero_copy_only=False).astype(np.int64), labels),
        live.column("_BUCKET"), _shared(shown, plan.files.column("path")), live.column("_FILE_SIZE"),
        live.column("_ROW_COUNT"), live.column("_SCHEMA_ID"), storage_types(embedded.to_numpy(zero_copy_only=False)),
        _shared(on_disk, plan.files.column("index_path"), plan, "index_path"),
        _shared(shown, plan.files.column("_FILE_NAME"))),
        strict=True))


# the census's texts that are the plan's own columns at its files' rows (what census_on_plan makes again)
ON_PLAN = {"file_path": "path", "file_name": "_FILE_NAME", "index_file_path": "index_path"}
ON_DISK = "_on_disk"  # a census made elsewhere: whether the row's index_file_path is its file's (not null)


def census_on_plan(lean: pa.Table, plan: PlanColumns, file_rows: np.ndarray) -> pa.Table:
    """A census made elsewhere (Spark tasks) without its :data:`ON_PLAN` texts, ``lean`` (row ``i``
    of the file at plan row ``file_rows[i]``, :data:`ON_DISK` where it names an ``.index`` file), as
    the census one process makes: those texts index into ``plan``'s own columns
    (:func:`_plan_file_columns`), not a copy of every path (about 290 MB at 1,000,000 files)."""
    file_rows = np.asarray(file_rows, np.int64)
    on_disk = np.where(lean.column(ON_DISK).to_numpy(zero_copy_only=False), file_rows, -1)
    texts = {name: _shared(on_disk, plan.files.column(column), plan, column) if name == "index_file_path"
             else _shared(file_rows, plan.files.column(column)) for name, column in ON_PLAN.items()}
    return pa.Table.from_arrays([texts[f.name] if f.name in texts else lean.column(f.name).cast(f.type)
                                 for f in FILE_INDEXES], schema=FILE_INDEXES)


def _shared(rows: np.ndarray, values, plan: PlanColumns | None = None, column: str = "") -> pa.DictionaryArray:
    """``values[rows]`` (null where a row is -1) as a :data:`SHARED_TEXT` array whose dictionary is
    ``values`` itself when that is a valid pandas category list (no null, no text twice); else the
    texts the rows use, each once (noted on ``plan`` as its ``column``'s: :meth:`PlanColumns.note_taken`),
    over ``values``' own text bytes when the rows left out hold none (:func:`_texts_at`)."""
    values = whole(values)
    if values.null_count == 0 and distinct_texts(values):
        return pa.DictionaryArray.from_arrays(pa.array(rows, pa.int32(), mask=rows < 0), values)
    used, at = np.unique(rows[rows >= 0], return_inverse=True)
    taken = _texts_at(values, used)
    if taken.null_count == 0 and distinct_texts(taken):  # the texts used, each once already: no hash of them
        codes, dictionary = np.arange(len(taken), dtype=np.int64), taken
        if plan is not None:
            plan.note_taken(column, used, taken)
    else:
        encoded = taken.dictionary_encode()  # nulls: null indices
        codes, dictionary = pc.fill_null(encoded.indices, -1).to_numpy(zero_copy_only=False), encoded.dictionary
    out = np.full(len(rows), -1, np.int64)
    out[rows >= 0] = codes[at]
    return pa.DictionaryArray.from_arrays(pa.array(out, pa.int32(), mask=out < 0), dictionary)


def _texts_at(values: pa.Array, rows: np.ndarray) -> pa.Array:
    """``values.take(rows)`` (``rows`` ascending) of a text array. When the rows left out hold no
    text bytes (the nulls of the plan's ``.index`` paths: the files that embed theirs), a view over
    ``values``' own text bytes with offsets of its own, not a copy: at 1,000,000 files the census's
    ``.index`` paths were a second copy of the plan's, about 95 MiB."""
    if values.type == pa.string() and len(rows) and values.null_count:
        ends = np.frombuffer(values.buffers()[1], np.int32, len(values) + 1, values.offset * 4)
        valid = values.is_valid().to_numpy(zero_copy_only=False)[rows]
        if valid.all() and np.array_equal(ends[rows[1:]], ends[rows[:-1] + 1]):  # each text where the last ended
            offsets = np.append(ends[rows], ends[rows[-1] + 1]).astype(np.int32)
            return pa.StringArray.from_buffers(len(rows), pa.py_buffer(offsets), values.buffers()[2])
    return values.take(pa.array(rows, pa.int64()))


def _object_file_columns(table, shown: list[LiveFile]) -> dict:
    """The census's per-file columns (:data:`_FILE_LEVEL`) of live file objects."""
    metas = [lf.file for lf in shown]
    embedded = [m.embedded_index is not None for m in metas]
    return dict(zip(_FILE_LEVEL, (
        partition_labels(shown, partition_types(table), table.caches.labels), [lf.bucket for lf in shown],
        [lf.path for lf in shown], [m.file_size for m in metas], [m.row_count for m in metas],
        [m.schema_id for m in metas], ["EMBEDDED" if e else "FILE" for e in embedded],
        [None if e else lf.index_path for lf, e in zip(shown, embedded, strict=True)],
        [m.file_name for m in metas]), strict=True))


def unusable_rows(census: pa.Table) -> pa.Table:
    """The rows of a ``$file_indexes`` census that ``errors_only`` keeps: an ``error`` (an
    unreadable container among them), or a kind that is not a file index."""
    kinds = census["index_type"]
    foreign = pc.and_kleene(pc.is_valid(kinds), pc.invert(texts_in(kinds, pa.array(list(FILE_INDEX_TYPES)))))
    return census.filter(pc.fill_null(pc.or_kleene(pc.is_valid(census["error"]), foreign), False))


def snapshot_census(table, snapshot_id: int | None = None, progress: Progress | None = None,
                    sample: int | None = None) -> pa.Table:
    """The snapshot's ``$file_indexes`` census, kept on the table as the ``$file_indexes`` view
    is (``sample``: of that many files, not kept; taken from the kept census when the table has
    it: :func:`file_indexes`)."""
    if sample is None:
        snap = table.snapshot(snapshot_id)
        if snap is not None:
            return kept_view(table, "file_indexes", snap.id, lambda: file_indexes(table, snap.id, progress=progress))
    return file_indexes(table, snapshot_id, progress=progress, sample=sample)


def census_of_sample(table, census: pa.Table, snapshot_id: int, sample: int) -> pa.Table:
    """The rows of the whole snapshot's ``census`` that :func:`file_indexes` with ``sample`` gives:
    the sampled files' rows, the files in the sample's order, each file's rows in census order."""
    plan = table.plan_columns(snapshot_id)
    rows = indexed_rows(plan, sample)
    if len(rows) == len(indexed_rows(plan)):
        return census
    paths = plan.files.column("path").take(pa.array(rows))
    at = pc.fill_null(texts_in(census["file_path"], paths, where=True), -1).to_numpy()
    picked = np.flatnonzero(at >= 0)
    return census.take(picked[np.argsort(at[picked], kind="stable")])


def texts_in(column: pa.Array | pa.ChunkedArray, values: pa.Array, where: bool = False) -> pa.ChunkedArray:
    """Per row of a census text column: whether its text is one of ``values`` (``where``: its
    position in ``values``, null when not there). A :data:`SHARED_TEXT` column is looked up by its
    dictionary and the answers taken by its indices: Arrow's ``is_in`` / ``index_in`` of a
    dictionary array first decodes every row (at 1,000,000 files, 3.87 million paths: about 400 MB)."""
    lookup = pc.index_in if where else pc.is_in
    out = []
    for chunk in column.chunks if isinstance(column, pa.ChunkedArray) else [column]:
        if pa.types.is_dictionary(chunk.type):
            found = lookup(chunk.dictionary, value_set=values).take(chunk.indices)
        else:
            found = lookup(chunk, value_set=values)
        out.append(found if where else pc.fill_null(found, False))
    return pa.chunked_array(out, pa.int32() if where else pa.bool_())


def census_rows_of(census: pa.Table, index_types: Iterable[str] | None = None,
                   column: str | None = None) -> pa.Table:
    """The rows of ``census`` of these kinds and this column, and its unreadable containers (no column)."""
    wanted = []
    if index_types is not None:
        wanted.append(texts_in(census["index_type"], pa.array(list(index_types), pa.string())))
    if column is not None:
        wanted.append(texts_in(census["column_name"], pa.array([column], pa.string())))
    if not wanted:
        return census
    keep = wanted[0] if len(wanted) == 1 else pc.and_(*wanted)
    return census.filter(pc.or_(pc.is_null(census["column_name"]), pc.fill_null(keep, False)))


def census_mask(census: pa.Table, index_types: Iterable[str] | None = None, column: str | None = None,
                usable: bool = False) -> pa.ChunkedArray | None:
    """Per row of ``census``: whether it is of these kinds, on this column and (``usable``) without
    an error; None when nothing is asked (every row). Looked up on the census's dictionaries
    (:func:`texts_in`), no text decoded per row."""
    keep = []
    if index_types is not None:
        keep.append(texts_in(census["index_type"], pa.array(list(index_types), pa.string())))
    if column is not None:
        keep.append(texts_in(census["column_name"], pa.array([column], pa.string())))
    if usable:
        keep.append(pc.is_null(census["error"]))
    out = keep[0] if keep else None
    for more in keep[1:]:
        out = pc.and_(out, more)
    return out


def census_column_names(census: pa.Table, index_types: Iterable[str]) -> list[str]:
    """The columns with a file index of one of ``index_types`` in ``census``, sorted."""
    names = census["column_name"].filter(census_mask(census, index_types))
    return sorted(name for name in pc.unique(names).to_pylist() if isinstance(name, str))


def census_carrying(census: pa.Table, index_types: Iterable[str], column: str) -> tuple[int, int]:
    """How many distinct data files carry a file index of ``index_types`` on ``column``, and how
    many rows they hold (each file's ``record_count`` once): on the path's dictionary indices, no
    copy of the carrying rows and no hash of their paths."""
    keep = census_mask(census, index_types, column)
    paths = census["file_path"].filter(keep).combine_chunks()
    if not pa.types.is_dictionary(paths.type):
        paths = pc.dictionary_encode(paths)
    _, first = np.unique(paths.indices.to_numpy(zero_copy_only=False), return_index=True)
    counts = census["record_count"].filter(keep).to_numpy()
    return len(first), int(counts[first].sum())


def census_files(census: pa.Table, index_types: Iterable[str] | None = None, column: str | None = None) -> int:
    """How many distinct data files the rows of ``census`` of these kinds and this column name (all
    rows by default): counted on a :data:`SHARED_TEXT` ``file_path``'s indices, a flag per dictionary
    entry (at 1,000,000 files about 20 MB at once; pandas' ``nunique`` of the 3.87 million paths of
    the census frame hashed them, 70-116 MiB each time a page counted)."""
    keep = census_mask(census, index_types, column)
    paths = census["file_path"]
    if not (paths.num_chunks == 1 and pa.types.is_dictionary(paths.type)):  # plain text, or chunks of their own
        paths = paths if keep is None else paths.filter(keep)
        return pc.count_distinct(paths.cast(pa.string())).as_py()
    chunk = paths.chunk(0)
    codes = chunk.indices if keep is None else chunk.indices.filter(keep.combine_chunks())
    return distinct_codes([codes], len(chunk.dictionary))
