"""Paimon's index-manifest index types that are not global indexes (``IndexFileMeta.indexType``)."""

from __future__ import annotations

#: deletion vectors (``DeletionVectorsIndexFile.DELETION_VECTORS_INDEX``)
DELETION_VECTORS = "DELETION_VECTORS"
#: the dynamic-bucket key-hash index (``HashIndexFile.HASH_INDEX``)
HASH = "HASH"
