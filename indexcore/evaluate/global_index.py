"""Which row ids a predicate keeps through a table's global indexes, as Paimon's scan decides.

Row-tracking tables give every row a row id; a data file holds ``[first_row_id,
first_row_id + row_count)``. Each global index file covers a row range of one field, with row
ids local to that range. For a leaf on an indexed field, the rows kept are the index answers
(shifted to global ids) plus every row of the ranges no index file of that field covers (nothing
can be pruned there); AND intersects, OR unites, a leaf without an index keeps everything.
Vector and full-text indexes do not take part (they answer searches, not filters).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pyroaring import BitMap64

from ..errors import IndexCoreError
from ..expr import Compound, Leaf, Predicate
from ..warehouse.global_index import GlobalIndexFile, global_index_files, open_reader
from ..warehouse.model import Problem


@dataclass
class GlobalIndexScan:
    """The row ids a predicate keeps (``rows``) within the table's row ids (``universe``)."""

    universe: BitMap64
    rows: BitMap64
    used: list[GlobalIndexFile] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)

    def kept_positions(self, first_row_id: int, row_count: int) -> BitMap64:
        """Positions (0-based, in the data file) of the file's rows the global index keeps."""
        window = self.rows & BitMap64(range(first_row_id, first_row_id + row_count))
        return BitMap64(r - first_row_id for r in window)


def _ranges_bitmap(ranges: list[tuple[int, int]]) -> BitMap64:
    out = BitMap64()
    for lo, hi in ranges:
        out.add_range(lo, hi + 1)
    return out


def global_index_scan(table, predicate: Predicate, snapshot_id: int | None = None) -> GlobalIndexScan | None:
    """Evaluate ``predicate`` on the snapshot's BTree and bitmap global indexes; None when none applies."""
    plan = table.plan(snapshot_id)
    files = [lf for lf in plan.files if lf.file.first_row_id is not None]
    if not files:
        return None
    indexes: dict[str, list[GlobalIndexFile]] = {}
    for gif in global_index_files(table, snapshot_id):
        if gif.field is not None and gif.family in ("btree", "bitmap") and gif.row_range is not None:
            indexes.setdefault(gif.field.name, []).append(gif)
    if not indexes or not predicate.fields() & set(indexes):
        return None
    universe = _ranges_bitmap([(lf.file.first_row_id, lf.file.first_row_id + lf.file.row_count - 1)
                               for lf in files if lf.file.row_count])
    scan = GlobalIndexScan(universe, BitMap64())
    readers: dict[str, object] = {}

    def leaf_rows(leaf: Leaf) -> BitMap64:
        out = BitMap64()
        covered = BitMap64()
        for gif in indexes.get(leaf.field, []):
            lo, hi = gif.row_range
            try:
                reader = readers.get(gif.path)
                if reader is None:
                    reader = readers[gif.path] = open_reader(table, gif)
                local = reader.visit(leaf)
            except IndexCoreError as exc:
                scan.problems.append(Problem(gif.path, exc.structure or "global index", exc.message))
                continue
            if local is None:
                continue
            if gif not in scan.used:
                scan.used.append(gif)
            covered.add_range(lo, hi + 1)
            out |= BitMap64(lo + r for r in local if r <= hi - lo)
        return out | (universe - covered)

    def evaluate(pred: Predicate) -> BitMap64:
        if isinstance(pred, Leaf):
            return leaf_rows(pred) & universe if pred.field in indexes else BitMap64(universe)
        assert isinstance(pred, Compound)
        parts = [evaluate(c) for c in pred.children]
        out = parts[0]
        for p in parts[1:]:
            out = out & p if pred.function.name == "and" else out | p
        return out

    scan.rows = evaluate(predicate)
    if not scan.used:
        return None
    return scan


# ------------------------------------------------------------------------------------------
# Views for the "Global indexes" page and notebooks (pandas frames)


