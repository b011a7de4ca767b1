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
