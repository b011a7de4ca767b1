"""Figures from a decode sample say so and carry an interval (issue 27: "sampled figures shown
as totals"): the ratio estimator against truth built by construction, the Bitmap page's point
lookup on a sampled table, and the prune-count and bloom-fill figures' labels."""

from __future__ import annotations

import random

import pandas as pd

from indexcore.analysis.advise_sample import ratio_total
from indexcore.frames import figures, range_figures


def test_ratio_total_is_exact_on_every_file_and_covers_the_truth_on_samples() -> None:
    rng = random.Random(27)
    sizes = [rng.randint(50, 400) for _ in range(2000)]
    found = [sum(rng.random() < 0.3 for _ in range(s)) for s in sizes]  # ~30% of each file's rows match
    truth = sum(found)
    exact = ratio_total(found, sizes, sum(sizes), len(sizes))
    assert exact.exact and exact.value == exact.low == exact.high == truth
    covered = 0
    for trial in range(200):
        pick = random.Random(trial).sample(range(len(sizes)), 100)
        est = ratio_total([found[i] for i in pick], [sizes[i] for i in pick], sum(sizes), len(sizes))
        assert not est.exact and est.sample == 100 and est.population == 2000
        assert est.low <= est.value <= est.high <= sum(sizes)
        assert est.low >= sum(found[i] for i in pick), "never below what the sample itself found"
        covered += est.low <= truth <= est.high
    assert covered >= 180, f"the 95% interval covered the truth in {covered} of 200 samples"


def test_prune_counts_and_bloom_fill_say_when_they_count_a_sample() -> None:
    pruned = pd.DataFrame({"stats": ["may match", "SKIP", "may match"], "bsi": ["REMAIN", "SKIP", "no index"]})
    whole = range_figures.prune_counts(pruned, ["bsi"], population=3)
    assert "sample" not in whole.layout.title.text and "all files" in str(whole.data[0].x)
    part = range_figures.prune_counts(pruned, ["bsi"], population=4568)
    assert "random sample of 3 of 4,568 live files" in part.layout.title.text
    assert any("sampled files (3 of 4,568)" in str(t.x) for t in part.data)
    blooms = pd.DataFrame({"fill_ratio": [0.1, 0.5], "column": ["a", "a"]})
    assert "sample" not in figures.bloom_fill(blooms, population=2).layout.title.text
    assert "random sample of 2 of 90 filters" in figures.bloom_fill(blooms, population=90).layout.title.text


def test_prune_counts_draws_what_plotly_express_draws() -> None:
    """The prune-count bars are made directly (no px frame machinery): the same traces, counts,
    colours, hovers and layout as ``px.bar`` of the same counts, a foreign drawing of the truth."""
    import plotly.express as px

    pruned = pd.DataFrame({"stats": ["may match", "SKIP", "may match", "may match"],
                           "bsi": ["SKIP", "no index", "3 rows", "SKIP (0 rows)"], "range-bitmap": ["no index"] * 4})
    for kinds, population in ((["range-bitmap", "bsi"], None), (["bsi"], 10), (["other"], 4)):
        got = range_figures.prune_counts(pruned, kinds, population=population)
        sampled = population is not None and population > len(pruned)
        rows = [("sampled files (4 of 10)" if sampled else "all files", "kept", 4), ("stats", "kept", 3)]
        for t in kinds:
            if t in pruned:
                kept = {"range-bitmap": 0, "bsi": 1}[t]
                rows += [(t, "kept", kept), (t, "no index", {"range-bitmap": 4, "bsi": 1}[t])]
        want = px.bar(pd.DataFrame(rows, columns=["decided by", "outcome", "files"]), x="decided by", y="files",
                      color="outcome", barmode="stack", color_discrete_map={"kept": "#1f77b4", "no index": "#bbbbbb"},
                      title=got.layout.title.text)
        assert [(t.name, list(t.x), list(t.y), t.marker.color, t.hovertemplate) for t in got.data] == \
            [(t.name, list(t.x), list(t.y), t.marker.color, t.hovertemplate) for t in want.data]
        assert got.layout.barmode == "stack" and got.layout.legend.title.text == "outcome"
        assert got.layout.xaxis.title.text == "decided by"
        assert got.layout.yaxis.title.text == ("sampled files" if sampled else "files")


