"""The Table page's tabs are lazy: only the open tab runs (a hidden tab's work is not shown), and
each tab, opened, draws its own section without a failure, also on a table with faulty indexes."""

import pytest

# tab -> a widget key only that tab draws
OWN_WIDGET = {"Schema": "schema_version", "Snapshots": "tt_date", "Files": "files_text",
              "Column statistics": "stats_column", "Skew": "skew_by"}


def _widgets(at) -> set:
    out = set()
    for kind in ("selectbox", "date_input", "text_input", "radio"):
        out |= {w.key for w in getattr(at, kind)}
    return out


@pytest.mark.parametrize("table", ["demo.events", "demo.faulty"])
def test_only_the_open_tab_runs(open_page, table):
    at = open_page("table", table)
    assert [t.label for t in at.tabs] == list(OWN_WIDGET)
    for label in OWN_WIDGET:
        at.session_state["table_tab"] = label
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        assert not at.error, (label, [e.value for e in at.error])
        drawn = _widgets(at)
        assert OWN_WIDGET[label] in drawn, (label, drawn)
        assert not (set(OWN_WIDGET.values()) - {OWN_WIDGET[label]}) & drawn, (label, drawn)


def test_the_first_tab_is_open_by_default_and_no_statistics_are_decoded(open_page):
    at = open_page("table", "demo.events")
    assert at.session_state["table_tab"] == "Schema"
    assert not any({"column", "min", "max", "null_count"} <= set(d.value.columns) for d in at.dataframe)
    at = open_page("table", "demo.events", tab="Column statistics")
    assert any({"column", "min", "max", "null_count"} <= set(d.value.columns) for d in at.dataframe)


# ---------------------------------------------------------------------------------------
# The Files tab sorts and filters every file in Arrow (pages/rows.py), as sort_and_filter does a frame


def _listing():
    import datetime as dt

    import pyarrow as pa

    return pa.table({
        "name": ["b", "a", "c", "d", "e"],
        "size": [3, None, 3, 1, 7],
        "when": pa.array([dt.datetime(2024, 6, 1, 9), None, dt.datetime(2024, 1, 2), dt.datetime(2025, 3, 4),
                          dt.datetime(2024, 6, 1, 10)], pa.timestamp("ms")),
        "cols": pa.array([["x", "yz"], None, [], ["Q"], ["y"]], pa.list_(pa.string())),
        "flag": [True, False, None, True, False]})


def test_sorted_by_is_stable_with_nulls_last_both_ways():
    from pages.rows import sorted_by

    t = _listing()
    assert sorted_by(t, "size", True)["name"].to_pylist() == ["e", "b", "c", "d", "a"]  # ties keep their order
    assert sorted_by(t, "size", False)["name"].to_pylist() == ["d", "b", "c", "e", "a"]
    assert sorted_by(t, "when", False)["name"].to_pylist() == ["c", "b", "e", "d", "a"]
    # a list column (Arrow cannot order it) by its text: "" < "Q" < "x, yz" < "y", null last
    assert sorted_by(t, "cols", False)["name"].to_pylist() == ["c", "d", "b", "e", "a"]


def test_containing_searches_each_cell_as_text_case_insensitively():
    from pages.rows import containing

    t = _listing()
    names = lambda text, cols=("name", "size", "when", "cols", "flag"): containing(t, text, list(cols))["name"].to_pylist()  # noqa: E731
    assert names("Y") == ["b", "e"]  # in a list's items
    assert names("x, y") == ["b"]  # the items joined as shown
    assert names("2024-06-01") == ["b", "e"]
    assert names("7") == ["e"]
    assert names("true") == ["b", "d"]
    assert names("A", ("name",)) == ["a"]
    assert names("b", ("size",)) == []  # only the columns asked for
    assert names("none") == []  # a null cell holds no text


def test_containing_reads_a_dictionary_column_as_its_text():
    """A census column kept as a dictionary is searched on its texts, with the rows its plain text gives."""
    import pyarrow as pa

    from pages.rows import containing

    plain = pa.table({"path": ["a/Bucket-0/x", None, "b/bucket-1/y", "a/bucket-0/z"], "n": [1, 2, 3, 4]})
    coded = plain.set_column(0, "path", pa.chunked_array([plain["path"].chunk(0).slice(0, 2).dictionary_encode(),
                                                          plain["path"].chunk(0).slice(2).dictionary_encode()]))
    for text in ("bucket-0", "Y", "/", "nothing"):
        assert containing(coded, text, ["path"])["n"].to_pylist() == containing(plain, text, ["path"])["n"].to_pylist()
    assert containing(coded, "BUCKET-0", ["path"])["n"].to_pylist() == [1, 4]


def test_files_tab_lists_the_census_sorted_over_every_row(open_page, monkeypatch):
    """The Files tab's ``$file_indexes`` listing, pages of 4: sorted by index size over every row
    of the census (truth: the census frame sorted by pandas), file_path not shown."""
    import pages.rows
    from indexcore.frames.views import view_frame

    monkeypatch.setattr(pages.rows, "PAGE_SIZE", 4)
    at = open_page("table", "demo.events", tab="Files")
    at.selectbox(key="file_indexes_sort").select("index_size_in_bytes").run()
    assert not at.exception, [e.value for e in at.exception]
    shown = next(d.value for d in at.dataframe if "index_type" in d.value.columns)
    assert "file_path" not in shown.columns
    from pathlib import Path

    from indexcore import open_warehouse

    sample = Path(__file__).resolve().parent.parent / "sample_warehouse"
    census = view_frame(open_warehouse(str(sample)).table("demo.events"), "file_indexes")
    assert len(census) > 4
    want = census["index_size_in_bytes"].sort_values(ascending=False, kind="stable").head(4).tolist()
    assert shown["index_size_in_bytes"].tolist() == want


