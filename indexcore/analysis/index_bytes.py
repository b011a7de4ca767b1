"""Index bytes of a snapshot per index kind and storage (embedded in the manifest, in a ``.index``
file, or a table-level file of the index manifest), from ``$file_indexes`` and the index manifest."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

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
    paths = ok["file_path"]
    if pa.types.is_dictionary(paths.type) and paths.num_chunks == 1:
        ok = ok.append_column("file", paths.chunk(0).indices)
    else:
        ok = ok.append_column("file", pc.dictionary_encode(paths).combine_chunks().indices)
    for g in ok.group_by(["index_type", "storage_type"], use_threads=False).aggregate(
            [("file", "count_distinct"), ("index_size_in_bytes", "sum")]).to_pylist():
        _add(rows, g["index_type"], g["storage_type"], g["file_count_distinct"], g["index_size_in_bytes_sum"] or 0)
    per_file = ok.group_by(["file", "storage_type"], use_threads=False).aggregate(
        [("index_container_size_in_bytes", "first"), ("index_size_in_bytes", "sum")])
    per_file = per_file.filter(pc.is_valid(per_file["index_container_size_in_bytes_first"]))
    heads = pc.max_element_wise(pc.subtract(per_file["index_container_size_in_bytes_first"],
                                            per_file["index_size_in_bytes_sum"]), 0)
    by_storage = pa.table({"storage_type": per_file["storage_type"], "head": heads})
    for g in by_storage.group_by("storage_type", use_threads=False).aggregate([("head", "count"),
                                                                               ("head", "sum")]).to_pylist():
        _add(rows, CONTAINER_HEAD, g["storage_type"], g["head_count"], g["head_sum"] or 0)
    return rows


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
