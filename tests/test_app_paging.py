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
from pages.common import show_frame

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


def test_table_page_sorts_all_files_before_paging(monkeypatch):
    """demo.events with pages of 4 files: sorting by size shows the largest of all 11 files first."""
    if not SAMPLE.is_dir():
        pytest.skip("sample_warehouse/ is absent")
    from streamlit.testing.v1 import AppTest
    from test_app import APP, _served_through_app

    import pages.common

    _served_through_app(monkeypatch)
    monkeypatch.setenv("INDEXCORE_WAREHOUSE", str(SAMPLE))
    monkeypatch.delenv("INDEXCORE_ALLOWED_ROOTS", raising=False)
    monkeypatch.setattr(pages.common, "PAGE_SIZE", 4)
    files = indexcore.open_warehouse(str(SAMPLE)).table("demo.events").plan().files
    sizes = sorted((lf.file.file_size for lf in files), reverse=True)
    assert len(files) > 4
    at = AppTest.from_file(APP, default_timeout=90)
    at.session_state["table"] = "demo.events"
    at.switch_page("pages/table.py").run()
    assert not at.exception, [e.value for e in at.exception]
    at.selectbox(key="files_sort").select("file_size_in_bytes").run()
    assert not at.exception, [e.value for e in at.exception]
    shown = next(f for f in _frames(at) if "file_size_in_bytes" in f and "min_value_stats" in f)
    assert shown["file_size_in_bytes"].tolist() == sizes[:4]
    at.number_input(key="files_page").set_value(3).run()
    shown = next(f for f in _frames(at) if "file_size_in_bytes" in f and "min_value_stats" in f)
    assert shown["file_size_in_bytes"].tolist() == sizes[8:12]
