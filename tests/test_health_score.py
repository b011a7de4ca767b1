"""The health score's small-file weight against Apache Amoro's (``CommonPartitionEvaluator
.getHealthScore``: ``100 - table_factor * 40 * (1 - min(mean size, min target) / min target)``),
on tables of known file sizes written by our own writer; the expected points are computed here
from the sizes on disk, with Amoro's formula written out independently of the code under test."""

from __future__ import annotations

import os

import pyarrow as pa

import indexcore
from indexcore.analysis import health as H
from indexcore.write import TableWriter, make_schema


def _fragmented(root, name: str, files: int, options: dict[str, str]) -> None:
    schema = make_schema([("id", "BIGINT"), ("name", "STRING")], options={"bucket": "-1", **options})
    w = TableWriter.create(str(root), name, schema, seed=1)
    for i in range(files):
        w.write(pa.table({"id": pa.array([i * 5 + j for j in range(5)], pa.int64()),
                          "name": [f"n{i}-{j}" for j in range(5)]}))


def _amoro_points(sizes: list[int], min_target: int, target: int, minor_trigger: int = 12) -> float:
    """Amoro's small-file penalty, in points of 100."""
    def norm(a, b):
        return min(a, b) / b

    factor = norm(len(sizes), minor_trigger) * norm(sum(sizes), target)
    return 40 * factor * (1 - norm(sum(sizes) / len(sizes), min_target))


def test_a_table_of_tiny_files_loses_what_amoro_takes(tmp_path):
    """40 files of under 1 KB against a 16 KB target (small under 4 KB): Amoro takes about 30 of
    100 points; the old cap of 15 points scored such a table 85 or more."""
    _fragmented(tmp_path, "db.frag", 40, {"target-file-size": "16kb"})
    table = indexcore.open_warehouse(str(tmp_path)).table("db.frag")
    sizes = [os.path.getsize(lf.path) for lf in table.plan().files]
    assert len(sizes) == 40 and max(sizes) < 4096
    h = H.table_health(table)
    (item,) = [i for i in h.items if i.kind == "small-files"]
    want = _amoro_points(sizes, 4096, 16 << 10)
    assert want > 25
    assert item.deduction == round(want) and item.severity == H.WARNING
    assert h.score == 100 - sum(H._capped(h.items).values()) <= 100 - round(want) < 85


def test_a_table_smaller_than_one_target_file_costs_little(tmp_path):
    """The same 40 tiny files against Paimon's 256 MB default target: Amoro's table factor (bytes
    over the target) makes them cost next to nothing, and the item deducts nothing."""
    _fragmented(tmp_path, "db.frag", 40, {})
    table = indexcore.open_warehouse(str(tmp_path)).table("db.frag")
    sizes = [os.path.getsize(lf.path) for lf in table.plan().files]
    h = H.table_health(table)
    (item,) = [i for i in h.items if i.kind == "small-files"]
    assert round(_amoro_points(sizes, 64 << 20, 256 << 20)) == 0 == item.deduction
    assert item.severity == H.INFO and h.small_files == 40
