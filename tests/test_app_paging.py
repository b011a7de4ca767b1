"""Paged tables sort and filter over every row before paging (a header click sorts one page only,
so "the largest file" was the largest of the first 200)."""

from __future__ import annotations

from pathlib import Path

import pytest

import indexcore

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_warehouse"


FRAME_SCRIPT = """
import sys

import pandas as pd

sys.path.insert(0, {root!r})
from pages.rows import show_frame

# 450 rows; the largest size is not on the first page, and every 7th row says "seven"
frame = pd.DataFrame({{"name": [f"f{{i}}" + ("-seven" if i % 7 == 0 else "") for i in range(450)],
                      "size": [(i * 37) % 450 for i in range(450)]}})
show_frame(frame, "t")
"""


def _frames(at) -> list:
    return [d.value for d in at.dataframe]


def test_sort_and_filter_cover_every_row_not_one_page():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_string(FRAME_SCRIPT.format(root=str(ROOT)), default_timeout=60)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    first = _frames(at)[0]
    assert len(first) == 200 and first["size"].max() < 449, "the first page as listed lacks the largest row"
    at.selectbox(key="t_sort").select("size").run()
    page = _frames(at)[0]
    assert page["size"].tolist() == list(range(449, 249, -1)), "the largest 200 of all 450 rows, largest first"
    at.toggle(key="t_desc").set_value(False).run()
    assert _frames(at)[0]["size"].tolist() == list(range(200))
    at.text_input(key="t_grep").input("SEVEN").run()
    kept = _frames(at)[0]
    assert len(kept) == len(range(0, 450, 7)) == 65 and kept["name"].str.endswith("-seven").all()
    assert kept["size"].is_monotonic_increasing


SOME_ROWS_SCRIPT = """
import sys

import numpy as np
import pandas as pd

sys.path.insert(0, {root!r})
from pages.rows import show_frame

# 900 rows; only the odd ones are shown, and only two of the three columns
frame = pd.DataFrame({{"name": [f"f{{i}}" + ("-seven" if i % 7 == 0 else "") for i in range(900)],
                      "size": [(i * 37) % 900 for i in range(900)], "path": [f"/w/{{i}}" for i in range(900)]}})
show_frame(frame, "t", columns=["name", "size"], rows=np.arange(1, 900, 2))
"""


def test_show_frame_of_some_rows_and_columns_sorts_and_filters_only_those():
    """``rows`` and ``columns`` (what a page passes instead of a filtered or narrowed copy of a
    1,000,000-row frame): the sort, the filter and the pages cover exactly those rows, and only
    those columns are shown, offered to sort by and searched."""
    from streamlit.testing.v1 import AppTest

    odd = [i for i in range(1, 900, 2)]
    at = AppTest.from_string(SOME_ROWS_SCRIPT.format(root=str(ROOT)), default_timeout=60)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    first = _frames(at)[0]
    assert list(first.columns) == ["name", "size"] and first["name"].tolist() == [f"f{i}" + (
        "-seven" if i % 7 == 0 else "") for i in odd[:200]]
    assert at.selectbox(key="t_sort").options == ["(as listed)", "name", "size"]
    assert "450 rows" in at.number_input(key="t_page").label
    at.selectbox(key="t_sort").select("size").run()
    sizes = sorted(((i * 37) % 900 for i in odd), reverse=True)
    assert _frames(at)[0]["size"].tolist() == sizes[:200]
    at.text_input(key="t_grep").input("/w/").run()  # the path column is not shown, so not searched
    assert len(_frames(at)[0]) == 0
    at.text_input(key="t_grep").input("SEVEN").run()
    kept = _frames(at)[0]
    assert kept["name"].tolist() == [f"f{i}-seven" for i in sorted((i for i in odd if i % 7 == 0),
                                                                    key=lambda i: -((i * 37) % 900))]