def _merge(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return out


def table_row_ranges(table, snapshot_id: int | None = None) -> list[tuple[int, int]]:
    """The row ids the snapshot's data files hold (inclusive ranges, merged)."""
    return _merge([(lf.file.first_row_id, lf.file.first_row_id + lf.file.row_count - 1)
                   for lf in table.plan(snapshot_id).files if lf.file.first_row_id is not None and lf.file.row_count])


def global_index_rows(table, snapshot_id: int | None = None) -> list[dict]:
    """One row per global index file: kind, field, partition, row range, size, key range, metadata
    (the ``$global_indexes`` view's rows)."""
    from ..types import to_json_value
    from .metrics import partition_label, partition_types

    types = partition_types(table)
    rows = []
    for gif in global_index_files(table, snapshot_id):
        d = gif.describe()
        dtype = gif.field.type if gif.field is not None else None

        def show(v, dtype=dtype):
            return None if v is None or dtype is None else str(to_json_value(dtype, v))

        lo, hi = gif.row_range or (None, None)
        rows.append({"file": d["file"], "index_type": d["index_type"], "family": d["family"],
                     "field": d["field"], "field_type": d["field_type"],
                     "partition": partition_label(gif.entry.partition, types), "bucket": d["bucket"],
                     "row_range_start": lo, "row_range_end": hi, "rows": d["row_count"],
                     "file_size": d["file_size"], "first_key": show(d.get("first_key")),
                     "last_key": show(d.get("last_key")), "has_nulls": d.get("has_nulls"),
                     "dimension": d.get("dimension"), "metric": d.get("metric"),
                     "source_files": len(d.get("source_files", [])) or None, "path": gif.path})
    return rows


def coverage_rows(table, snapshot_id: int | None = None) -> list[dict]:
    """Per indexed field and index kind, the table's row ids split into indexed segments and gaps
    (the ``$global_index_coverage`` view's rows)."""
    table_ranges = table_row_ranges(table, snapshot_id)
    by_key: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for gif in global_index_files(table, snapshot_id):
        if gif.field is not None and gif.row_range is not None:
            by_key.setdefault((gif.field.name, gif.index_type), []).append(gif.row_range)
    rows = []
    for (field_name, kind), ranges in sorted(by_key.items()):
        covered = _merge(ranges)
        cover = _ranges_bitmap(covered)
        for lo, hi in table_ranges:
            start = lo
            while start <= hi:
                inside = start in cover
                # the next row id whose status differs ends this run
                edge = (_ranges_bitmap([(start, hi)]) - cover) if inside else (cover & _ranges_bitmap([(start, hi)]))
                end = edge.min() if edge else hi + 1
                rows.append({"field": field_name, "index_type": kind, "start": start, "end": end - 1,
                             "rows": end - start, "status": "indexed" if inside else "gap"})
                start = end
        for lo, hi in covered:  # index ranges beyond the table's rows (rows since deleted or compacted)
            extra = _ranges_bitmap([(lo, hi)]) - _ranges_bitmap(table_ranges)
            if extra:
                rows.append({"field": field_name, "index_type": kind, "start": extra.min(), "end": extra.max(),
                             "rows": len(extra), "status": "beyond table"})
    return rows


def cardinality_frame(table, file_name: str, snapshot_id: int | None = None, limit: int | None = None):
    """Rows per key (BTree) or per value (bitmap) of one global index file, most frequent first."""
    import pandas as pd

    from ..types import to_json_value

    gif = next((g for g in global_index_files(table, snapshot_id) if g.entry.index_file.file_name == file_name), None)
    if gif is None:
        raise IndexCoreError(f"no global index file {file_name!r} in this snapshot")
    reader = open_reader(table, gif)
    if reader is None:
        raise IndexCoreError(f"{gif.index_type} indexes hold no per-key rows indexcore can list")
    dtype = gif.field.type
    rows = [{"key": str(to_json_value(dtype, k)), "rows": n} for k, n in reader.cardinalities()]
    nulls = len(reader.null_rows)
    if nulls:
        rows.append({"key": "NULL", "rows": nulls})
    frame = pd.DataFrame(rows, columns=["key", "rows"]).sort_values("rows", ascending=False, kind="stable")
    frame = frame.reset_index(drop=True)
    return frame.head(limit) if limit else frame


def predicate_keep_frame(table, sql: str, snapshot_id: int | None = None):
    """Per data file, the rows a WHERE condition keeps through the global indexes; and the totals."""
    import pandas as pd

    from ..expr import parse_where
    from .metrics import partition_label, partition_types

    plan = table.plan(snapshot_id)
    schema = table.read_schema(snapshot_id, plan.snapshot)
    predicate = parse_where(sql, schema.row_type())
    scan = global_index_scan(table, predicate, snapshot_id)
    types = partition_types(table)
    rows = []
    for lf in plan.files:
        f = lf.file
        if f.first_row_id is None:
            continue
        kept = f.row_count if scan is None else len(scan.kept_positions(f.first_row_id, f.row_count))
        rows.append({"file": f.file_name, "partition": partition_label(lf.partition, types),
                     "first_row_id": f.first_row_id, "rows": f.row_count, "kept_rows": kept,
                     "decision": "REMAIN" if kept else "SKIP"})
    frame = pd.DataFrame(rows, columns=["file", "partition", "first_row_id", "rows", "kept_rows", "decision"])
    totals = {"files": len(frame), "files_kept": int((frame["kept_rows"] > 0).sum()) if len(frame) else 0,
              "rows": int(frame["rows"].sum()) if len(frame) else 0,
              "rows_kept": int(frame["kept_rows"].sum()) if len(frame) else 0,
              "indexes_used": [] if scan is None else sorted({g.entry.index_file.file_name for g in scan.used}),
              "problems": [] if scan is None else [p.to_dict() for p in scan.problems]}
    return frame, totals
