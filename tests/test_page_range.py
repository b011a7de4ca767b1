"""AppTest of the Range-bitmap/BSI page on timestamp columns, and of the unusable-file lists of
the Bloom, Range and Table pages (issue 14), on the sample warehouse."""

from __future__ import annotations

import datetime as dt
import decimal
import json
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go
import pytest

from indexcore import open_warehouse
from indexcore.frames import figures, range_figures
from indexcore.views import view

SAMPLE = Path(__file__).resolve().parent.parent / "sample_warehouse"


@pytest.fixture(scope="module", autouse=True)
def sample():
    if not SAMPLE.is_dir():
        pytest.skip("sample_warehouse/ not found")
    mp = pytest.MonkeyPatch()
    mp.setenv("INDEXCORE_WAREHOUSE", str(SAMPLE))
    mp.delenv("INDEXCORE_ALLOWED_ROOTS", raising=False)
    yield SAMPLE
    mp.undo()


def _range_chart(at) -> dict:
    specs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    return next(s for s in specs if s["layout"]["title"]["text"].startswith("Value range of"))


def test_range_page_plots_timestamp_ranges(open_page):
    """A TIMESTAMP column plots one range per file, its default predicate is typed SQL and the
    band follows the parsed predicate, one-sided ranges included."""
    at = open_page("range", "demo.events")
    at.selectbox(key="range_column").select("event_time").run()
    sql = at.text_input(key="range_sql").value
    assert sql.startswith("event_time BETWEEN TIMESTAMP '") and sql.count("TIMESTAMP '") == 2, sql
    spec = _range_chart(at)
    table = open_warehouse(str(SAMPLE)).table("demo.events")
    indexed = view(table, "file_indexes").to_pandas()
    files = indexed[indexed["column_name"] == "event_time"]["file_name"].nunique()
    assert len(spec["data"]) == 1 and len(segments(spec["data"][0])) == files > 0
    assert all(pd.Timestamp(lo) <= pd.Timestamp(hi) for lo, hi in segments(spec["data"][0]))
    band = spec["layout"]["shapes"][0]
    low, high = sql.split("TIMESTAMP '")[1].split("'")[0], sql.split("TIMESTAMP '")[2].split("'")[0]
    assert (pd.Timestamp(band["x0"]), pd.Timestamp(band["x1"])) == (pd.Timestamp(low), pd.Timestamp(high))

    at.text_input(key="range_sql").set_value("event_time >= TIMESTAMP '2024-06-02 12:00:00'").run()
    assert not at.exception and not at.error
    band = _range_chart(at)["layout"]["shapes"][0]
    assert pd.Timestamp(band["x0"]) == pd.Timestamp("2024-06-02 12:00:00")
    assert pd.Timestamp(band["x1"]) == max(pd.Timestamp(hi) for _, hi in segments(_range_chart(at)["data"][0]))


def segments(trace) -> list[list]:
    """The min..max segments of a value-ranges trace (one trace, segments apart at None points)."""
    xs = list(trace["x"])
    return [xs[i:i + 2] for i in range(0, len(xs), 3)]


def test_value_ranges_draws_one_segment_per_file_in_one_trace():
    """Each file's range from min to max on its own row, sorted by (min, max), ends hovered with the
    file, its index type and which end; capped at MAX_BARS evenly spaced rows; one trace."""
    n = 75
    ranges = pd.DataFrame({"file_name": [f"data-{i:04d}.parquet" for i in range(n)],
                           "index_type": ["bsi" if i % 2 else "range-bitmap" for i in range(n)],
                           "min": [(i * 37) % n for i in range(n)], "max": [(i * 37) % n + 5 + i for i in range(n)]})
    fig = range_figures.value_ranges(ranges, 10, 20)
    assert len(fig.data) == 1
    trace = fig.data[0]
    expected = ranges.sort_values(["min", "max"], kind="stable")
    shown, note = figures.capped(expected, figures.MAX_BARS, what="indexes")
    assert note and note in fig.layout.title.text
    assert segments(trace) == [[lo, hi] for lo, hi in zip(shown["min"], shown["max"], strict=True)]
    labels = [f"{f} · {k}" for f, k in zip(shown["file_name"], shown["index_type"], strict=True)]
    assert [list(trace.y[i:i + 2]) for i in range(0, len(trace.y), 3)] == [[lab, lab] for lab in labels]
    assert all(trace.x[i] is None and trace.y[i] is None for i in range(2, len(trace.x), 3))  # apart
    ends = [list(trace.customdata[i]) for i in range(len(trace.x)) if i % 3 != 2]
    assert ends == [[end, f, k] for f, k in zip(shown["file_name"], shown["index_type"], strict=True)
                    for end in ("min", "max")]
    assert trace.mode == "lines+markers" and trace.line.width == 8 and trace.connectgaps is False
    assert "%{customdata[1]} (%{customdata[2]})" in trace.hovertemplate
    band = fig.layout.shapes[0]
    assert (band.x0, band.x1) == (10, 20) and fig.layout.yaxis.type == "category"
    # the band and its note as plotly's add_vrect draws them (a foreign drawing), open sides and times too
    times = ranges.assign(min=pd.to_datetime(ranges["min"], unit="D"), max=pd.to_datetime(ranges["max"], unit="D"))
    for frame, low, high in ((ranges, 10, 20), (ranges, None, 20), (ranges, 10, None), (times, dt.date(1970, 1, 9), None)):
        fig = range_figures.value_ranges(frame, low, high)
        x0 = pd.Timestamp(low) if isinstance(low, dt.date) else low
        shown = frame.sort_values(["min", "max"], kind="stable")
        shown, _ = figures.capped(shown, figures.MAX_BARS, what="indexes")
        want = go.Figure()
        want.add_vrect(x0=shown["min"].min() if low is None else x0, x1=shown["max"].max() if high is None else high,
                       fillcolor="green", opacity=0.15, line_width=0, annotation_text="predicate")
        assert [s.to_plotly_json() for s in fig.layout.shapes] == [s.to_plotly_json() for s in want.layout.shapes]
        assert [a.to_plotly_json() for a in fig.layout.annotations] == \
            [a.to_plotly_json() for a in want.layout.annotations]
    assert not range_figures.value_ranges(ranges).layout.shapes  # no predicate, no band


