"""The What-if "why": reasons grouped and counted, the dominant one in a sentence, on tables whose
layout is known by construction (our writer, a bitmap on ``country``; every file spans A..Z in
``country`` so min/max never prune it):

- ``spread``: 'DE' in every one of 12 files (not clustered): all 12 read, because the index finds it;
- ``clustered``: 'DE' in 3 of 12 files: 3 read for that reason, 9 skipped by the file index.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

import indexcore
from indexcore.frames import what_if
from indexcore.write import TableWriter, make_schema

FILES = 12


def _table(root, name: str, de_files: set[int]) -> None:
    schema = make_schema([("id", "BIGINT"), ("country", "STRING")], options={
        "bucket": "-1", "file-index.bitmap.columns": "country", "file-index.in-manifest-threshold": "1B"})
    w = TableWriter.create(str(root), name, schema, seed=2)
    for i in range(FILES):
        countries = ["AA", "ZZ", "FR", "US"] + (["DE"] if i in de_files else [])
        w.write(pa.table({"id": pa.array(range(i * 10, i * 10 + len(countries)), pa.int64()), "country": countries}))


@pytest.fixture(scope="module")
def wh(tmp_path_factory):
    root = tmp_path_factory.mktemp("why")
    _table(root, "db.spread", set(range(FILES)))
    _table(root, "db.clustered", {0, 5, 7})
    return indexcore.open_warehouse(str(root))


def _reasons(result) -> dict:
    frame = result["why"]["reasons"]
    return {(r.outcome, r.reason): r.files for r in frame.itertuples()}


def test_not_clustered_value_is_read_everywhere_and_says_why(wh):
    result = what_if.explain_frames(wh.table("db.spread"), "country = 'DE'")
    assert _reasons(result) == {("read", what_if.FOUND): FILES}
    assert result["why"]["summary"].startswith(
        f"Rows with country = 'DE' are in {FILES} of {FILES} files: the data is not clustered by country")


def test_clustered_value_groups_read_and_skipped_files(wh):
    result = what_if.explain_frames(wh.table("db.clustered"), "country = 'DE'")
    assert _reasons(result) == {("read", what_if.FOUND): 3, ("skipped", "the file index finds no row"): FILES - 3}
    assert result["why"]["summary"].startswith(f"Rows with country = 'DE' are in 3 of {FILES} files")
    frame = result["why"]["reasons"]
    assert frame["files"].sum() == FILES and frame.iloc[0]["outcome"] == "read"


def test_statistics_alone_and_nothing_read(wh):
    table = wh.table("db.clustered")
    out = what_if.explain_frames(table, "id >= 0")  # no index on id, every file's ids within range
    assert _reasons(out) == {("read", what_if.NO_INDEX): FILES}
    assert out["why"]["summary"].startswith(f"id >= 0 lies within the min..max statistics of {FILES} of {FILES} files")
    assert "not sorted" not in out["why"]["summary"], "no claim the explain did not establish"
    dated = what_if.explain_frames(table, "id = 3")
    assert dated["why"]["summary"].startswith("id = 3 "), "the condition as typed"
    none = what_if.explain_frames(table, "id > 100000")
    assert _reasons(none) == {("skipped", "min/max statistics exclude the value"): FILES}
    assert none["why"]["summary"].startswith(f"No file is read: {FILES} of {FILES}")
    verified = what_if.explain_frames(table, "country = 'FR'", verify=True)
    assert _reasons(verified) == {("read", what_if.VERIFIED): FILES}


def test_what_if_page_shows_the_why(wh, open_page, monkeypatch):
    root = str(wh.table("db.clustered").path).rsplit("/db.db/", 1)[0]
    monkeypatch.setenv("INDEXCORE_ALLOWED_ROOTS", root)
    at = open_page("what_if", table="db.clustered", warehouse=root)
    at.text_input(key="whatif_sql").input("country = 'DE'").run()
    assert not at.exception and not [e.value for e in at.error], [e.value for e in at.error]
    assert any(t.value.startswith(f"Rows with country = 'DE' are in 3 of {FILES} files") for t in at.text)
    reasons = next(d.value for d in at.dataframe if list(d.value.columns) == what_if.WHY_COLUMNS)
    assert reasons["files"].tolist() == [3, FILES - 3]
    # the explain is kept for reruns by the server's bounded map, not in the session (issue 28)
    assert "whatif_explained" not in at.session_state


PROGRESS_SCRIPT = """
import sys

import streamlit as st

sys.path.insert(0, {root!r})
from pages.common import progress_callback

update, bar = progress_callback("Explaining", every={every})
drawn = []
draw = bar.progress
bar.progress = lambda *a, **k: (drawn.append(a[0]), draw(*a, **k))
for done in range(1, 45505):
    update(done, 45504, "file")
st.text(f"{{len(drawn)}} {{drawn[-1]}}")
"""


def test_progress_bar_redraws_per_percent_not_per_file():
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    root = str(Path(__file__).resolve().parent.parent)
    at = AppTest.from_string(PROGRESS_SCRIPT.format(root=root, every=0.0), default_timeout=60)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.text[0].value == "101 1.0"  # 0% .. 100%, once each


def test_progress_bar_redraws_at_most_every_interval_and_at_the_end():
    """A run faster than the interval draws its bar once, at 100% (no bar per percent no one sees)."""
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    root = str(Path(__file__).resolve().parent.parent)
    at = AppTest.from_string(PROGRESS_SCRIPT.format(root=root, every=3600.0), default_timeout=60)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.text[0].value == "1 1.0"
