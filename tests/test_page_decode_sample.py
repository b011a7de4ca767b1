"""The sampling note of the index pages (``pages.common.decode_sample``): the files with a file index
and those carrying the page's kinds, counted over the census by Arrow's own distinct count, are the
numbers the Range and Bitmap pages print, with the sample taken past ``INDEXCORE_DECODE_SAMPLE``."""

from __future__ import annotations

from pathlib import Path

import pyarrow.compute as pc
import pytest

from indexcore import open_warehouse
from indexcore.frames.bitmap import BITMAP_TYPES
from indexcore.frames.range import RANGE_TYPES
from indexcore.views import view

SAMPLE = Path(__file__).resolve().parent.parent / "sample_warehouse"


@pytest.mark.parametrize(("page", "table", "kinds"), [("range", "demo.events", RANGE_TYPES),
                                                      ("bitmap", "demo.events", BITMAP_TYPES),
                                                      ("bitmap", "demo.faulty", BITMAP_TYPES)])
def test_the_sampling_note_counts_distinct_files(open_page, monkeypatch, page, table, kinds):
    if not (SAMPLE / "demo.db").is_dir():
        pytest.skip("sample_warehouse/ not found")
    monkeypatch.setenv("INDEXCORE_WAREHOUSE", str(SAMPLE))
    monkeypatch.delenv("INDEXCORE_ALLOWED_ROOTS", raising=False)
    monkeypatch.setenv("INDEXCORE_DECODE_SAMPLE", "1")
    census = view(open_warehouse(str(SAMPLE)).table(table), "file_indexes")
    paths = pc.cast(census["file_path"], "string")
    with_index = pc.count_distinct(paths).as_py()
    carrying = pc.count_distinct(paths.filter(pc.is_in(census["index_type"], pc.cast(list(kinds), "string")))).as_py()
    assert with_index > 1 and carrying >= 1
    at = open_page(page, table)
    toggles = [t.label for t in at.toggle if t.label.startswith("Decode every file")]
    assert toggles == [f"Decode every file ({carrying:,} carry this index; slow)"]
    captions = [c.value for c in at.caption if "fixed random sample" in c.value]
    assert captions and f"of the {with_index:,} files with a file index" in captions[0]


@pytest.mark.parametrize("table", ["demo.events", "demo.faulty", "demo.orders"])
def test_the_bitmap_pages_carrying_files_are_distinct_census_paths(open_page, monkeypatch, table):
    """"Files with this bitmap": the picked column's bitmap rows' distinct paths (Arrow's count)."""
    if not (SAMPLE / "demo.db").is_dir():
        pytest.skip("sample_warehouse/ not found")
    monkeypatch.setenv("INDEXCORE_WAREHOUSE", str(SAMPLE))
    monkeypatch.delenv("INDEXCORE_ALLOWED_ROOTS", raising=False)
    at = open_page("bitmap", table)
    column = at.selectbox(key="bitmap_column").value
    census = view(open_warehouse(str(SAMPLE)).table(table), "file_indexes")
    rows = census.filter(pc.and_(pc.is_in(census["index_type"], pc.cast(list(BITMAP_TYPES), "string")),
                                 pc.equal(census["column_name"], column)))
    want = pc.count_distinct(pc.cast(rows["file_path"], "string")).as_py()
    assert want >= 1
    assert [m.value for m in at.metric if m.label == "Files with this bitmap"] == [str(want)]