def test_value_ranges_takes_times_and_decimals():
    ranges = pd.DataFrame({"file_name": ["a", "b"], "index_type": ["bsi", "bsi"],
                           "min": [dt.date(2024, 1, 1), dt.datetime(2024, 1, 2, 3)],
                           "max": [dt.date(2024, 1, 5), dt.datetime(2024, 1, 9)]})
    fig = range_figures.value_ranges(ranges, dt.datetime(2024, 1, 3), None)
    assert len(segments(fig.data[0])) == 2 and fig.layout.shapes[0].x0 == pd.Timestamp(2024, 1, 3)
    dec = ranges.assign(min=[decimal.Decimal("1.5"), decimal.Decimal("2")], max=[decimal.Decimal("3.25"), 4])
    assert segments(range_figures.value_ranges(dec).data[0]) == [[1.5, 3.25], [2.0, 4]]
    text = ranges.assign(min=["a", "b"], max=["c", "d"])
    assert len(range_figures.value_ranges(text).data) == 0


@pytest.mark.parametrize("page", ["bloom", "range", "table", "bitmap", "what_if"])
def test_pages_list_the_files_they_could_not_use(open_page, page):
    """demo.faulty: one corrupt and one missing ``.index`` file, listed with their reason."""
    table = open_warehouse(str(SAMPLE)).table("demo.faulty")
    indexed = view(table, "file_indexes").to_pandas()
    want = set(indexed[indexed["error"].notna()]["file_name"])
    assert len(want) == 2
    at = open_page(page, "demo.faulty")
    assert not at.error, [e.value for e in at.error]
    listed = [d.value for d in at.dataframe if "why" in d.value]
    assert listed and set(listed[0]["file_name"]) == want
    assert set(listed[0]["why"]) == {"unreadable index", "missing .index file"}
    assert any("2 file(s) could not be used" in w.value for w in at.warning)


def test_an_index_on_another_column_keeps_no_file():
    """On ``event_time`` the BSI (on ``amount``) cannot skip a file: it counts as "no index", not as kept."""
    from indexcore.frames import pruning as pruning_frames

    table = open_warehouse(str(SAMPLE)).table("demo.events")
    pruned = pruning_frames.prune_by_sql(table, "event_time >= TIMESTAMP '2024-06-02 12:00:00'", ["range-bitmap", "bsi"])
    assert set(pruned["bsi"]) == {"no index"}
    assert "no index" not in set(pruned["range-bitmap"])
    bars = {(x, tr.name): y for tr in range_figures.prune_counts(pruned, ["range-bitmap", "bsi"]).data
            for x, y in zip(tr.x, tr.y, strict=True)}
    assert bars.get(("bsi", "kept"), 0) == 0 and bars[("bsi", "no index")] == len(pruned)
    either = pruning_frames.prune_by_sql(table, "event_time >= TIMESTAMP '2024-06-02 12:00:00' OR user_id = 4",
                                  ["range-bitmap", "bsi"])
    assert set(either["range-bitmap"]) == {"no index"}  # the OR branch on user_id has no index


def test_range_frame_of_one_column_decodes_that_column_only():
    """The page decodes the picked column's indexes only: the same rows as the whole frame's rows of
    that column (demo.events: range-bitmap on ``event_time``, BSI on ``amount``), and no reader of
    the other column is opened (the table keeps one reader per decoded blob)."""
    from indexcore.frames import range as range_frames

    table = open_warehouse(str(SAMPLE)).table("demo.events")
    whole = range_frames.range_frame(table)
    assert {"event_time", "amount"} <= set(whole["column"])
    assert len(table.caches.readers) == whole["min"].notna().sum()
    for column in ("event_time", "amount"):
        fresh = open_warehouse(str(SAMPLE)).table("demo.events")
        one = range_frames.range_frame(fresh, column=column)
        assert len(fresh.caches.readers) == one["min"].notna().sum() < len(table.caches.readers)
        mine = whole[whole["column"] == column].reset_index(drop=True)
        assert _cells(one.reset_index(drop=True)) == _cells(mine)


def _cells(frame: pd.DataFrame) -> list[dict]:
    """The frame's rows with every missing value as None (a column of one index kind has no NaN
    where the frame of both kinds has one)."""
    return [{k: None if v is None or (isinstance(v, float) and v != v) else v for k, v in row.items()}
            for row in frame.to_dict("records")]