def test_table_page_sorts_all_files_before_paging(monkeypatch):
    """demo.events with pages of 4 files: sorting by size shows the largest of all 11 files first."""
    if not SAMPLE.is_dir():
        pytest.skip("sample_warehouse/ is absent")
    from streamlit.testing.v1 import AppTest
    from test_app import APP, _served_through_app

    import pages.rows

    _served_through_app(monkeypatch)
    monkeypatch.setenv("INDEXCORE_WAREHOUSE", str(SAMPLE))
    monkeypatch.delenv("INDEXCORE_ALLOWED_ROOTS", raising=False)
    monkeypatch.setattr(pages.rows, "PAGE_SIZE", 4)
    files = indexcore.open_warehouse(str(SAMPLE)).table("demo.events").plan().files
    sizes = sorted((lf.file.file_size for lf in files), reverse=True)
    assert len(files) > 4
    at = AppTest.from_file(APP, default_timeout=90)
    at.session_state["table"] = "demo.events"
    at.session_state["table_tab"] = "Files"  # the Table page's tabs are lazy: open the one tested
    at.switch_page("pages/table.py").run()
    assert not at.exception, [e.value for e in at.exception]
    at.selectbox(key="files_sort").select("file_size_in_bytes").run()
    assert not at.exception, [e.value for e in at.exception]
    shown = next(f for f in _frames(at) if "file_size_in_bytes" in f and "min_value_stats" in f)
    assert shown["file_size_in_bytes"].tolist() == sizes[:4]
    at.number_input(key="files_page").set_value(3).run()
    shown = next(f for f in _frames(at) if "file_size_in_bytes" in f and "min_value_stats" in f)
    assert shown["file_size_in_bytes"].tolist() == sizes[8:12]


# 23 partitions x 20 commits = 460 files; the extremes of ``v`` sit in the file of partition 11 of
# commit 10, the 231st file or later in any listing order (partition- or commit-major, either way round)
PARTS, COMMITS, EXTREME = 23, 20, 10**6


def _values(p: int, c: int) -> list[int]:
    values = [(p * 31 + c * 7 + i * 3) % 1000 for i in range(10)]
    if (p, c) == (11, 10):
        values[3], values[7] = EXTREME, -EXTREME
    return values


@pytest.fixture(scope="module")
def many_files(tmp_path_factory) -> str:
    import pyarrow as pa

    from indexcore.write import TableWriter, make_schema

    root = str(tmp_path_factory.mktemp("stats") / "wh")
    writer = TableWriter.create(root, "db.t", make_schema([("id", "INT"), ("v", "INT"), ("p", "STRING")],
                                                          partition_keys=["p"], options={"bucket": "-1"}), seed=5)
    for c in range(COMMITS):
        ids, vs, ps = [], [], []
        for p in range(PARTS):
            values = _values(p, c)
            ids += list(range(10))
            vs += values
            ps += [f"p{p:02d}"] * 10
        writer.write(pa.table({"id": pa.array(ids, pa.int32()), "v": pa.array(vs, pa.int32()), "p": ps}))
    return root


def _stats_frame(at):
    return next(d.value for d in at.dataframe if {"column", "min", "max", "null_count"} <= set(d.value.columns))


def test_column_statistics_sort_and_filter_every_file_not_one_page(open_page, monkeypatch, many_files):
    """The Column statistics tab decodes one column's statistics of all 460 files and sorts them
    before paging: the largest max and the smallest min (one file, not on page 1) come first."""
    monkeypatch.setenv("INDEXCORE_ALLOWED_ROOTS", many_files)
    at = open_page("table", "db.t", warehouse=many_files, tab="Column statistics")
    at.selectbox(key="stats_column").select("v").run()
    assert not at.exception, [e.value for e in at.exception]
    first = _stats_frame(at)
    assert len(first) == 200 and EXTREME not in set(first["max"]), "page 1 as listed lacks the extreme file"
    assert any("460 file(s) of 460" in c.value for c in at.caption)
    at.selectbox(key="file_stats_sort").select("max").run()
    top = _stats_frame(at)
    assert top["max"].iloc[0] == EXTREME and top["min"].iloc[0] == -EXTREME
    maxima = sorted((max(_values(p, c)) for p in range(PARTS) for c in range(COMMITS)), reverse=True)
    assert list(top["max"]) == maxima[:200]  # the 200 largest maxima of all files, from the generator
    at.selectbox(key="file_stats_sort").select("min").run()
    at.toggle(key="file_stats_desc").set_value(False).run()
    assert _stats_frame(at)["min"].iloc[0] == -EXTREME
    at.text_input(key="file_stats_grep").input(str(EXTREME)).run()
    kept = _stats_frame(at)
    assert len(kept) == 1 and kept["max"].iloc[0] == EXTREME


def test_column_statistics_past_the_cap_say_so(open_page, monkeypatch, many_files):
    monkeypatch.setenv("INDEXCORE_ALLOWED_ROOTS", many_files)
    monkeypatch.setenv("INDEXCORE_COLUMN_STATS_FILES", "300")
    at = open_page("table", "db.t", warehouse=many_files, tab="Column statistics")
    at.selectbox(key="stats_column").select("v").run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("first 300 of 460 live files" in w.value and "INDEXCORE_COLUMN_STATS_FILES" in w.value
               for w in at.warning)
    assert any("300 file(s) of 460" in c.value for c in at.caption)
