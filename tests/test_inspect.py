"""``views.inspect(table)`` views over the conformance warehouses."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import indexcore
from indexcore import views

VIEWS = ("snapshots", "schemas", "options", "manifests", "files", "file_indexes", "table_indexes", "buckets",
         "partitions", "tags", "branches")


@pytest.fixture(scope="module")
def wh(conformance: Path):
    return indexcore.open_warehouse(str(conformance / "warehouses" / "parquet"))


def test_every_view_of_every_table(wh):
    for name in wh.tables():
        table = wh.table(name)
        for view in VIEWS:
            result = getattr(views.inspect(table), view)()
            assert isinstance(result, pa.Table), (name, view)
        files = views.inspect(table).files()
        assert files.num_rows == len(table.plan().files)
        assert sum(files.column("record_count").to_pylist()) == table.snapshot().total_record_count
        assert views.inspect(table).snapshots().column("snapshot_id").to_pylist() == [s.id for s in table.snapshots()]


def test_files_and_indexes_views(wh):
    table = wh.table("pk_with_bitmap_dv.pk_with_bitmap_dv")
    (row,) = views.inspect(table).files().to_pylist()
    assert row["min_value_stats"] == "{key=0, f0=Alice, f1=10, f2=0, f3=11.1}"
    assert row["null_value_counts"] == "{key=0, f0=0, f1=0, f2=1, f3=0}"
    assert row["min_key"] == "{0}" and row["max_key"] == "{7}" and row["level"] == 5
    assert row["deletion_vector_cardinality"] == 2
    idx = views.inspect(table).file_indexes().to_pylist()
    assert sorted((r["column_name"], r["index_type"]) for r in idx) == [("f0", "bitmap"), ("f1", "bitmap"), ("f2", "bitmap")]
    (ti,) = views.inspect(table).table_indexes().to_pylist()
    assert ti["index_type"] == "DELETION_VECTORS" and ti["dv_ranges"][0]["_CARDINALITY"] == 2
    assert views.inspect(table).files(snapshot_id=1).column("deletion_vector_cardinality").to_pylist() == [None]


def test_partitions_and_buckets(wh):
    table = wh.table("append_with_empty_partition.append_with_empty_partition")
    parts = {r["partition"]: r["record_count"] for r in views.inspect(table).partitions().to_pylist()}
    assert parts == {"{2025}": 1, "{2024}": 2, "{null}": 3}
    buckets = views.inspect(table).buckets().to_pylist()
    assert {b["bucket"] for b in buckets} == {0} and sum(b["file_count"] for b in buckets) == 3


def test_global_index_rows_carry_their_field_and_row_range(wh):
    table = wh.table("append_with_global_index.append_with_global_index")
    rows = views.inspect(table).table_indexes().to_pylist()
    assert rows and all(r["index_type"] == "bitmap" and r["decoded"] is True for r in rows)
    assert rows[0]["index_field_name"] == "f1" and rows[0]["row_range_start"] == 0
