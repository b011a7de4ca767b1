"""Vector global indexes opened with paimon-vindex: what each holds (``$vector_indexes``), a k-nearest
search returning the table's rows, and recall@k against exact search over the table's vectors.

Covered: the kinds Paimon writes with paimon-vindex (``ivf-flat``, ``ivf-pq``, ``ivf-sq``,
``ivf-rq``, ``diskann``; files with a paimon-vindex magic). Lumina and faiss files stay listed with
what the index manifest says. Ids in a file are local to its row range; results are shown as
the table's row ids (``_ROW_ID``).

List sizes come from probing (:meth:`~indexcore.formats.vindex.VectorIndex.probe_lists`), since
the library exposes no list table: one search per list, with the table's own vectors as queries.
Recall is measured on a seeded random sample of the table's vectors as queries (the sample size
is in every row, with a 95% normal interval over the per-query recalls); the exact answer is a
brute-force search over the vectors of the file's row range, which is what the index holds.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pyarrow as pa

from indexcore.config import settings, variable
from indexcore.errors import IndexCoreError
from indexcore.formats.vindex import VectorIndex, exact_search
from indexcore.views import register_view
from indexcore.views.common import from_rows
from indexcore.warehouse.data import ROW_ID, read_with_row_ids
from indexcore.warehouse.global_index import GlobalIndexFile, global_index_files

DEFAULT_SAMPLE = 100
DEFAULT_TARGET = 0.95


def vector_files(table, snapshot_id: int | None = None, field: str | None = None) -> list[GlobalIndexFile]:
    """The snapshot's vector global index files (of ``field`` when given)."""
    return [g for g in global_index_files(table, snapshot_id)
            if g.family == "vector" and g.field is not None and (field is None or g.field.name == field)]


def open_vector(table, gif: GlobalIndexFile) -> VectorIndex:
    """The file opened with paimon-vindex (UnsupportedError for kinds it does not read)."""
    return VectorIndex(table.storage.open(gif.path))


