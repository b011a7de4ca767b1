"""Vector (ivf-flat and the other vindex kinds, lumina) and full-text (tantivy) global index files.

indexcore does not search these (they need native libraries); it recognizes them by their own
structure and lists what they hold:

- vindex files (written by paimon-vindex) start with a magic per kind (:data:`VINDEX_MAGICS`:
  ``LFVI`` ivf-flat, ``QPVI`` ivf-pq, ``QSVI`` ivf-sq, ``QRVI`` ivf-rq, ``DANN`` diskann); an
  ``LFVI`` head goes on with little-endian ints: format version, vector dimension, two ints not
  interpreted here, and the vector count (:mod:`indexcore.formats.vindex` opens them all).
- tantivy full-text files are an archive of the index directory: a big-endian int file count,
  then per file ``int name length | UTF-8 name | long data length | data``. Tantivy's
  ``meta.json`` inside names the tantivy version and the segments.
- lumina files carry no magic of their own; the index manifest's JSON meta says what they are
  (``index.dimension``, ``index.type``, ``distance.metric``).
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass

from indexcore.errors import CorruptFileError
from indexcore.io import ByteSource

VINDEX_MAGIC = b"LFVI"
#: the head magic of each kind paimon-vindex writes (its first four bytes)
VINDEX_MAGICS = {VINDEX_MAGIC: "ivf_flat", b"QPVI": "ivf_pq", b"QSVI": "ivf_sq", b"QRVI": "ivf_rq",
                 b"DANN": "diskann"}
VECTOR_INDEX_TYPES = ("ivf-flat", "ivf-pq", "ivf-sq", "ivf-rq", "diskann", "lumina-vector-ann", "faiss-vector-ann")
FULL_TEXT_INDEX_TYPES = ("tantivy-fulltext", "full-text")
_MAX_ARCHIVE_FILES = 100_000


@dataclass(frozen=True)
class VindexHeader:
    version: int
    dimension: int
    vector_count: int


def read_vindex_header(source: ByteSource) -> VindexHeader:
    if source.size < 24:
        raise CorruptFileError(f"{source.size} bytes cannot hold a vindex header", file=source.name,
                               structure="vindex header", offset=0)
    head = source.read(0, 24, "vindex header")
    if head[:4] != VINDEX_MAGIC:
        raise CorruptFileError("no LFVI magic: not a vindex vector index", file=source.name,
                               structure="vindex header", offset=0)
    version, dimension, _, _, count = struct.unpack_from("<iiiii", head, 4)
    if dimension <= 0 or count < 0:
        raise CorruptFileError(f"impossible dimension {dimension} or vector count {count}", file=source.name,
                               structure="vindex header", offset=8)
    return VindexHeader(version, dimension, count)


@dataclass(frozen=True)
class ArchiveFile:
    name: str
    offset: int
    length: int


@dataclass(frozen=True)
class TantivyArchive:
    files: tuple[ArchiveFile, ...]
    meta: dict | None  # tantivy's meta.json

    def summary(self) -> dict:
        meta = self.meta or {}
        version = meta.get("index_format_version") or meta.get("version")
        return {"files": len(self.files), "segments": len(meta.get("segments", [])),
                "tantivy_version": version, "opstamp": meta.get("opstamp"),
                "bytes": sum(f.length for f in self.files)}


def read_tantivy_archive(source: ByteSource) -> TantivyArchive:
    """Walk the archive's entries; they must fill the file exactly."""
    name = source.name
    if source.size < 4:
        raise CorruptFileError("too short for a tantivy archive", file=name, structure="tantivy archive", offset=0)
    count = int.from_bytes(source.read(0, 4, "tantivy archive"), "big", signed=True)
    if not 0 < count <= _MAX_ARCHIVE_FILES:
        raise CorruptFileError(f"impossible file count {count}", file=name, structure="tantivy archive", offset=0)
    pos, files, meta = 4, [], None
    for _ in range(count):
        n = int.from_bytes(source.read(pos, 4, "tantivy archive entry"), "big", signed=True)
        if not 0 < n <= 4096:
            raise CorruptFileError(f"impossible name length {n}", file=name, structure="tantivy archive entry",
                                   offset=pos)
        raw_name = source.read(pos + 4, n, "tantivy archive entry")
        length = int.from_bytes(source.read(pos + 4 + n, 8, "tantivy archive entry"), "big", signed=True)
        start = pos + 12 + n
        if length < 0 or start + length > source.size:
            raise CorruptFileError(f"entry of {length} bytes runs past the file", file=name,
                                   structure="tantivy archive entry", offset=pos + 4 + n)
        try:
            entry_name = raw_name.decode("utf-8")
        except UnicodeDecodeError:
            raise CorruptFileError("entry name is not UTF-8", file=name, structure="tantivy archive entry",
                                   offset=pos + 4) from None
        files.append(ArchiveFile(entry_name, start, length))
        if entry_name == "meta.json":
            try:
                meta = json.loads(source.read(start, length, "tantivy meta.json"))
            except ValueError:
                meta = None
        pos = start + length
    if pos != source.size:
        raise CorruptFileError(f"{source.size - pos} bytes after the last archive entry", file=name,
                               structure="tantivy archive", offset=pos)
    return TantivyArchive(tuple(files), meta)


def looks_like_tantivy(source: ByteSource) -> bool:
    try:
        read_tantivy_archive(source)
    except CorruptFileError:
        return False
    return True


def vector_meta(index_meta: bytes | None) -> dict:
    """What a vector index's manifest meta (JSON options) says: dimension, metric, kind."""
    if not index_meta:
        return {}
    try:
        options = json.loads(index_meta)
    except ValueError:
        return {}
    if not isinstance(options, dict):
        return {}
    out = {}
    for key, label in (("index.dimension", "dimension"), ("distance.metric", "metric"), ("index.type", "algorithm"),
                       ("encoding.type", "encoding")):
        if key in options:
            out[label] = int(options[key]) if label == "dimension" and str(options[key]).isdigit() else options[key]
    return out
