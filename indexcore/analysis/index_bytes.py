"""Index bytes of a snapshot per index kind and storage (embedded in the manifest, in a ``.index``
file, or a table-level file of the index manifest), from ``$file_indexes`` and the index manifest."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from indexcore.views.census_rows import codes_of
from indexcore.warehouse.plan_columns import whole

CONTAINER_HEAD = "file-index head"  # the kind of a file-index container's head bytes


@dataclass(frozen=True)
class IndexBytes:
    """Bytes of one index kind in one storage (EMBEDDED, FILE = ``.index``, INDEX MANIFEST)."""

    index_type: str
    storage: str
    files: int
    bytes: int
    pct_of_data: float | None


def index_bytes_of(census: pa.Table, plan, data_bytes: int) -> list[IndexBytes]:
    """Blob bytes per (index kind, storage), the container heads, and the index manifest's files,
    from ``$file_indexes`` (aggregated by Arrow: it has a row per blob, 180,000 at 50,000 files)."""
    return index_bytes_from(census_index_bytes(census), plan.index_entries, data_bytes)


def census_index_bytes(census: pa.Table) -> dict[tuple[str, str], list[int]]:
    """(files, bytes) per (index kind, storage) of a census's blobs and container heads; the
    census of disjoint sets of files add up (a Spark task counts its own: :func:`add_index_bytes`)."""
    rows: dict[tuple[str, str], list[int]] = {}
    ok = census.select(["file_path", "column_name", "index_type", "storage_type", "index_size_in_bytes",
                        "index_container_size_in_bytes"])
    if ok["column_name"].null_count:  # else no copy of every row
        ok = ok.filter(pc.is_valid(ok["column_name"]))
    # a number per data file: grouping by it is cheaper than hashing 180,000 paths twice more (a
    # census's file_path is a dictionary already: its indices, one per file, not a second encoding)
    paths = ok["file_path"]  # a dictionary of one chunk (a census's): its indices number the files
    if not (pa.types.is_dictionary(paths.type) and paths.num_chunks == 1):
        paths = pc.dictionary_encode(paths.cast(pa.string())).combine_chunks()
    file = whole(paths).indices.to_numpy(zero_copy_only=False)  # int32, no copy (each copy of 3.9M rows
    # is a first touch of fresh pages in a page's one health run: most of this function's first-call CPU)
    if not len(file):
        return rows
    # grouped in numpy on a number per group (Arrow's hash group-by of 3.9M rows by file and by
    # kind took 2.3 s at 1M files): each few (kind, storage) pairs a mask, each file a bincount
    kinds, kind_at = codes_of(ok["index_type"])
    storages, storage_at = codes_of(ok["storage_type"])
    sizes = pc.fill_null(ok["index_size_in_bytes"], 0).to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    files = int(file.max()) + 1
    pair = kind_at * len(storages) + storage_at
    present = np.flatnonzero(np.bincount(pair))  # the pairs present (no sort of every row)
    rank = np.zeros(int(pair.max()) + 1, np.int64)
    rank[present] = np.arange(len(present))
    at = rank[pair]
    # the files of each pair marked in one bool row per pair (one scatter, no mask per pair);
    # the bytes summed per pair in one bincount when every sum is exact in a float64
    seen = np.zeros(len(present) * files, bool)
    seen[at * files + file] = True  # at: int64, so no int32 overflow
    counts = np.count_nonzero(seen.reshape(len(present), files), axis=1).tolist()
    exact = int(np.abs(sizes).sum()) < 1 << 53
    sums = (np.rint(np.bincount(at, weights=sizes, minlength=len(present))).astype(np.int64).tolist() if exact
            else [int(sizes[at == j].sum()) for j in range(len(present))])
    for j, p in enumerate(present.tolist()):
        _add(rows, kinds[p // len(storages)], storages[p % len(storages)], counts[j], sums[j])
    # per (data file, storage): its container's size (the first given) less its blobs' bytes (none
    # given: no head counted), on a slot per pair
    key = file.astype(np.int64) * len(storages) + storage_at
    slots = files * len(storages)
    valid = ok["index_size_in_bytes"].is_valid().to_numpy(zero_copy_only=False)
    summed = np.zeros(slots, bool)
    summed[key[valid]] = True
    blob_sum = (np.rint(np.bincount(key, weights=sizes, minlength=slots)).astype(np.int64) if exact
                else _int_sums(key, sizes, slots))
    container = ok["index_container_size_in_bytes"]
    given = container.is_valid().to_numpy(zero_copy_only=False)
    sized, size_of = key[given], pc.fill_null(container, 0).to_numpy(zero_copy_only=False).astype(np.int64, copy=False)[given]
    first = np.full(slots, -1, np.int64)
    first[sized] = size_of  # one of the slot's values: its container's size, the same on each of its rows
    for slot in np.unique(sized[size_of != first[sized]]).tolist():  # not the same on every row: the first
        first[slot] = size_of[int(np.argmax(sized == slot))]  # given, as Arrow's "first"
    has = np.flatnonzero(first >= 0)
    heads = np.where(summed[has], np.maximum(first[has] - blob_sum[has], 0), 0)
    head_storage = has % len(storages)
    for s_at in np.flatnonzero(np.bincount(head_storage, minlength=len(storages))).tolist():
        mine = head_storage == s_at
        _add(rows, CONTAINER_HEAD, storages[s_at], int(np.count_nonzero(mine)), int(heads[mine].sum()))
    return rows


def _int_sums(key: np.ndarray, sizes: np.ndarray, slots: int) -> np.ndarray:
    """Sums of ``sizes`` per ``key`` in int64 (where a float64 bincount might round)."""
    out = np.zeros(slots, np.int64)
    np.add.at(out, key, sizes)
    return out


def _add(rows: dict, kind: str, storage: str, files: int, size: int) -> None:
    acc = rows.setdefault((kind, storage), [0, 0])
    acc[0] += files
    acc[1] += size


def add_index_bytes(parts) -> dict[tuple[str, str], list[int]]:
    """The sum of some :func:`census_index_bytes` of disjoint files."""
    rows: dict[tuple[str, str], list[int]] = {}
    for part in parts:
        for (kind, storage), (files, size) in part.items():
            _add(rows, kind, storage, files, size)
    return rows


def index_bytes_from(rows: dict[tuple[str, str], list[int]], index_entries, data_bytes: int) -> list[IndexBytes]:
    """:class:`IndexBytes` of a census's (:func:`census_index_bytes`) and the index manifest's files."""
    rows = {k: list(v) for k, v in rows.items()}
    for e in index_entries:
        _add(rows, e.index_file.index_type, "INDEX MANIFEST", 1, e.index_file.file_size)
    return [IndexBytes(kind, storage, files, size, size / data_bytes if data_bytes else None)
            for (kind, storage), (files, size) in sorted(rows.items())]