def test_files_tab_filters_and_sorts_every_file_before_paging(open_page, monkeypatch):
    """The Files tab on demo.events with pages of 4: the largest file first after a sort over every
    file, a text filter over every file, each page's rows with their statistics."""
    from pathlib import Path

    import pages.rows
    from indexcore import open_warehouse

    monkeypatch.setattr(pages.rows, "PAGE_SIZE", 4)
    sample = Path(__file__).resolve().parent.parent / "sample_warehouse"
    files = open_warehouse(str(sample)).table("demo.events").plan().files
    by_size = sorted(files, key=lambda lf: (-lf.file.file_size, files.index(lf)))
    at = open_page("table", "demo.events", tab="Files")
    at.selectbox(key="files_sort").select("file_size_in_bytes").run()
    shown = next(d.value for d in at.dataframe if "min_value_stats" in d.value.columns)
    assert shown["file_name"].tolist() == [lf.file.file_name for lf in by_size[:4]]
    last = by_size[-1].file.file_name
    at.text_input(key="files_grep").input(last[5:].upper()).run()
    shown = next(d.value for d in at.dataframe if "min_value_stats" in d.value.columns)
    assert shown["file_name"].tolist() == [last]
    assert any("1 row(s) contain" in c.value for c in at.caption)


def test_a_tabs_filters_are_kept_while_another_tab_is_open(open_page):
    """Streamlit forgets the state of widgets a run does not draw: the Files tab's filter and sort
    and the Skew tab's grouping are kept while another tab is open, and apply again on return."""
    at = open_page("table", "demo.events", tab="Files")
    name = at.text_input(key="files_text")
    part = at.multiselect(key="files_partitions")
    part.select(part.options[0]).run()
    at.text_input(key="files_text").input("data-").run()
    at.session_state["table_tab"] = "Skew"
    at.run()
    at.radio(key="skew_by").set_value("partition").run()
    for label in ("Schema", "Files"):
        at.session_state["table_tab"] = label
        at.run()
        assert not at.exception, [e.value for e in at.exception]
    assert at.text_input(key="files_text").value == "data-" and name is not None
    assert at.multiselect(key="files_partitions").value == [part.options[0]]
    at.session_state["table_tab"] = "Skew"
    at.run()
    assert at.radio(key="skew_by").value == "partition"


def test_kept_picks_of_another_table_do_not_fail_the_page(open_page):
    """A file picked and a partition kept on one table, then another table picked: its page runs
    (the kept picks are not among its options)."""
    at = open_page("table", "demo.events", tab="Column statistics")
    at.selectbox(key="stats_file").select(at.selectbox(key="stats_file").options[1]).run()
    at.session_state["table_tab"] = "Files"
    at.run()
    part = at.multiselect(key="files_partitions")
    if part.options:
        part.select(part.options[0]).run()
    at.session_state["table"] = "demo.orders"
    for label in ("Files", "Column statistics"):
        at.session_state["table_tab"] = label
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        assert not at.error, [e.value for e in at.error]


def test_travel_by_time_picks_the_snapshot_live_at_the_end_of_that_minute(open_page):
    """Truth from the snapshot files themselves: the newest snapshot committed at or before the end
    of the picked minute (UTC); a minute before the first commit says so and keeps the pick."""
    import datetime as dt
    import json
    from pathlib import Path

    folder = Path(__file__).resolve().parents[1] / "sample_warehouse" / "demo.db" / "events" / "snapshot"
    commits = {json.loads(p.read_text())["id"]: json.loads(p.read_text())["timeMillis"]
               for p in folder.glob("snapshot-*")}
    at = open_page("table", "demo.events", tab="Snapshots")
    for sid, millis in sorted(commits.items()):
        when = dt.datetime.fromtimestamp(millis / 1000, dt.UTC)
        end = (millis // 60_000) * 60_000 + 59_999
        expected = max(s for s, m in commits.items() if m <= end)
        at.date_input(key="tt_date").set_value(when.date())
        at.time_input(key="tt_time").set_value(when.time().replace(second=0, microsecond=0))
        at.button(key="tt_go").click().run()
        assert not at.exception, [e.value for e in at.exception]
        assert at.session_state["snapshot_id"] == expected, (sid, expected)
        assert any(f"Travelled to snapshot {expected}" in i.value for i in at.info)
    first = dt.datetime.fromtimestamp(min(commits.values()) / 1000 - 3600, dt.UTC)
    at.date_input(key="tt_date").set_value(first.date())
    at.time_input(key="tt_time").set_value(first.time().replace(second=0, microsecond=0))
    at.button(key="tt_go").click().run()
    assert any("No snapshot was committed" in i.value for i in at.info)
    assert at.session_state["snapshot_id"] == expected  # kept