def table_vectors(table, field: str, snapshot_id: int | None = None,
                  row_ids: set[int] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(row ids, vectors)`` of the table's non-null vectors in ``field`` (float32 matrix)."""
    t = read_with_row_ids(table, snapshot_id, [field], row_ids)
    values, ids = t.column(field).to_pylist(), t.column(ROW_ID).to_pylist()
    keep = [i for i, v in enumerate(values) if v is not None]
    if not keep:
        return np.zeros(0, np.int64), np.zeros((0, 0), np.float32)
    lengths = {len(values[i]) for i in keep}
    if len(lengths) != 1:
        raise IndexCoreError(f"vectors of {field!r} have different lengths {sorted(lengths)}")
    return np.asarray([ids[i] for i in keep], np.int64), np.asarray([values[i] for i in keep], np.float32)


def _in_range(ids: np.ndarray, gif: GlobalIndexFile) -> np.ndarray:
    lo, hi = gif.row_range
    return (ids >= lo) & (ids <= hi)


def vector_index_rows(table, snapshot_id: int | None = None, lists: bool = True) -> list[dict]:
    """One row per vector index file: what the library reads in it, its lists, and how much of
    the table's row ids its range covers (the ``$vector_indexes`` view's rows)."""
    files = vector_files(table, snapshot_id)
    plan = table.plan(snapshot_id)
    table_rows = sum(lf.file.row_count for lf in plan.files if lf.file.first_row_id is not None)
    vectors: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    probe_limit = settings().vector_probe_vectors
    rows = []
    for gif in files:
        d = gif.describe()
        lo, hi = gif.row_range or (None, None)
        row = {"file": d["file"], "index_type": gif.index_type, "field": gif.field.name, "row_range_start": lo,
               "row_range_end": hi, "status": "listed", "kind": d.get("algorithm"), "metric": d.get("metric"),
               "dimension": d.get("dimension"), "vectors": None, "lists": None, "lists_found": None,
               "list_min": None, "list_max": None, "list_imbalance": None, "list_sizes": None, "unplaced": None,
               "rows_in_range": None, "table_rows": table_rows, "coverage": None, "problem": None}
        if lo is not None:
            live = sum(max(0, min(hi, lf.file.first_row_id + lf.file.row_count - 1) - max(lo, lf.file.first_row_id) + 1)
                       for lf in plan.files if lf.file.first_row_id is not None)
            row["rows_in_range"] = live
            row["coverage"] = live / table_rows if table_rows else None
        try:
            index = open_vector(table, gif)
        except IndexCoreError as exc:
            row["problem"] = exc.message
            rows.append(row)
            continue
        info = index.info
        row.update(status="opened", kind=info.index_type, metric=info.metric, dimension=info.dimension,
                   vectors=info.total_vectors, lists=info.nlist or None)
        if lists and info.nlist and info.total_vectors > probe_limit:
            row["problem"] = (f"list sizes not probed: {info.total_vectors:,} vectors, over "
                              f"{variable('vector_probe_vectors')} ({probe_limit:,})")
        elif lists and info.nlist and gif.row_range is not None:
            try:
                if gif.field.name not in vectors:
                    vectors[gif.field.name] = table_vectors(table, gif.field.name, snapshot_id)
                ids, vecs = vectors[gif.field.name]
                inside = _in_range(ids, gif)
                sizes, unplaced = index.probe_lists(vecs[inside], ids[inside] - lo)
                row.update(lists_found=len(sizes), list_min=min(sizes, default=None),
                           list_max=max(sizes, default=None), list_sizes=sizes, unplaced=unplaced,
                           list_imbalance=max(sizes) * len(sizes) / sum(sizes) if sizes else None)
            except IndexCoreError as exc:
                row["problem"] = exc.message
        rows.append(row)
    return rows


VECTOR_INDEXES = pa.schema([
    ("file", pa.string()), ("index_type", pa.string()), ("field", pa.string()), ("row_range_start", pa.int64()),
    ("row_range_end", pa.int64()), ("status", pa.string()), ("kind", pa.string()), ("metric", pa.string()),
    ("dimension", pa.int64()), ("vectors", pa.int64()), ("lists", pa.int64()), ("lists_found", pa.int64()),
    ("list_min", pa.int64()), ("list_max", pa.int64()), ("list_imbalance", pa.float64()),
    ("list_sizes", pa.list_(pa.int64())),
    ("unplaced", pa.int64()), ("rows_in_range", pa.int64()), ("table_rows", pa.int64()),
    ("coverage", pa.float64()), ("problem", pa.string()),
])


def vector_indexes(table, snapshot_id: int | None = None, lists: bool = True) -> pa.Table:
    """``$vector_indexes``: per vector index file, type, dimension, vectors, lists and their sizes
    (``list_imbalance``: the largest list over the mean, 1.0 when balanced), and the share of the
    table's row ids its range covers."""
    return from_rows(vector_index_rows(table, snapshot_id, lists), VECTOR_INDEXES)


def parse_vector(text: str) -> list[float]:
    """A query vector typed as a JSON list of numbers (the CLI's ``--vector``, the page's box)."""
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if not isinstance(value, list) or not value or not all(isinstance(v, int | float) for v in value):
        raise IndexCoreError(f"a query vector must be a JSON list of numbers, got {text!r}")
    return [float(v) for v in value]


def _opened(table, snapshot_id, field) -> list[tuple[GlobalIndexFile, VectorIndex]]:
    files = vector_files(table, snapshot_id, field)
    if not files:
        raise IndexCoreError("the table has no vector global index" + (f" on {field!r}" if field else ""))
    out, problems = [], []
    for gif in files:
        try:
            out.append((gif, open_vector(table, gif)))
        except IndexCoreError as exc:
            problems.append(f"{gif.entry.index_file.file_name}: {exc.message}")
    if not out:
        raise IndexCoreError("no vector index could be opened: " + "; ".join(problems[:3]))
    return out


def search_vectors(table, query, k: int = 10, width: int | None = None, snapshot_id: int | None = None,
                   field: str | None = None) -> pa.Table:
    """The ``k`` rows nearest to ``query`` by the table's vector indexes: ``rank``, ``_ROW_ID``,
    ``distance`` (the index's), ``index_file``, then the table's columns. Several files (row
    ranges) are searched and merged by distance; ``width`` is nprobe (IVF) or l_search (DiskANN),
    None for the library's own choice."""
    hits = []
    for gif, index in _opened(table, snapshot_id, field):
        lo = gif.row_range[0]
        for local, dist in index.search(query, k, width)[0]:
            hits.append((dist, lo + local, gif.entry.index_file.file_name))
    hits = sorted(hits)[:k]
    rows = read_with_row_ids(table, snapshot_id, row_ids={h[1] for h in hits})
    by_id = {r[ROW_ID]: r for r in rows.to_pylist()}
    out = [{"rank": i + 1, ROW_ID: rid, "distance": dist, "index_file": name,
            **{c: v for c, v in by_id.get(rid, {}).items() if c != ROW_ID}} for i, (dist, rid, name) in enumerate(hits)]
    if not out:
        return pa.table({"rank": pa.array([], pa.int64()), ROW_ID: pa.array([], pa.int64()),
                         "distance": pa.array([], pa.float64()), "index_file": pa.array([], pa.string())})
    return pa.Table.from_pylist(out)


def _widths(index: VectorIndex, k: int) -> list[int]:
    """Doubling widths: nprobe 1 .. every list (IVF); l_search k .. min(vectors, 128 k) (DiskANN)."""
    full = index.info.full_width
    diskann = index.info.index_type == "diskann"
    start = k if diskann else 1
    full = min(full, 128 * k) if diskann else full
    out, w = [], start
    while w < full:
        out.append(w)
        w *= 2
    return out + [full]


def recall_curve(table, k: int = 10, sample: int = DEFAULT_SAMPLE, widths: list[int] | None = None,
                 target: float = DEFAULT_TARGET, seed: int = 0, snapshot_id: int | None = None,
                 field: str | None = None) -> dict:
    """recall@k of each vector index file at each search width, against exact (brute-force)
    search over the table's vectors in the file's row range, on ``sample`` of those vectors as
    queries (seeded). ``rows``: file, width, recall, a 95% interval, queries, k; ``reaches``:
    per file the smallest width whose recall is at least ``target`` (None when none does)."""
    if k < 1 or sample < 1:
        raise IndexCoreError("k and the sample size must be at least 1")
    rows, reaches = [], {}
    rng = np.random.default_rng(seed)
    cache: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for gif, index in _opened(table, snapshot_id, field):
        name = gif.entry.index_file.file_name
        if gif.field.name not in cache:
            cache[gif.field.name] = table_vectors(table, gif.field.name, snapshot_id)
        ids, vecs = cache[gif.field.name]
        inside = _in_range(ids, gif)
        local, vecs = ids[inside] - gif.row_range[0], vecs[inside]
        if len(local) == 0:
            continue
        n = min(sample, len(local))
        picks = np.sort(rng.choice(len(local), size=n, replace=False))
        kk = min(k, len(local))
        exact = local[exact_search(vecs, vecs[picks], kk, index.info.metric)]
        reaches[name] = None
        for width in widths or _widths(index, kk):
            found = index.search(vecs[picks], kk, width)
            per_query = [len({i for i, _ in got} & set(want.tolist())) / kk for got, want in zip(found, exact, strict=True)]
            mean = float(np.mean(per_query))
            half = 1.96 * float(np.std(per_query, ddof=1)) / math.sqrt(n) if n > 1 else 0.0
            rows.append({"file": name, "field": gif.field.name, "kind": index.info.index_type,
                         "width": width, "width_name": index.info.width_name,
                         "recall": mean, "recall_low": max(0.0, mean - half), "recall_high": min(1.0, mean + half),
                         "queries": n, "k": kk})
            if reaches[name] is None and mean >= target:
                reaches[name] = width
    return {"k": k, "sample": sample, "target": target, "seed": seed, "rows": rows, "reaches": reaches}


register_view("vector_indexes", vector_indexes)
