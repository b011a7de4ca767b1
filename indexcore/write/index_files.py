"""The index files a commit writes per bucket: deletion vectors and the dynamic-bucket hash index;
and global index files built elsewhere (paimon-vindex, paimon-ftindex), registered as Paimon does.

A primary-key table with deletion vectors marks older copies of the keys a batch touches
(:meth:`IndexFileWriter._mark_deleted`) and writes one deletion-vector index file per touched
bucket; a dynamic-bucket table keeps one HASH index file per bucket with every key hash it
holds. :class:`BucketState` is what the writer remembers about one partition/bucket.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
from pyroaring import BitMap

from indexcore.formats.binary_row import row_key_hashes, serialize_binary_row
from indexcore.formats.deletion_vector import write_deletion_vector_file
from indexcore.formats.hash_index import write_hash_index
from indexcore.formats.vindex import VINDEX_INDEX_TYPES
from indexcore.paimon.index_types import DELETION_VECTORS, HASH
from indexcore.warehouse.model import DataFileMeta, DeletionVectorRange, IndexFileMeta
from indexcore.write.datafile import WrittenFile
from indexcore.write.layout import field_types, write_bytes


@dataclass
class BucketState:
    """What the writer remembers about one partition/bucket: live files, next sequence number,
    where each key lives, and the bucket's deletion vectors and index files. A writer that
    does not keep file metadata (an append table written in bulk) only counts its files
    (``counted``), so its memory does not grow with them."""

    files: dict[str, DataFileMeta] = field(default_factory=dict)
    counted: int = 0
    next_seq: int = 0
    keys: dict[tuple, tuple[str, int]] = field(default_factory=dict)
    dvs: dict[str, BitMap] = field(default_factory=dict)
    dv_index: IndexFileMeta | None = None
    hashes: np.ndarray = field(default_factory=lambda: np.empty(0, np.int32))  # the HASH index, in file order
    hash_index: IndexFileMeta | None = None


class IndexFileWriter:
    """The :class:`~indexcore.write.table.TableWriter`'s index-file writing (a mixin: it uses the
    writer's ``schema``, ``table_path``, ``bitmap64``, ``_buckets`` and ``_namer``)."""

    def _mark_deleted(self, b: BucketState, keys: Iterable[tuple]) -> bool:
        changed = False
        for k in keys:
            hit = b.keys.get(k)
            if hit is not None and hit[0] in b.files:
                b.dvs.setdefault(hit[0], BitMap()).add(hit[1])
                changed = True
        return changed

    def _write_dv_index(self, key: tuple) -> tuple[str, IndexFileMeta | None, IndexFileMeta | None]:
        b = self._buckets[key]
        dvs = [(name, bm) for name, bm in sorted(b.dvs.items()) if name in b.files and len(bm)]
        old = b.dv_index
        if not dvs:
            b.dv_index = None
            return (DELETION_VECTORS, old, None)
        data, metas = write_deletion_vector_file(dvs, bitmap64=self.bitmap64)
        name = self._namer.next("index")
        write_bytes(self._index_path(name, key), data)
        ranges = tuple(DeletionVectorRange(m.data_file, m.offset, m.length, m.cardinality) for m in metas)
        b.dv_index = IndexFileMeta(DELETION_VECTORS, name, len(data), len(ranges), ranges)
        return (DELETION_VECTORS, old, b.dv_index)

    def _update_hash_index(self, level0: list[WrittenFile]) -> dict:
        changes = {}
        types = field_types(self.schema, self.schema.trimmed_primary_keys)
        for w in level0:
            b = self._buckets[(w.partition, w.bucket)]
            hashes = np.asarray(row_key_hashes(w.keys or (), types), np.int64)
            first = np.sort(np.unique(hashes, return_index=True)[1])  # distinct, in file order
            new = hashes[first][~np.isin(hashes[first], b.hashes)]
            if not len(new) and b.hash_index is not None:
                continue
            b.hashes = np.concatenate([b.hashes, new.astype(np.int32)])
            data = write_hash_index(b.hashes)
            name = self._namer.next("index")
            write_bytes(self._index_path(name, (w.partition, w.bucket)), data)
            old, b.hash_index = b.hash_index, IndexFileMeta(HASH, name, len(data), len(b.hashes))
            changes[(w.partition, w.bucket)] = (HASH, old, b.hash_index)
        return changes

    def add_global_index(self, index_type: str, data: bytes, field: str, row_range: tuple[int, int],
                         index_meta: bytes | None = b"{}", partition: tuple = (), bucket: int = 0) -> int:
        """Register one global index file as Paimon's global-index build commits it (pypaimon's
        ``create_global_index``): the bytes under ``index/`` as ``<prefix>-global-index-<uuid>.index``
        (prefix ``vector-<type>`` for paimon-vindex kinds, else the type), an index-manifest ADD
        entry of type ``index_type`` whose ``_GLOBAL_INDEX`` record holds the row range (inclusive,
        the file's ids are local to it), the field id and the meta; in a new APPEND snapshot
        without data files. Returns the snapshot id."""
        lo, hi = row_range
        if not self.row_tracking or lo < 0 or hi < lo:
            raise ValueError(f"a global index needs row tracking and a row range, got {row_range}")
        prefix = f"vector-{index_type}" if index_type in VINDEX_INDEX_TYPES else index_type
        name = f"{prefix}-global-index-{self._namer.uuid()}.index"
        write_bytes(self._index_path(name, (partition, bucket)), data)
        self._global_indexes.append({
            "_VERSION": 1, "_KIND": 0, "_PARTITION": serialize_binary_row(partition, self._partition_types()),
            "_BUCKET": bucket, "_INDEX_TYPE": index_type, "_FILE_NAME": name, "_FILE_SIZE": len(data),
            "_ROW_COUNT": hi - lo + 1, "_DELETIONS_VECTORS_RANGES": None, "_EXTERNAL_PATH": None,
            "_GLOBAL_INDEX": {"_ROW_RANGE_START": lo, "_ROW_RANGE_END": hi,
                              "_INDEX_FIELD_ID": self.schema.field(field).id, "_EXTRA_FIELD_IDS": None,
                              "_INDEX_META": index_meta}})
        self.commit_index += 1
        return self._snapshot([], "APPEND", {"global-index": name})

    def _index_path(self, name: str, key: tuple) -> str:
        """Where a bucket's DV or hash index file goes (``index/`` or its bucket folder)."""
        layout = self.schema.path_layout(self.table_path)
        return layout.index_file_path(name, layout.partition_dir(key[0]), key[1])
