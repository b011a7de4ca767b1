"""Per-snapshot views built once per (table, snapshot) and kept on the table, within a row budget."""

from __future__ import annotations

from pathlib import Path

import pytest

import indexcore
from indexcore.views import SNAPSHOT_VIEWS, view
from indexcore.warehouse import table as table_module

SAMPLE = Path(__file__).resolve().parent.parent / "sample_warehouse"


@pytest.fixture
def orders():
    if not (SAMPLE / "demo.db" / "orders").is_dir():
        pytest.skip("sample_warehouse/ is missing")
    return indexcore.open_warehouse(str(SAMPLE)).table("demo.orders")


def test_a_snapshot_view_is_built_once_and_each_snapshot_has_its_own(orders):
    ids = [s.id for s in orders.snapshots()]
    assert len(ids) > 1
    latest = view(orders, "files")
    assert view(orders, "$files") is latest
    assert view(orders, "files", ids[-1]) is latest  # the latest named by its id is the same snapshot
    first = view(orders, "files", ids[0])
    assert first is not latest and view(orders, "files", ids[0]) is first
    assert first.num_rows == len(orders.plan(ids[0]).files)
    assert view(orders, "snapshots") is not view(orders, "snapshots")  # table-wide views are not kept
    assert {"files", "file_indexes", "deletion_vectors"} <= SNAPSHOT_VIEWS


def test_views_with_arguments_are_built_each_time(orders):
    assert view(orders, "bloom_filters", target_fpp=0.01) is not view(orders, "bloom_filters", target_fpp=0.01)


def test_the_row_budget_lets_the_least_recently_used_go(orders, monkeypatch):
    monkeypatch.setattr(table_module, "DERIVED_CACHE_ROWS", 1)
    fresh = indexcore.open_warehouse(str(SAMPLE)).table("demo.orders")
    files = view(fresh, "files")
    assert view(fresh, "files") is files  # one result heavier than the budget is still kept, alone
    indexes = view(fresh, "file_indexes")
    assert view(fresh, "file_indexes") is indexes
    again = view(fresh, "files")
    assert again is not files and again.equals(files)  # pushed out, built again, the same rows


def test_files_listing_without_statistics_and_a_page_of_files(orders):
    full = view(orders, "files").to_pandas()
    listing = view(orders, "files", stats=False).to_pandas()
    rendered = ["min_key", "max_key", "null_value_counts", "min_value_stats", "max_value_stats"]
    assert listing[rendered].isna().all().all() and full["min_value_stats"].notna().all()
    assert listing.drop(columns=rendered).equals(full.drop(columns=rendered))
    some = tuple(full["file_path"].iloc[[0, 2]])
    page = view(orders, "files", paths=some).to_pandas()
    assert list(page["file_path"]) == list(some)
    assert page.equals(full.iloc[[0, 2]].reset_index(drop=True))
