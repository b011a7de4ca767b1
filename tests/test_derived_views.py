"""Per-snapshot views built once per (table, snapshot) and kept on the table, within a row budget."""

from __future__ import annotations

from pathlib import Path

import pytest

import indexcore
from indexcore.analysis.health import table_health
from indexcore.config import settings
from indexcore.views import SNAPSHOT_VIEWS, view

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
    monkeypatch.setenv("INDEXCORE_DERIVED_ROWS", "1")
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


def test_one_stats_field_decodes_alone_and_agrees_with_the_whole_row(orders):
    """The stats stage decodes only the predicate's fields (as Paimon's BinaryRow reads one field);
    each agrees with the whole row decoded, and the whole row is not decoded for it."""
    fresh = indexcore.open_warehouse(str(SAMPLE)).table("demo.orders")
    checked = 0
    for lf, again in zip(fresh.plan().files, orders.plan().files, strict=True):
        stats, whole = lf.file.value_stats, again.file.value_stats
        n = len(whole.null_counts) + 2
        alone = [stats.value_at(i) for i in range(n)]
        assert stats.__dict__.get("_decoded") is None
        assert alone == [(whole.min_values[i] if i < len(whole.min_values) else None,
                          whole.max_values[i] if i < len(whole.max_values) else None,
                          whole.null_counts[i] if i < len(whole.null_counts) else None) for i in range(n)]
        assert [stats.value_at(i) for i in reversed(range(n))] == alone[::-1]  # the memo's answers
        checked += sum(1 for a in alone if a[0] is not None)
    assert checked
    # one field asked (a one-column predicate: its memo a pair, not a dict), again, then others
    once = indexcore.open_warehouse(str(SAMPLE)).table("demo.orders")
    for lf, again in zip(once.plan().files, orders.plan().files, strict=True):
        stats, whole = lf.file.value_stats, again.file.value_stats
        want = [whole.value_at(i) for i in range(len(whole.null_counts))]
        last = len(want) - 1
        assert stats.value_at(last) == stats.value_at(last) == want[last]
        assert [stats.value_at(i) for i in range(len(want))] == want


def test_the_default_budget_keeps_what_a_page_shares_of_a_million_file_snapshot(orders):
    """The Table page and its health share the census, ``$files``, ``$deletion_vectors`` and the
    live files of one snapshot; a budget below their rows made each push the last out, and at
    1,000,000 files (four file-index entries each, the bench's table) one Table page walked the
    census four times. Rows per file measured here on a real table, the census's scaled to four
    entries per file."""
    fresh = indexcore.open_warehouse(str(SAMPLE)).table("demo.orders")
    census = view(fresh, "file_indexes")
    table_health(fresh)
    view(fresh, "files", stats=False)
    fresh.live_files_by_path()
    files = fresh.plan_columns().num_files
    derived = fresh.caches.derived
    assert derived.peek(("view", "file_indexes", fresh.snapshot().id)) is census  # kept through them all
    other = derived.weight - census.num_rows  # every kept result but the census
    per_file = 4 + other / files
    assert per_file >= 6 and settings().derived_rows >= 1_000_000 * per_file
