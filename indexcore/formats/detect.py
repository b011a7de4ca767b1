"""Which Paimon index format a file holds, decided by its own structure (magic numbers, footers).

Each check reads a few bytes at the head or the tail; a format without any structure of its
own (the dynamic-bucket hash index: bare 4-byte ints) is only ever a guess, and says so.
"""

from __future__ import annotations

from dataclasses import dataclass

from indexcore.formats.bitmap_global_index import looks_like_bitmap_global
from indexcore.formats.btree_index import looks_like_btree
from indexcore.formats.container import MAGIC as CONTAINER_MAGIC
from indexcore.formats.deletion_vector import MAGIC_32, MAGIC_64
from indexcore.formats.ftindex import FTINDEX_MAGIC
from indexcore.formats.vector_index import VINDEX_MAGICS, looks_like_tantivy
from indexcore.io import ByteSource

_DV_MAGICS = (MAGIC_32.to_bytes(4, "big"), MAGIC_64.to_bytes(4, "little"))

FILE_INDEX = "file-index"
DELETION_VECTORS = "deletion-vectors"
BTREE = "btree"
BITMAP_GLOBAL = "bitmap-global-index"
VINDEX = "vector-index"
TANTIVY = "tantivy-fulltext"
HASH_INDEX = "hash-index"
UNKNOWN = "unknown"


@dataclass(frozen=True)
class Detection:
    kind: str
    detected_by: str
    certain: bool = True


def detect(source: ByteSource) -> Detection:
    """The format of ``source`` by structure; ``UNKNOWN`` when nothing matches."""
    size = source.size
    if size == 0:
        return Detection(UNKNOWN, "empty file", False)
    head = source.read(0, min(size, 9), "file head")
    tail = source.read(size - min(size, 8), min(size, 8), "file tail")
    if len(head) >= 8 and int.from_bytes(head[:8], "big", signed=True) == CONTAINER_MAGIC:
        return Detection(FILE_INDEX, f"head magic {CONTAINER_MAGIC}")
    if head[:1] == b"\x01" and (size == 1 or (len(head) >= 9 and head[5:9] in _DV_MAGICS)):
        return Detection(DELETION_VECTORS, "version byte 1 then a deletion-vector magic")
    if size >= 52 and looks_like_btree(tail):
        return Detection(BTREE, "footer magic ITBP (0x50425449), version 1")
    if size >= 48 and looks_like_bitmap_global(tail):
        return Detection(BITMAP_GLOBAL, "footer magic BGIX (0x42474958), version 1")
    if head[:4] in VINDEX_MAGICS:
        return Detection(VINDEX, f"head magic {head[:4].decode()} (paimon-vindex {VINDEX_MAGICS[head[:4]]})")
    if head[:8] == FTINDEX_MAGIC:
        return Detection(TANTIVY, "head magic PFTIDX01 (paimon-ftindex: a tantivy index with a JSON header)")
    if size >= 16 and looks_like_tantivy(source):
        return Detection(TANTIVY, "a tantivy directory archive whose entries fill the file exactly")
    if size % 4 == 0:
        return Detection(HASH_INDEX, "no structure matched; a hash index is bare 4-byte ints, so this is a "
                                     "guess (inside a warehouse the index manifest decides)", False)
    return Detection(UNKNOWN, "no magic or footer of a Paimon index format matched", False)