def _plain(fig) -> dict:
    """A figure as plain data, without what px states and plotly assumes (axis anchors and domains,
    a trace's default axes) and with arrays as lists: two drawings of the same figure compare equal."""
    import numpy as np

    def clean(value):
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items() if k not in ("anchor", "domain", "template")}
        if isinstance(value, list | tuple):
            return [clean(v) for v in value]
        if isinstance(value, np.ndarray):
            return clean(value.tolist())
        return value

    out = clean(fig.to_dict())
    for trace in out["data"]:
        if trace.get("xaxis") == "x" and trace.get("yaxis") == "y":
            del trace["xaxis"], trace["yaxis"]
    return out


def _px_bloom_figures(blooms: pd.DataFrame, population: int | None) -> list:
    """The bloom figures as plotly express drew them before they were made directly (the reference)."""
    import plotly.express as px
    import plotly.graph_objects as go

    from indexcore.frames.figures import (
        MAX_BARS,
        MAX_POINTS,
        _count_axis,
        _escaped,
        _with_labels,
        _words,
        capped,
    )

    blooms = _escaped(blooms)
    frame = blooms.dropna(subset=["fill_ratio"])
    sampled = population is not None and population > len(frame)
    fill = px.histogram(frame, x="fill_ratio", color="column", nbins=20, range_x=[0, 1],
                        labels=_words("fill_ratio", "column"),
                        title="Fill ratio per bloom filter (near 1: saturated)"
                              + (f": a random sample of {len(frame):,} of {population:,} filters" if sampled else ""))
    fill.update_layout(height=360, bargap=0.05, yaxis_title="sampled bloom filters" if sampled else "bloom filters",
                       xaxis_tickformat=".0%")
    _count_axis(fill, float(len(frame)))
    frame = blooms.dropna(subset=["estimated_items"])
    frame, note = capped(frame.sort_values(["estimated_items", "configured_items"], kind="stable"), MAX_POINTS,
                         what="filters")
    frame = _with_labels(frame)
    items = px.scatter(frame, x="configured_items", y="estimated_items", color="column",
                       hover_data=["file_name", "fill_ratio", "recommended_items"], log_x=True, log_y=True,
                       labels=_words("configured_items", "estimated_items", "column", "file_name", "fill_ratio",
                                     "recommended_items"),
                       title="Estimated distinct items vs configured items (dashed: equal)" + note)
    items.update_xaxes(dtick=1)
    items.update_yaxes(dtick=1)
    lo = max(1.0, min(frame["configured_items"].min(), frame["estimated_items"].min()))
    hi = max(frame["configured_items"].max(), frame["estimated_items"].max())
    items.add_trace(go.Scatter(x=[lo, hi], y=[lo, hi], mode="lines", line={"dash": "dash", "color": "gray"},
                               name="items = configured"))
    items.update_traces(marker={"size": 11}, selector={"mode": "markers"})
    items.update_layout(height=360)
    frame = blooms.dropna(subset=["estimated_fpp"])
    frame, note = capped(frame, MAX_BARS, "estimated_fpp", "filters")
    frame = _with_labels(frame)
    frame["label"] = frame["file"] + " · " + frame["column"].astype(str)
    frame["estimated_fpp_shown"] = frame["estimated_fpp"].clip(lower=1e-12)
    fpp = px.bar(frame, x="label", y="estimated_fpp_shown", color="column", log_y=True,
                 hover_data=["file_name", "estimated_fpp", "configured_fpp"],
                 labels={**_words("column", "file_name", "estimated_fpp", "configured_fpp"),
                         "label": "filter (data file · column)", "estimated_fpp_shown": "estimated fpp"},
                 title="Estimated FPP per filter (dashed: configured)" + note)
    for value in sorted(set(frame["configured_fpp"].dropna())):
        fpp.add_hline(y=value, line_dash="dash", annotation_text=f"fpp {value:g}")
    fpp.update_layout(height=360, yaxis={"exponentformat": "power", "dtick": 2,
                                         "title": "estimated fpp (shown down to 1e-12)"})
    return [fill, items, fpp]


