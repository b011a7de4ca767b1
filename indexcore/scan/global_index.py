"""Which row ids a predicate keeps through a table's global indexes, as Paimon's scan decides.

Row-tracking tables give every row a row id; a data file holds ``[first_row_id,
first_row_id + row_count)``. Each global index file covers a row range of one field, with row
ids local to that range. For a leaf on an indexed field, the rows kept are the index answers
(shifted to global ids) plus every row of the ranges no index file of that field covers (nothing
can be pruned there); AND intersects, OR unites, a leaf without an index keeps everything.
Vector and full-text indexes do not take part (they answer searches, not filters).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from pyroaring import BitMap64

from indexcore.errors import IndexCoreError
from indexcore.expr import Compound, Leaf, Predicate
from indexcore.scan.records import Batch, Decision
from indexcore.warehouse.global_index import GlobalIndexFile, global_index_files, open_reader
from indexcore.warehouse.model import LiveFile, Problem


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


def ranges_bitmap(ranges: list[tuple[int, int]]) -> BitMap64:
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
    universe = ranges_bitmap([(lf.file.first_row_id, lf.file.first_row_id + lf.file.row_count - 1)
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



class GlobalIndexStage:
    """``global_index``: the rows of each file the snapshot's global indexes keep (row-tracking
    tables). Listed before ``index`` in the funnel, as Paimon's scan applies it; decided after the
    file index, since the rows a file keeps are the fewest of both."""

    def __init__(self, table, predicate: Predicate, files: Sequence[LiveFile], snapshot_id: int | None,
                 enabled: bool, verify: bool):
        """Scans the global indexes when ``enabled`` and a file has row ids; ``problems`` and ``io``
        (bytes, requests) are those of the scan."""
        self.verify = verify  # keep each file's kept rows for verify
        self.scan: GlobalIndexScan | None = None
        self.problems: list[Problem] = []
        self.io = (0, 0)
        if not enabled or not any(lf.file.first_row_id is not None for lf in files):
            return
        stats = table.storage.stats
        served, asked = stats.bytes_served, stats.requests
        try:
            self.scan = global_index_scan(table, predicate, snapshot_id)
        except IndexCoreError as exc:
            self.problems.append(Problem(table.path, exc.structure or "global index", exc.message))
        self.io = (stats.bytes_served - served, stats.requests - asked)
        if self.scan is not None:
            self.problems.extend(self.scan.problems)

    def decide(self, batch: Batch) -> None:
        if self.scan is None:
            return
        for i, (lf, record) in enumerate(zip(batch.files, batch.records, strict=True)):
            f = lf.file
            if f.first_row_id is None:
                continue
            kept = self.scan.kept_positions(f.first_row_id, f.row_count)
            rows = len(kept)
            record["global_index_decision"] = Decision.of(rows > 0)
            record["global_index_rows"] = rows
            if rows < f.row_count:
                record["notes"].append(f"global index keeps {rows} of {f.row_count} rows (row ids "
                                       f"{f.first_row_id}..{f.first_row_id + f.row_count - 1})")
            record["rows_after_dv"] = min(record["rows_after_dv"], rows)
            if self.verify:
                batch.kept[i] = kept


# ------------------------------------------------------------------------------------------
# Views for the "Global indexes" page and notebooks (pandas frames)


def merge_ranges(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return out
