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


class CensusBlobs:
    """:class:`IndexBlob` s made from the rows of one ``$file_indexes`` census (its column values
    read into Python once, on the first blob asked for): an inventory places 180,000 census rows
    at 50,000 files, and most are only counted."""

    def __init__(self, table, census: pa.Table, files: Iterable[LiveFile] | PlanColumns | LiveFilesByPath):
        self.table, self.census = table, census
        self._plan = files if isinstance(files, PlanColumns) else None
        self._files = {} if self._plan is not None else files if isinstance(files, LiveFilesByPath) else {
            lf.path: lf for lf in files}
        # from plan columns: each file made on first use, the most recently used kept (bounded: advise
        # at 1,000,000 files asks for every file a query reaches)
        self._made = LRU(_KEEP_FILES)
        self._rows: dict[str, int] | None = None
        self._columns: dict[str, list] | None = None
        self._judged: dict[tuple, tuple] = {}

    def _file(self, path: str) -> LiveFile:
        """The live file at ``path``; from plan columns, made on first use (the files whose blobs
        are asked for, not the snapshot's)."""
        if self._plan is None:
            return self._files[path]
        lf = self._made.get(path)
        if lf is None:
            if self._rows is None:
                self._rows = {p: i for i, p in enumerate(self._plan.files.column("path").to_pylist())}
            lf = self._plan.live_file(self.table, self._rows[path])
            self._made.put(path, lf)
        return lf

    def blob(self, i: int) -> IndexBlob:
        """The blob of census row ``i``."""
        if self._columns is None:
            # texts decoded by the cast first: a dictionary column's to_pylist is 25x slower
            self._columns = {name: values_of(self.census[name]) for name in (
                "file_path", "column_name", "index_type", "index_offset", "index_size_in_bytes", "error",
                "index_container_size_in_bytes")}
        c = self._columns
        lf = self._file(c["file_path"][i])
        column, kind, error = c["column_name"][i], c["index_type"][i], c["error"][i]
        embedded = lf.file.embedded_index is not None
        if column is None:  # the container cannot be read
            return IndexBlob(lf, None, None, 0, False, embedded, None, error)
        key = (lf.file.schema_id, column, kind)
        known = self._judged.get(key)
        if known is None:
            known = self._judged[key] = judge_entry(self.table.file_schema(lf), column, kind)
        dtype, _column_error, _kind_error, opts = known
        size, offset = c["index_size_in_bytes"][i], c["index_offset"][i]
        empty = offset == EMPTY_INDEX_FLAG
        return IndexBlob(lf, column, kind, size, empty, embedded, dtype, error, offset,
                         c["index_container_size_in_bytes"][i], IndexEntry(column, kind, offset, size), opts,
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

    def add(self, paths: pa.Array | Iterable[str], rows: np.ndarray | Iterable[int]) -> None:
        """Census rows ``rows`` (of data files ``paths``: an Arrow string array or texts), in census order."""
        self._parts.append((paths if isinstance(paths, pa.Array | pa.ChunkedArray) else list(paths),
                            rows if isinstance(rows, np.ndarray) else list(rows)))
        self._mapped = None

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

    def census_rows(self) -> tuple[pa.Table, list[int]]:
        """The census and each file's row in it, in census order, without making a blob (a caller
        summing census columns over every file makes no object per file)."""
        return self._rows.census, list(self._at.values())

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
