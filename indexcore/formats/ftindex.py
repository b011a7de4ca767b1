"""Full-text global index files opened and searched with ``paimon-ftindex`` (Paimon's full-text library).

A paimon-ftindex file is ``PFTIDX01``, a big-endian int version, a big-endian int length and
that many bytes of JSON (the tokenizer config, ``document_count``, the tantivy version and the
embedded tantivy files with their offsets), then the files. The header is read here without the
library (so the documents show even when it is absent); searching needs it, every byte read
through our storage. The older Java ``tantivy-fulltext`` archive (a file count, then name/length/
data entries, :func:`indexcore.formats.vector_index.read_tantivy_archive`) is another layout: it
stays listed. Row ids are local to the file's row range. Optional: ``pip install "indexcore[fulltext]"``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from indexcore.errors import CorruptFileError, IndexCoreError, UnsupportedError
from indexcore.formats.native import SourceReads, missing_package
from indexcore.io import ByteSource

FTINDEX_MAGIC = b"PFTIDX01"
FTINDEX_PACKAGE = "paimon-ftindex"
FTINDEX_EXTRA = "fulltext"
_MAX_HEADER = 64 << 20


@dataclass(frozen=True)
class FullTextHeader:
    """What a paimon-ftindex file says about itself."""

    version: int
    documents: int
    text_fields: tuple[str, ...]
    tokenizer: dict
    tantivy_version: str | None
    files: int
    header_bytes: int


def is_ftindex(head: bytes) -> bool:
    return head[:8] == FTINDEX_MAGIC


def read_ftindex_header(source: ByteSource) -> FullTextHeader:
    name = source.name
    if source.size < 16:
        raise CorruptFileError(f"{source.size} bytes cannot hold a paimon-ftindex header", file=name,
                               structure="ftindex header", offset=0)
    head = source.read(0, 16, "ftindex header")
    if not is_ftindex(head):
        raise UnsupportedError("not a paimon-ftindex file (no PFTIDX01 magic): this full-text index layout "
                               "is listed, not opened", file=name, structure="ftindex header", offset=0)
    version = int.from_bytes(head[8:12], "big")
    length = int.from_bytes(head[12:16], "big")
    if not 0 < length <= min(_MAX_HEADER, source.size - 16):
        raise CorruptFileError(f"impossible header length {length}", file=name, structure="ftindex header",
                               offset=12)
    try:
        doc = json.loads(source.read(16, length, "ftindex header"))
        meta = doc["metadata"]
        config = meta.get("config", {})
        documents = int(meta["document_count"])
        files = len(doc.get("files", []))
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise CorruptFileError(f"header JSON does not hold the index metadata: {exc}", file=name,
                               structure="ftindex header", offset=16) from None
    return FullTextHeader(version, documents, tuple(config.get("text_fields", ())), dict(config.get("tokenizer", {})),
                          meta.get("tantivy_version"), files, 16 + length)


def _ftindex():
    try:
        import paimon_ftindex  # optional native library (paimon-ftindex): only for full-text indexes
    except ImportError:
        return None
    return paimon_ftindex


def ftindex_available() -> bool:
    return _ftindex() is not None


def term_query(text: str) -> str:
    """The library's JSON query for ``text``: a ``match`` of its words (any of them), or ``text``
    itself when it is already a JSON query (``{"match_phrase": {"terms": "..."}}`` ...)."""
    stripped = text.strip()
    if stripped.startswith("{"):
        return stripped
    return json.dumps({"match": {"terms": stripped}})


class FullTextIndex:
    """One opened paimon-ftindex file: its header and a search returning (local row id, score)."""

    def __init__(self, source: ByteSource):
        self.source = source
        self.header = read_ftindex_header(source)
        lib = _ftindex()
        if lib is None:
            raise missing_package(FTINDEX_PACKAGE, FTINDEX_EXTRA, "searching a full-text index", source.name)
        self._input = SourceReads(source, "ftindex")
        try:
            self._reader = lib.FullTextIndexReader(self._input)
        except RuntimeError as exc:
            raise self._error("open", exc) from exc

    def _error(self, doing: str, exc: Exception) -> IndexCoreError:
        if self._input.error is not None:
            return self._input.error
        return CorruptFileError(f"paimon-ftindex cannot {doing}: {exc}", file=self.source.name, structure="ftindex")

    def search(self, text: str, limit: int | None = None) -> list[tuple[int, float]]:
        """Matches of ``text`` (see :func:`term_query`), best first; every match unless ``limit``."""
        limit = self.header.documents if limit is None else limit
        if limit < 1:
            return []
        try:
            ids, scores = self._reader.search(term_query(text), limit)
        except RuntimeError as exc:
            message = str(exc)
            if "json" in message.lower() or "query" in message.lower():
                raise IndexCoreError(f"full-text query not understood: {message}") from exc
            raise self._error("search", exc) from exc
        return [(int(i), float(s)) for i, s in zip(ids, scores, strict=True)]

    def read_metrics(self) -> dict:
        m = self._reader.read_metrics()
        return {"pread_calls": m.pread_calls, "pread_bytes": m.pread_bytes}

    def close(self) -> None:
        self._reader.close()
