"""The Range page's figures: each file's indexed value range against a predicate's band, and the
files each index kind keeps (split from :mod:`indexcore.frames.figures`, whose helpers they use)."""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Sequence

import pandas as pd
import plotly.graph_objects as go

from indexcore.frames import figures
from indexcore.frames.figures import _HEIGHT, _as_text, _count_axis, _empty, _with_labels, capped
from indexcore.frames.traces import hover


def _on_axis(value) -> float | pd.Timestamp | None:
    """A value a continuous axis can place: a number (decimals as floats) or a time; else None."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, decimal.Decimal):
        return float(value)
    if pd.api.types.is_number(value):
        return value
    if isinstance(value, dt.date | pd.Timestamp):
        return pd.Timestamp(value)
    return None


def value_ranges(ranges: pd.DataFrame, low=None, high=None, title: str = "Value range per file") -> go.Figure:
    """One horizontal bar per file from min to max (numbers, decimals, dates or timestamps); the
    predicate range ``low``..``high`` as a shaded band (either side may be None: open). Only the
    columns drawn are escaped (a page's frame of thousands of files has a dozen)."""
    return _value_ranges(ranges[[c for c in _DRAWN if c in ranges.columns]], low, high, title)


_DRAWN = ("file_name", "index_type", "min", "max")


@_as_text
def _value_ranges(ranges: pd.DataFrame, low, high, title: str) -> go.Figure:
    frame = _with_labels(ranges.dropna(subset=["min", "max"]))
    for end in ("min", "max"):  # numbers of a numeric column are on the axis as they are
        cells = frame[end]
        if not pd.api.types.is_numeric_dtype(cells) or pd.api.types.is_bool_dtype(cells):
            frame[end] = cells.map(_on_axis)
    frame = frame.dropna(subset=["min", "max"])
    if frame.empty:
        return _empty(title, "no numeric or time ranges")
    frame, note = capped(frame.sort_values(["min", "max"], kind="stable"), figures.MAX_BARS, what="indexes")
    title += note
    frame = frame.assign(label=frame["file"] + " · " + frame["index_type"].astype(str))
    fig = go.Figure(data=[_segments(frame)])
    low, high = _on_axis(low), _on_axis(high)
    if low is not None or high is not None:
        x0 = frame["min"].min() if low is None else low
        x1 = frame["max"].max() if high is None else high
        # what add_vrect(fillcolor="green", opacity=0.15, line_width=0, annotation_text="predicate") adds,
        # without its machinery (a fifth of this figure's time)
        fig.update_layout(shapes=[{"type": "rect", "x0": x0, "x1": x1, "xref": "x", "y0": 0, "y1": 1,
                                   "yref": "y domain", "fillcolor": "green", "opacity": 0.15, "line": {"width": 0}}],
                          annotations=[{"text": "predicate", "showarrow": False, "x": max([x0, x1]), "xref": "x",
                                        "xanchor": "right", "y": 1, "yref": "y domain", "yanchor": "top"}])
    fig.update_layout(title=title, height=max(_HEIGHT, 40 * len(frame)), yaxis_type="category",
                      xaxis_title="indexed value (min to max)", yaxis_title="data file · index type")
    return fig


def _segments(frame: pd.DataFrame) -> go.Scatter:
    """One trace of every row's ``min`` to ``max`` segment on its ``label`` row, the segments apart
    (a None point between two): a trace per file cost about 0.04 s of a Range page's run at 60
    files (each trace validated). Each end's hover names the file, its index type and the end."""
    xs: list = []
    ys: list = []
    ends: list = []
    gap = [None, None, None]
    for lo, hi, label, name, kind in zip(frame["min"], frame["max"], frame["label"], frame["file_name"],
                                         frame["index_type"], strict=True):
        xs += [lo, hi, None]
        ys += [label, label, None]
        ends += [["min", name, kind], ["max", name, kind], gap]
    return go.Scatter(x=xs[:-1], y=ys[:-1], customdata=ends[:-1], mode="lines+markers", line={"width": 8},
                      connectgaps=False, showlegend=False, name="value range",
                      hovertemplate="%{customdata[1]} (%{customdata[2]})<br>%{customdata[0]} %{x}<extra></extra>")


@_as_text
def prune_counts(pruned: pd.DataFrame, index_types: Sequence[str], population: int | None = None) -> go.Figure:
    """Files kept by statistics and by each index type; files without that index are a separate
    "no index" part of the bar, not counted as kept by it. When ``pruned`` is a sample of the
    ``population`` live files, the first bar and the title say so (the counts are the sample's)."""
    if pruned.empty:
        return _empty("Pruning")
    sampled = population is not None and population > len(pruned)
    first = f"sampled files ({len(pruned):,} of {population:,})" if sampled else "all files"
    rows = [(first, "kept", len(pruned)), ("stats", "kept", int((pruned["stats"] != "SKIP").sum()))]
    for t in index_types:
        if t in pruned:
            col = pruned[t].astype(str)
            none = col == "no index"
            rows += [(t, "kept", int((~col.str.startswith("SKIP") & ~none).sum())), (t, "no index", int(none.sum()))]
    # px.bar(color="outcome")'s traces made directly (its machinery was a tenth of a Range page's run)
    fig = go.Figure([go.Bar(x=[x for x, o, _ in rows if o == outcome], y=[n for _, o, n in rows if o == outcome],
                            name=outcome, legendgroup=outcome, marker={"color": color}, orientation="v", showlegend=True,
                            textposition="auto", hovertemplate=hover([("outcome", outcome), ("decided by", "%{x}"),
                                                                       ("files", "%{y}")]))
                     for outcome, color in (("kept", "#1f77b4"), ("no index", "#bbbbbb"))
                     if any(o == outcome for _, o, _ in rows)])
    fig.update_layout(barmode="stack", height=300, legend={"title": {"text": "outcome"}, "tracegroupgap": 0},
                      xaxis_title="decided by", yaxis_title="sampled files" if sampled else "files",
                      title="Files that may match, by what decides"
                            + (f" (counts over a random sample of {len(pruned):,} of {population:,} live files)"
                               if sampled else ""))
    return _count_axis(fig, float(len(pruned)))