def test_bloom_figures_draw_what_plotly_express_draws() -> None:
    """The bloom figures are made directly (no px frame machinery): the same traces (one per
    column, px's colours, counts, hovers with escaped names) and layout as px drew them."""
    import random

    rng = random.Random(9)
    n = 150  # past MAX_BARS: the fpp bars are capped
    blooms = pd.DataFrame({
        "file_name": [f"data-{i:08x}-aaaa-bbbb-cccc-dddddddddddd-{i % 3}.parquet" if i % 7 else f"<b>f{i}</b>"
                      for i in range(n)],
        "column": [rng.choice(["country", "user_id", "a&b"]) for _ in range(n)],
        "fill_ratio": [rng.random() for _ in range(n)], "estimated_items": [rng.uniform(1, 5000) for _ in range(n)],
        "configured_items": [rng.choice([1000, 5000]) for _ in range(n)],
        "recommended_items": [rng.randint(10, 9000) for _ in range(n)],
        "estimated_fpp": [rng.choice([0.0, 1e-15, rng.random() / 10]) for _ in range(n)],
        "configured_fpp": [rng.choice([0.01, 0.05]) for _ in range(n)]})
    for population in (None, n, 10 * n):
        got = [figures.bloom_fill(blooms, population=population), figures.bloom_items(blooms),
               figures.bloom_fpp(blooms)]
        for mine, theirs in zip(got, _px_bloom_figures(blooms, population), strict=True):
            assert _plain(mine) == _plain(theirs)


def test_values_per_file_draws_what_plotly_express_draws() -> None:
    """The Bitmap page's stacked value bars, made directly: px's drawing of the same frame."""
    import plotly.express as px

    from indexcore.frames.figures import MAX_BARS, _count_axis, _escaped, _with_labels, _words, capped

    rows = [(f"data-{f:08x}-aaaa-bbbb-cccc-dddddddddddd-0.parquet" if f % 5 else f"<i>{f}</i>", "{dt=1}", f % 3,
             value, (f * 7 + len(value)) % 50 + 1)
            for f in range(90) for value in ("US", "DE", "<b>x</b>", "NULL") if (f + len(value)) % 3]
    values = pd.DataFrame(rows, columns=["file_name", "partition", "bucket", "value", "cardinality"])
    for top in (["US", "DE", "<b>x</b>"], ["NULL"], ["none of them"]):
        got = figures.values_per_file(values, top, "Rows per <file>")
        frame = _escaped(values)
        frame = frame[frame["value"].isin(_escaped(top))]
        per_file = frame.groupby("file_name", as_index=False)["cardinality"].sum()
        kept, note = capped(per_file, MAX_BARS, "cardinality")
        frame = _with_labels(frame[frame["file_name"].isin(kept["file_name"])])
        want = px.bar(frame, x="file", y="cardinality", color="value", title=_escaped("Rows per <file>") + note,
                      hover_data=["file_name", "partition", "bucket"],
                      labels=_words("file", "cardinality", "file_name", "partition", "bucket", "value"))
        want.update_layout(height=360, barmode="stack")
        _count_axis(want, float(frame.groupby("file")["cardinality"].sum().max()) if not frame.empty else 0.0)
        if frame.empty:
            assert not got.data and not want.data
            continue
        assert _plain(got) == _plain(want)


def test_top_values_draws_what_plotly_express_draws() -> None:
    """The Bitmap page's top-values bars, made directly: px's drawing of the same frame (with and
    without the files column, markup in values escaped)."""
    import plotly.express as px

    from indexcore.frames.figures import _count_axis, _escaped, _words

    top = pd.DataFrame({"value": ["US", "<b>x</b>", "a&b", "NULL"], "cardinality": [40, 12, 7, 1],
                        "files": [9, 3, 2, 1]})
    for frame in (top, top.drop(columns=["files"])):
        got = figures.top_values(frame, "Top of <col>")
        shown = _escaped(frame)
        want = px.bar(shown, x="value", y="cardinality", hover_data=[c for c in ("files",) if c in shown],
                      title=_escaped("Top of <col>"), labels={**_words("cardinality"), "files": "files holding it"})
        want.update_layout(height=360, xaxis_type="category")
        _count_axis(want, float(frame["cardinality"].max()))
        assert _plain(got) == _plain(want)
