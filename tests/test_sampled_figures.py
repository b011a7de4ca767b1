"""Figures from a decode sample say so and carry an interval (issue 27: "sampled figures shown
as totals"): the ratio estimator against truth built by construction, the Bitmap page's point
lookup on a sampled table, and the prune-count and bloom-fill figures' labels."""

from __future__ import annotations

import random

import pandas as pd

from indexcore.analysis.advise_sample import ratio_total
from indexcore.frames import figures


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
    whole = figures.prune_counts(pruned, ["bsi"], population=3)
    assert "sample" not in whole.layout.title.text and "all files" in str(whole.data[0].x)
    part = figures.prune_counts(pruned, ["bsi"], population=4568)
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
        got = figures.prune_counts(pruned, kinds, population=population)
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
