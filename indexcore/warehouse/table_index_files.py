"""A table's table-level index files: deletion vectors and Paimon's dynamic-bucket hash index."""

from __future__ import annotations

from indexcore.formats.deletion_vector import read_deletion_vector
from indexcore.formats.hash_index import read_hash_index
from indexcore.warehouse.model import (
    IndexManifestEntry,
    LiveFile,
)


class TableIndexFiles:
    """Deletion-vector and hash-index reads of :class:`~indexcore.warehouse.table.Table`."""

    def deletion_vector(self, live_file: LiveFile):
        """The file's deletion vector (decoded), or None when it has none."""
        dv = live_file.deletion_vector
        if dv is None or live_file.dv_file_path is None:
            return None
        return self.read_dv_range(dv, live_file.dv_file_path, live_file.bitmap64)

    def read_dv_range(self, dv_range, path: str, bitmap64: bool | None = None):
        """The deletion vector an index manifest's DV range points at in the DV file ``path``."""
        return read_deletion_vector(self.storage.open(path), dv_range.offset, dv_range.length, bitmap64)

    def hash_index(self, entry: IndexManifestEntry):
        """The hashes of one HASH index file (Paimon's dynamic-bucket index)."""
        path = self.index_file_path(entry, self.partition_dir(entry.partition))
        return read_hash_index(self.storage.open(path))

