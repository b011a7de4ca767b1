"""Index blobs from ``$file_indexes`` census rows: :class:`CensusBlobs` makes an
:class:`IndexBlob` per row on demand, :class:`Blobs` maps one column and kind's files to them,
and :func:`iter_file_indexes` yields every blob of a snapshot. Kept apart from the census walk
(:mod:`indexcore.views.census`): these turn its rows back into objects, only for the rows asked for."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from indexcore.cache import LRU
from indexcore.formats.container import EMPTY_INDEX_FLAG, IndexEntry
from indexcore.views.census import census_rows_of, judge_entry, snapshot_census
from indexcore.views.census_rows import distinct_codes, values_of
from indexcore.views.common import IndexBlob, Progress
from indexcore.warehouse.model import LiveFile
from indexcore.warehouse.plan_columns import LiveFilesByPath, PlanColumns, text_key, whole


def names_plan_rows(census_paths: pa.ChunkedArray | pa.Array, plan_paths: pa.ChunkedArray | pa.Array) -> bool:
    """Whether a census's ``file_path`` (an array, or a column of one chunk) is a dictionary over
    the plan's own path column (the same buffers: :func:`~indexcore.warehouse.plan_columns.text_key`),
    so its indices are plan rows (bloom sizing and the index inventory then take files by row)."""
    if isinstance(census_paths, pa.ChunkedArray):
        if census_paths.num_chunks != 1:
            return False
        census_paths = census_paths.chunk(0)
    return pa.types.is_dictionary(census_paths.type) and \
        text_key(census_paths.dictionary) == text_key(whole(plan_paths))


def iter_file_indexes(table, snapshot_id: int | None = None, index_types: Iterable[str] | None = None,
                      column: str | None = None, progress: Progress | None = None,
                      sample: int | None = None) -> Iterator[IndexBlob]:
    """Every file index of the snapshot's live files, filtered by type and column, from the
    (kept) census; readers open lazily. ``sample``: only that many of the files with a file
    index (:func:`~indexcore.warehouse.file_sample.sample_files`).

    A container that cannot be read yields one blob with ``column`` None and the ``error``.
    """
    census = census_rows_of(snapshot_census(table, snapshot_id, progress, sample), index_types, column)
    # the blobs' files are made a slice of rows at a time, in one pass over the plan's columns each,
    # and kept on the table: the next view of the same sample makes none, and a caller that stops
    # early (the first 100 files of a layout comparison) does not make the snapshot's
    by_path = table.live_files_by_path(snapshot_id)
    rows = CensusBlobs(table, census, by_path)
    paths = census["file_path"]
    for lo in range(0, census.num_rows, _BLOB_SLICE):
        by_path.many(pc.unique(paths.slice(lo, _BLOB_SLICE)).to_pylist())
        for i in range(lo, min(lo + _BLOB_SLICE, census.num_rows)):
            yield rows.blob(i)


_KEEP_FILES = 1 << 16  # live files made from plan columns kept at most
_BLOB_SLICE = 512  # census rows whose live files iter_file_indexes makes in one pass
_WINDOW = 4096  # census rows whose values a blob asked for by row reads into Python at once
_VALUES = ("file_path", "column_name", "index_type", "index_offset", "index_size_in_bytes", "error",
           "index_container_size_in_bytes")  # the census columns a blob is made of


def census_file_rows(census_paths: pa.ChunkedArray | pa.Array, file_paths) -> np.ndarray:
    """Each census row's file as its row in ``file_paths`` (-1: not there). A census of the plan
    names its files by plan row already (its ``file_path`` dictionary is the plan's path column:
    :data:`~indexcore.views.census.SHARED_TEXT`); another is matched by text in Arrow, once (not a
    hash set of every path per configured index, nor a copy of the paths per index)."""
    file_paths, census_paths = whole(file_paths), whole(census_paths)
    if names_plan_rows(census_paths, file_paths):  # indices are the plan's rows
        at = census_paths.indices
    elif pa.types.is_dictionary(census_paths.type):
        at = pc.index_in(census_paths.dictionary, value_set=file_paths).take(census_paths.indices)
    else:
        at = pc.index_in(census_paths, value_set=file_paths)
    return pc.fill_null(at, -1).to_numpy(zero_copy_only=False).astype(np.int64)


class CensusBlobs:
    """:class:`IndexBlob` s made from the rows of one ``$file_indexes`` census, only for the rows asked
    for: an inventory places 180,000 census rows at 50,000 files, and most are only counted. Its
    column values are read into Python a window of :data:`_WINDOW` rows at a time (a walk in census
    order reads each once; at 1,000,000 files the whole census as lists took gigabytes), or for the
    rows a caller names (:meth:`blobs_at`). ``file_paths``: the files' paths in the order of
    ``files`` (a plan's path column for plan columns), to place census rows by file row
    (:meth:`file_rows`) with no map of every path."""

    def __init__(self, table, census: pa.Table, files: Iterable[LiveFile] | PlanColumns | LiveFilesByPath,
                 file_paths: pa.Array | pa.ChunkedArray | None = None):
        self.table, self.census = table, census
        self._plan = files if isinstance(files, PlanColumns) else None
        self._list: list[LiveFile] | None = None
        if self._plan is not None:
            self._files: Mapping[str, LiveFile] = {}
            file_paths = self._plan.files.column("path") if file_paths is None else file_paths
        elif isinstance(files, LiveFilesByPath):
            self._files = files
        else:
            self._list = list(files)
            self._files = {lf.path: lf for lf in self._list}
        self.file_paths = file_paths
        self._file_of_row: np.ndarray | None = None
        # from plan columns: each file made on first use, the most recently used kept (bounded: advise
        # at 1,000,000 files asks for every file a query reaches)
        self._made = LRU(_KEEP_FILES)
        self._window: tuple[int, int, dict[str, list]] = (0, 0, {})
        self._judged: dict[tuple, tuple] = {}

    def file_rows(self) -> np.ndarray:
        """Each census row's file as its row among ``file_paths`` (-1: none), worked out once."""
        if self._file_of_row is None:
            if self.file_paths is None:
                raise ValueError("census rows are placed by file row only given the files' paths")
            self._file_of_row = census_file_rows(self.census["file_path"], self.file_paths)
        return self._file_of_row

    def _file(self, path: str, census_row: int) -> LiveFile:
        """The live file at ``path`` (census row ``census_row``'s); from plan columns, made on first use
        (the files whose blobs are asked for, not the snapshot's)."""
        if self._plan is None:
            return self._files[path]
        lf = self._made.get(path)
        if lf is None:
            lf = self._plan.live_file(self.table, int(self.file_rows()[census_row]))
            self._made.put(path, lf)
        return lf

    def files_at(self, file_rows: Sequence[int] | np.ndarray) -> list[LiveFile]:
        """The live files at rows ``file_rows`` of ``file_paths`` (from plan columns in one pass)."""
        rows = np.asarray(file_rows, np.int64)
        if self._plan is not None:
            return self._plan.live_files(self.table, rows) if len(rows) else []
        if self._list is None:
            paths = whole(self.file_paths).take(pa.array(rows)).to_pylist()
            return [self._files[p] for p in paths]
        return [self._list[i] for i in rows.tolist()]

    def _values(self, i: int) -> tuple[dict[str, list], int]:
        """The census values of the window holding row ``i`` and ``i``'s place in it."""
        lo, hi, values = self._window
        if not lo <= i < hi:
            lo, hi = i - i % _WINDOW, min(i - i % _WINDOW + _WINDOW, self.census.num_rows)
            part = self.census.slice(lo, hi - lo)
            # texts decoded by the cast first: a dictionary column's to_pylist is 25x slower
            values = {name: values_of(part[name]) for name in _VALUES}
            self._window = (lo, hi, values)
        return values, i - lo

    def blob(self, i: int) -> IndexBlob:
        """The blob of census row ``i``."""
        values, at = self._values(i)
        return self._made_blob({name: v[at] for name, v in values.items()}, i, None)

    def blobs_at(self, rows: np.ndarray) -> list[IndexBlob]:
        """The blobs of census rows ``rows`` (any order) in one pass over their values (their live
        files too, where ``file_paths`` places them)."""
        rows = np.asarray(rows, np.int64)
        if not len(rows):
            return []
        part = self.census.select(list(_VALUES)).take(pa.array(rows))
        values = {name: values_of(part[name]) for name in _VALUES}
        files = self.files_at(self.file_rows()[rows]) if self.file_paths is not None else None
        return [self._made_blob({name: v[j] for name, v in values.items()}, int(i), None if files is None else files[j])
                for j, i in enumerate(rows.tolist())]

    def _made_blob(self, c: dict, i: int, lf: LiveFile | None) -> IndexBlob:
        lf = self._file(c["file_path"], i) if lf is None else lf
        column, kind, error = c["column_name"], c["index_type"], c["error"]
        embedded = lf.file.embedded_index is not None
        if column is None:  # the container cannot be read
            return IndexBlob(lf, None, None, 0, False, embedded, None, error)
        key = (lf.file.schema_id, column, kind)
        known = self._judged.get(key)
        if known is None:
            known = self._judged[key] = judge_entry(self.table.file_schema(lf), column, kind)
        dtype, _column_error, _kind_error, opts = known
        size, offset = c["index_size_in_bytes"], c["index_offset"]
        empty = offset == EMPTY_INDEX_FLAG
        return IndexBlob(lf, column, kind, size, empty, embedded, dtype, error, offset,
                         c["index_container_size_in_bytes"], IndexEntry(column, kind, offset, size), opts,
                         self.table)


class Blobs(Mapping[str, IndexBlob]):
    """Data file path -> :class:`IndexBlob` of one column and kind, each blob made on first use from
    its census row (:class:`CensusBlobs`); a file listing the pair twice is its last entry, as in
    Paimon's head map. The census rows are added as columns and mapped by path only when a blob or
    a path is asked for: health counts the files of each index (:meth:`paths`, ``len``) and makes
    no map of 50,000 paths."""

    def __init__(self, rows: CensusBlobs):
        self._rows = rows
        self._parts: list[tuple[pa.Array | Sequence[str], np.ndarray | Sequence[int]]] = []
        self._mapped: dict[str, int] | None = {}
        self._made = LRU(_KEEP_FILES)  # the blobs made, the most recently used kept (advise at 1M asks for each file)
        self._by_file: np.ndarray | None = None

    def add(self, paths: pa.Array | Iterable[str], rows: np.ndarray | Iterable[int]) -> None:
        """Census rows ``rows`` (of data files ``paths``: an Arrow string array or texts), in census order."""
        self._parts.append((paths if isinstance(paths, pa.Array | pa.ChunkedArray) else list(paths),
                            rows if isinstance(rows, np.ndarray) else list(rows)))
        self._mapped = self._by_file = None

    @property
    def _at(self) -> dict[str, int]:
        if self._mapped is None:
            self._mapped = {}
            for paths, rows in self._parts:
                if isinstance(paths, pa.Array | pa.ChunkedArray) and pa.types.is_dictionary(paths.type):
                    paths = paths.cast(pa.string())  # a dictionary's to_pylist is 25x slower; only the mapped rows'
                texts = paths.to_pylist() if isinstance(paths, pa.Array | pa.ChunkedArray) else paths
                self._mapped.update(zip(texts, rows.tolist() if isinstance(rows, np.ndarray) else rows, strict=True))
        return self._mapped

    def paths(self) -> pa.Array:
        """The data files' paths as one Arrow string array (a file listing the pair twice may appear
        twice); of a census's dictionary column, the texts of the indices used, not one per row."""
        arrays = []
        for paths, _rows in self._parts:
            if not isinstance(paths, pa.Array | pa.ChunkedArray):
                paths = pa.array(paths, pa.string())
            if isinstance(paths, pa.ChunkedArray):
                paths = paths.combine_chunks()
            if pa.types.is_dictionary(paths.type):
                paths = paths.dictionary.take(pc.unique(paths.indices))
            arrays.append(paths.cast(pa.string()))
        return pa.concat_arrays(arrays) if arrays else pa.array([], pa.string())

    def census_blobs(self) -> CensusBlobs:
        """The census blobs these are of (their census, and blobs made by census row)."""
        return self._rows

    def by_file(self) -> np.ndarray:
        """Each file's census row of this pair (-1: it has none), by the file's row among the census
        blobs' ``file_paths`` (a file listing the pair twice: its last entry); worked out once, on
        arrays (no map of every path: at 1,000,000 files one was about 100 MB per index)."""
        if self._by_file is None:
            rows = np.concatenate([np.asarray(r, np.int64) for _p, r in self._parts]) if self._parts else \
                np.zeros(0, np.int64)
            files = self._rows.file_rows()[rows]
            keep = files >= 0
            out = np.full(len(self._rows.file_paths), -1, np.int64)
            np.maximum.at(out, files[keep], rows[keep])  # census order: a file's last entry is its highest row
            self._by_file = out
        return self._by_file

    def census_rows(self) -> tuple[pa.Table, list[int] | np.ndarray]:
        """The census and each file's row in it, in census order, without making a blob (a caller
        summing census columns over every file makes no object per file)."""
        if self._rows.file_paths is not None:
            rows = self.by_file()
            return self._rows.census, np.sort(rows[rows >= 0])
        return self._rows.census, list(self._at.values())

    def files_of(self, paths: Sequence[str]) -> list[LiveFile | None]:
        """The live files at ``paths`` (None: not one of the census blobs' files), made in one pass
        where the census blobs know their files' paths (matched in Arrow), else each blob's."""
        if self._rows.file_paths is None:
            return [self[p].file if p in self else None for p in paths]
        at = pc.index_in(pa.array(list(paths), pa.string()), value_set=whole(self._rows.file_paths))
        at = pc.fill_null(at, -1).to_numpy(zero_copy_only=False).astype(np.int64)
        found = np.flatnonzero(at >= 0)
        out: list[LiveFile | None] = [None] * len(at)
        for j, lf in zip(found.tolist(), self._rows.files_at(at[found]), strict=True):
            out[j] = lf
        return out

    def __getitem__(self, path: str) -> IndexBlob:
        blob = self._made.get(path)
        if blob is None:
            blob = self._rows.blob(self._at[path])
            self._made.put(path, blob)
        return blob

    def __contains__(self, path: object) -> bool:
        return path in self._at

    def __iter__(self) -> Iterator[str]:
        return iter(self._at)

    def __len__(self) -> int:
        if self._mapped is not None:
            return len(self._mapped)
        chunks = [c for paths, _rows in self._parts for c in getattr(paths, "chunks", [paths])]
        one = chunks and all(isinstance(c, pa.DictionaryArray) for c in chunks)  # one census's: count indices
        one = one and len({text_key(c.dictionary) for c in chunks}) == 1
        if not one:
            return pc.count_distinct(self.paths()).as_py()
        return distinct_codes([c.indices for c in chunks], len(chunks[0].dictionary))
