"""A table's global indexes (row-tracking tables): which field and row range each file covers.

The index manifest of a snapshot lists every global index file with its ``_GLOBAL_INDEX``
record (:class:`~.model.GlobalIndexMeta`). BTree and bitmap files are decoded
(:mod:`indexcore.formats.btree_index`, :mod:`indexcore.formats.bitmap_global_index`); a BTree
entry with a ``_SOURCE_META`` is a primary-key BTree index over compacted files; vector and
full-text files are listed with what their metadata holds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyroaring import BitMap64

from indexcore.errors import IndexCoreError
from indexcore.expr import Leaf
from indexcore.formats.base import BitmapResult
from indexcore.formats.bitmap_global_index import BitmapGlobalIndexReader, looks_like_bitmap_global
from indexcore.formats.btree_index import BTreeIndexReader
from indexcore.formats.global_index import SortedIndexFileMeta, key_codec
from indexcore.formats.pk_btree_index import PkBTreeSourceMeta, read_source_meta
from indexcore.formats.registry import BITMAP as FILE_BITMAP
from indexcore.formats.vector_index import FULL_TEXT_INDEX_TYPES, VECTOR_INDEX_TYPES, vector_meta
from indexcore.types import DataType
from indexcore.warehouse.model import DataField, IndexManifestEntry

BTREE = "btree"
BITMAP = "bitmap"
DECODED_GLOBAL_TYPES = (BTREE, BITMAP)


@dataclass(frozen=True)
class GlobalIndexFile:
    """One global index file of a snapshot, resolved against the table schema."""

    entry: IndexManifestEntry
    path: str
    field: DataField | None

    @property
    def meta(self):
        return self.entry.index_file.global_index_meta

    @property
    def index_type(self) -> str:
        return self.entry.index_file.index_type

    @property
    def family(self) -> str:
        """``btree``, ``pk-btree``, ``bitmap``, ``vector``, ``full-text`` or the manifest's type."""
        t = self.index_type
        if t == BTREE:
            return "pk-btree" if self.meta is not None and self.meta.source_meta else BTREE
        if t in VECTOR_INDEX_TYPES or "vector" in t:
            return "vector"
        if t in FULL_TEXT_INDEX_TYPES or "fulltext" in t or "full-text" in t:
            return "full-text"
        return t

    @property
    def row_range(self) -> tuple[int, int] | None:
        m = self.meta
        return None if m is None else (m.row_range_start, m.row_range_end)

    def sorted_meta(self) -> SortedIndexFileMeta | None:
        m = self.meta
        if m is None or not m.index_meta or self.index_type not in DECODED_GLOBAL_TYPES:
            return None
        return SortedIndexFileMeta.deserialize(m.index_meta, self.path)

    def source_meta(self) -> PkBTreeSourceMeta | None:
        m = self.meta
        return read_source_meta(m.source_meta, self.path) if m is not None and m.source_meta else None

    def describe(self) -> dict:
        """What the manifest says about this file (no file read)."""
        f = self.entry.index_file
        out = {"file": f.file_name, "index_type": self.index_type, "family": self.family,
               "partition": self.entry.partition, "bucket": self.entry.bucket, "file_size": f.file_size,
               "row_count": f.row_count,
               "field_id": None if self.meta is None else self.meta.index_field_id,
               "field": None if self.field is None else self.field.name,
               "field_type": None if self.field is None else self.field.type.sql(),
               "row_range": None if self.row_range is None else list(self.row_range)}
        try:
            sm = self.sorted_meta()
        except IndexCoreError:
            sm = None
        if sm is not None and self.field is not None:
            try:
                codec = key_codec(self.field.type)
                out["first_key"] = None if sm.first_key is None else codec.decode(sm.first_key)
                out["last_key"] = None if sm.last_key is None else codec.decode(sm.last_key)
            except IndexCoreError:
                pass
            out["has_nulls"] = sm.has_nulls
        if self.family == "vector" and self.meta is not None:
            out.update(vector_meta(self.meta.index_meta))
        src = self.source_meta() if self.family == "pk-btree" else None
        if src is not None:
            out["source_files"] = [{"file": s.file_name, "rows": s.row_count} for s in src.files]
        return out


def kept_plan(table, snapshot_id: int | None = None):
    """The snapshot's object plan when the table keeps it (explain made it), else its columnar plan:
    both list the index manifest's entries, and the columnar one makes no object per data file."""
    snap = table.snapshot(snapshot_id)
    kept = table.caches.plans.get(snap.id) if snap is not None else None
    return kept if kept is not None else table.plan_columns(snapshot_id)


def global_index_files(table, snapshot_id: int | None = None) -> list[GlobalIndexFile]:
    """Every global index file live in the snapshot (latest by default), from its index manifest:
    the kept plan's entries when the snapshot was planned, else its plan head's (no data file is
    planned: health on Spark checks them on a driver that holds no plan)."""
    snap = table.snapshot(snapshot_id)
    if snap is None:
        return []
    plan = table.caches.plans.peek(snap.id)
    if plan is None:
        plan = table.plan_head(snap.id)
    schema = table.schema(plan.snapshot.schema_id) if plan.snapshot is not None else None
    problems = plan.problems if isinstance(plan.problems, list) else []  # a columnar plan's are kept as made
    out = []
    for e in plan.index_entries:
        gm = e.index_file.global_index_meta
        if gm is None:
            continue
        field = schema.field_by_id(gm.index_field_id) if schema is not None else None
        path = table.index_file_path(e, table.partition_dir(e.partition), problems)
        out.append(GlobalIndexFile(e, path, field))
    return out


class WrappedBitmapReader:
    """A global bitmap index written by older Paimon: a file-index bitmap blob over the row range.

    Its positions are the local row ids; it answers leaves like the other global readers.
    """

    index_type = "bitmap"

    def __init__(self, source, dtype: DataType):
        self.source = source
        self.reader = FILE_BITMAP.open_reader(dtype, source)

    def visit(self, leaf: Leaf) -> BitMap64 | None:
        result = self.reader.visit(leaf)
        if isinstance(result, BitmapResult):
            return BitMap64(result.bitmap)
        return BitMap64() if not result.remain() else None

    @property
    def null_rows(self) -> BitMap64:
        return self.visit(Leaf("isNull", "c")) or BitMap64()

    def cardinalities(self) -> list[tuple[Any, int]]:
        return list(self.reader.summary().get("top_values", []))

    def summary(self) -> dict:
        return {**self.reader.summary(), "layout": "file-index bitmap (older Paimon global bitmap index)"}


def open_reader(table, gif: GlobalIndexFile):
    """A reader for a BTree or bitmap global index file; None for kinds indexcore does not search."""
    if gif.field is None or gif.index_type not in DECODED_GLOBAL_TYPES:
        return None
    source = table.storage.open(gif.path)
    if gif.index_type == BTREE:
        return BTreeIndexReader(source, gif.field.type, gif.sorted_meta())
    tail = source.read(max(0, source.size - 8), min(8, source.size), "file tail")
    if looks_like_bitmap_global(tail):
        return BitmapGlobalIndexReader(source, gif.field.type, gif.sorted_meta())
    return WrappedBitmapReader(source, gif.field.type)
