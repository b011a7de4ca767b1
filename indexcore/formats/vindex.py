"""Vector global index files opened and searched with ``paimon-vindex`` (Paimon's vector index library).

Paimon writes its ``ivf-flat``, ``ivf-pq``, ``ivf-sq``, ``ivf-rq`` and ``diskann`` global indexes
with paimon-vindex: those files start with the kind's magic (``LFVI``, ``QPVI``, ``QSVI``,
``QRVI``, ``DANN``: :data:`~indexcore.formats.vector_index.VINDEX_MAGICS`) and are opened here, every byte
read through our storage (the library's ``pread_many`` callback becomes ranged reads of a
:class:`~indexcore.io.ByteSource`). Lumina (``lumina-vector-ann``) and faiss files are another
library's format: they stay listed (:mod:`indexcore.formats.vector_index`), never opened.

The ids a file returns are local to its row range (``row id - _ROW_RANGE_START``), as with every
global index. The package is optional (``pip install "indexcore[vector]"``).
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from indexcore.errors import CorruptFileError, IndexCoreError, UnsupportedError
from indexcore.formats.native import SourceReads, missing_package
from indexcore.formats.vector_index import VINDEX_MAGICS
from indexcore.io import ByteSource

#: Paimon's index types whose files paimon-vindex writes (named ``vector-<type>-global-index-<uuid>.index``)
VINDEX_INDEX_TYPES = ("ivf-flat", "ivf-pq", "ivf-sq", "ivf-rq", "diskann")
VINDEX_PACKAGE = "paimon-vindex"
VINDEX_EXTRA = "vector"


@dataclass(frozen=True)
class VectorIndexInfo:
    """What a vindex file says about itself (the library's metadata)."""

    index_type: str  # ivf_flat, ivf_pq, ivf_sq, ivf_rq, diskann
    dimension: int
    nlist: int  # inverted lists (0 for DiskANN)
    metric: str  # l2, inner_product, cosine
    total_vectors: int
    pq_m: int | None = None
    pq_bits: int | None = None

    @property
    def width_name(self) -> str:
        """The search width's name: lists probed (IVF) or the candidate list (DiskANN)."""
        return "l_search" if self.index_type == "diskann" else "nprobe"

    @property
    def full_width(self) -> int:
        """The width at which a search looks at everything it can: every list, or every vector."""
        return max(1, self.total_vectors if self.index_type == "diskann" else self.nlist)


def is_vindex(head: bytes) -> bool:
    return head[:4] in VINDEX_MAGICS


def _vindex():
    try:
        import paimon_vindex  # optional native library (paimon-vindex): only for vector indexes
    except ImportError:
        return None
    return paimon_vindex


def vindex_available() -> bool:
    return _vindex() is not None


class VectorIndex:
    """One opened vindex file: its metadata, k-nearest search at a chosen width, list probing."""

    def __init__(self, source: ByteSource):
        self.source = source
        lib = _vindex()
        if lib is None:
            raise missing_package(VINDEX_PACKAGE, VINDEX_EXTRA, "searching a vector index", source.name)
        self._lib = lib
        if not is_vindex(source.read(0, min(4, source.size), "vindex header")):
            raise UnsupportedError("not a paimon-vindex file (no LFVI/QPVI/QSVI/QRVI/DANN magic): this "
                                   "vector index kind is listed, not opened", file=source.name, structure="vindex header", offset=0)
        self._input = SourceReads(source, "vindex")
        with self._errors("open"):
            self._reader = lib.VectorIndexReader(self._input)
            m = self._reader.metadata()
        self.info = VectorIndexInfo(m.index_type, m.dimension, m.nlist, m.metric, m.total_vectors, m.pq_m, m.pq_bits)

    @contextmanager
    def _errors(self, doing: str):
        """The library's failures as our errors: a storage error our callback met, else corruption."""
        try:
            yield
        except (RuntimeError, ValueError, OSError) as exc:
            if self._input.error is not None:
                raise self._input.error from exc
            raise CorruptFileError(f"paimon-vindex cannot {doing}: {exc}", file=self.source.name,
                                   structure="vindex") from exc

    def _params(self, k: int, width: int | None):
        sp = self._lib.SearchParams
        if width is None:
            return sp.automatic(k)
        width = max(1, min(int(width), self.info.full_width))
        return sp.diskann(k, max(width, k)) if self.info.index_type == "diskann" else sp.ivf(k, width)

    def query_matrix(self, queries) -> np.ndarray:
        q = np.asarray(queries, dtype=np.float32)
        q = q.reshape(1, -1) if q.ndim == 1 else q
        if q.ndim != 2 or q.shape[1] != self.info.dimension:
            raise IndexCoreError(f"a query vector must have {self.info.dimension} values, got shape "
                                 f"{tuple(np.shape(queries))}", file=self.source.name)
        return q

    def search(self, queries, k: int, width: int | None = None) -> list[list[tuple[int, float]]]:
        """Per query, up to ``k`` (local id, distance) nearest first; ``width`` None = the library's choice."""
        q = self.query_matrix(queries)
        if k < 1:
            raise IndexCoreError(f"k must be at least 1, got {k}")
        with self._errors("search"):
            ids, dist = self._reader.search_batch(q, self._params(k, width))
        return [[(int(i), float(d)) for i, d in zip(row_ids, row_d, strict=True) if i >= 0]
                for row_ids, row_d in zip(ids, dist, strict=True)]

    def probe_lists(self, vectors: np.ndarray, ids: np.ndarray) -> tuple[list[int], int]:
        """IVF list sizes, found by probing: a search for a stored vector with one list probed and
        ``k`` = every vector returns the whole list that vector was assigned to (its nearest
        centroid's). Returns the sizes of the lists found (largest first) and how many vectors no
        probe placed (0 when every vector was found in the list its own query probed)."""
        if self.info.index_type == "diskann" or self.info.nlist < 1:
            return [], 0
        k = max(1, self.info.total_vectors)
        sizes: list[int] = []
        unplaced = 0
        pending = dict(zip((int(i) for i in ids), range(len(ids)), strict=True))
        while pending and len(sizes) < self.info.nlist:
            vid, row = next(iter(pending.items()))
            members = [i for i, _ in self.search(vectors[row], k, width=1)[0]]
            if vid not in members:
                unplaced += 1
                pending.pop(vid)
                continue
            sizes.append(len(members))
            for m in members:
                pending.pop(m, None)
        return sorted(sizes, reverse=True), unplaced + len(pending)

    def close(self) -> None:
        self._reader.close()


def exact_search(vectors: np.ndarray, queries: np.ndarray, k: int, metric: str) -> np.ndarray:
    """Row indexes of the ``k`` nearest of ``vectors`` per query, by brute force (ties by index);
    queries go in blocks so a block's distance matrix stays near 4 million entries."""
    v = np.asarray(vectors, dtype=np.float64)
    q = np.asarray(queries, dtype=np.float64)
    if metric not in ("l2", "inner_product", "cosine"):
        raise UnsupportedError(f"exact search does not know the metric {metric!r}")
    if metric == "cosine":
        v = v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-30)
        q = q / np.maximum(np.linalg.norm(q, axis=1, keepdims=True), 1e-30)
    k = min(k, v.shape[0])
    norms = (v * v).sum(1)
    block = max(1, (4 << 20) // max(1, v.shape[0]))
    out = []
    for start in range(0, q.shape[0], block):
        qb = q[start:start + block]
        d = (qb * qb).sum(1)[:, None] - 2 * qb @ v.T + norms[None, :] if metric == "l2" else -(qb @ v.T)
        out.append(np.argsort(d, axis=1, kind="stable")[:, :k])
    return np.concatenate(out) if out else np.zeros((0, k), np.int64)
