"""Plotly figures built from :mod:`indexcore.views` (``view(...).to_pandas()``) and the
frames of :mod:`indexcore.frames` derived from them (app and notebooks).

Each function takes a frame and returns a ``plotly.graph_objects.Figure``; an empty frame
gives an empty figure with a note instead of raising. Every text from data (cells, column
names, titles) reaches Plotly as text: :func:`_as_text` escapes what each function is given,
since Plotly renders ``<a href>``, ``<b>`` and friends in titles, ticks, legends and hovers.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Sequence

import pandas as pd
import plotly.express as px
import plotly.graph_objects as go

from indexcore.frames.text import html
from indexcore.frames.traces import colour_groups, colour_rows, colours, hover

_HEIGHT = 360
#: At most this many bars, lines or heatmap rows in a chart of files, filters or groups, and
#: this many points in a scatter: a 50,000-file table shows its top or a sample, and the title
#: says how many of how many are drawn.
MAX_BARS = 60
MAX_POINTS = 2000


def _escaped(value):
    """``value`` with every string in it (a frame's cells and column names, list items) as
    :func:`~indexcore.frames.text.html` text; numbers, times and callables unchanged."""
    if isinstance(value, str):
        return html(value)
    if isinstance(value, pd.DataFrame):
        out = value.rename(columns=lambda c: html(c) if isinstance(c, str) else c)
        for col in out.columns:
            cells = out[col]
            if cells.dtype != object and not pd.api.types.is_string_dtype(cells):
                continue
            if _marked(cells):
                out[col] = cells.map(lambda v: html(v) if isinstance(v, str) else v)
        return out
    if isinstance(value, list | tuple):
        return type(value)(_escaped(v) for v in value)
    return value


def _marked(cells: pd.Series) -> bool:
    """Whether any string among ``cells`` holds ``<``, ``>`` or ``&``: each distinct cell looked at
    once (a column of a few values or files repeated over thousands of rows)."""
    try:
        distinct = pd.unique(cells.to_numpy())
    except TypeError:  # unhashable cells (lists, dicts): each one
        distinct = cells.to_numpy()
    return any(isinstance(v, str) and ("<" in v or ">" in v or "&" in v) for v in distinct)


def _as_text(fn: Callable[..., go.Figure]) -> Callable[..., go.Figure]:
    """The figure ``fn`` draws from its arguments with every string in them escaped
    (:func:`_escaped`): column-name arguments and the frame's columns stay in step."""

    @functools.wraps(fn)
    def draw(*args, **kwargs) -> go.Figure:
        return fn(*(_escaped(a) for a in args), **{k: _escaped(v) for k, v in kwargs.items()})

    return draw


def _empty(title: str, note: str = "nothing to show") -> go.Figure:
    fig = go.Figure()
    fig.update_layout(title=title, height=220, xaxis_visible=False, yaxis_visible=False,
                      annotations=[{"text": note, "showarrow": False, "font": {"size": 14}}])
    return fig


def capped(frame: pd.DataFrame, limit: int, by: str | None = None, what: str = "files",
           ascending: bool = False) -> tuple[pd.DataFrame, str]:
    """``frame`` cut to ``limit`` rows and the note saying so (empty when nothing was cut).

    With ``by``: the ``limit`` rows largest (``ascending``: smallest) in that column; without:
    an evenly spaced sample in the frame's order, so its spread and extremes survive.
    """
    if len(frame) <= limit:
        return frame, ""
    if by is not None:
        out = frame.sort_values(by, ascending=ascending, kind="stable").head(limit)
        how = "smallest" if ascending else "largest"
        return out, f" ({how} {limit:,} of {len(frame):,} {what} by {LABELS.get(by, by.replace('_', ' '))})"
    step = (len(frame) - 1) / (limit - 1) if limit > 1 else 1
    out = frame.iloc[sorted({round(i * step) for i in range(limit)})]
    return out, f" (a sample of {len(out):,} of {len(frame):,} {what})"


def _count_axis(fig: go.Figure, top: float, axis: str = "y") -> go.Figure:
    """Whole-number ticks on an axis of counts (no 0.5 files): one tick per unit up to 10, else
    Plotly's own steps, which are whole numbers above that."""
    settings = {"tickformat": ",d", **({"tick0": 0, "dtick": 1} if top <= 10 else {})}
    fig.update_layout({f"{axis}axis": settings})
    return fig


def _short(name: str, keep: int = 14) -> str:
    """A data file name shortened for an axis label: ``data-<uuid>-<n>.parquet`` -> ``<uuid[:8]>…-<n>``."""
    parts = name.rsplit(".", 1)[0].split("-")
    if parts[0] == "data" and len(parts) >= 7:
        return f"{parts[1]}…-{parts[-1]}"
    if len(name) <= keep + 12:
        return name
    return f"{name[:keep]}…{name[-10:]}"


def _words(*columns: str) -> dict[str, str]:
    """Axis and hover names for frame columns: ``row_count`` -> ``row count``."""
    return {c: LABELS.get(c, c.replace("_", " ")) for c in columns}


LABELS = {"size_bytes": "data bytes", "file_size": "data bytes", "file_size_in_bytes": "data bytes",
          "record_count": "records", "file_count": "files", "cardinality": "rows", "value": "value",
          "commit_time": "commit time (UTC)", "total_record_count": "total records",
          "delta_record_count": "records added", "index_kinds": "index kinds", "file": "data file",
          "fill_ratio": "fill ratio (bits set / bits)", "configured_items": "configured items",
          "estimated_items": "estimated distinct items", "estimated_fpp": "estimated fpp",
          "configured_fpp": "configured fpp", "recommended_items": "items for the target fpp",
          "keys": "keys (hash codes)", "snapshot_id": "snapshot", "schema_id": "schema"}


def _with_labels(frame: pd.DataFrame) -> pd.DataFrame:
    out = frame.copy()
    if "file_name" in out.columns:
        short = out["file_name"].map(_short)
        unique = out[["file_name"]].assign(s=short).drop_duplicates()
        out["file"] = short if not unique["s"].duplicated().any() else out["file_name"]
    return out


@_as_text
def warehouse_sizes(overview: pd.DataFrame) -> go.Figure:
    """Rows and bytes per table."""
    if overview.empty or "size_bytes" not in overview:
        return _empty("Tables")
    frame = overview.dropna(subset=["size_bytes"])
    fig = px.bar(frame, x="table", y="size_bytes", color="index_kinds", hover_data=["files", "rows"],
                 labels=_words("table", "size_bytes", "index_kinds", "files", "rows"),
                 title="Data bytes per table (color: index kinds)")
    fig.update_layout(height=_HEIGHT, xaxis_tickangle=-30)
    return fig


@_as_text
def snapshot_timeline(snapshots: pd.DataFrame, selected: int | None = None) -> go.Figure:
    """Total records per snapshot over commit time, colored by commit kind; the picked one marked."""
    if snapshots.empty:
        return _empty("Snapshots", "no snapshots")
    fig = px.scatter(snapshots, x="commit_time", y="total_record_count", color="commit_kind",
                     hover_data=["snapshot_id", "schema_id", "delta_record_count"],
                     labels=_words("commit_time", "total_record_count", "commit_kind", "snapshot_id", "schema_id",
                                   "delta_record_count"),
                     title="Snapshot timeline (total records)")
    fig.add_trace(go.Scatter(x=snapshots["commit_time"], y=snapshots["total_record_count"], mode="lines",
                             line={"color": "lightgray"}, showlegend=False, hoverinfo="skip"))
    fig.update_traces(marker={"size": 11}, selector={"mode": "markers"})
    if selected is not None:
        hit = snapshots[snapshots["snapshot_id"] == selected]
        if not hit.empty:
            fig.add_trace(go.Scatter(x=hit["commit_time"], y=hit["total_record_count"], mode="markers",
                                     marker={"size": 20, "symbol": "circle-open", "color": "red"},
                                     name=f"picked: snapshot {selected}", hoverinfo="skip"))
    fig.update_layout(height=_HEIGHT)
    return fig


@_as_text
def size_skew(groups: pd.DataFrame, by: str = "bucket") -> go.Figure:
    """Bytes per partition (and bucket) from ``$buckets`` / ``$partitions``: tall bars are the skew."""
    if groups.empty:
        return _empty("Size per group")
    group = "partition / bucket" if by == "bucket" else "partition"
    mean = groups["file_size_in_bytes"].mean()
    frame, note = capped(groups, MAX_BARS, "file_size_in_bytes", f"{group}s")
    frame = frame.copy()
    if by == "bucket" and "bucket" in frame:
        frame["group"] = frame["partition"].astype(str) + " / b" + frame["bucket"].astype(str)
    else:
        frame["group"] = frame["partition"].astype(str)
    fig = px.bar(frame, x="group", y="file_size_in_bytes", hover_data=["record_count", "file_count"],
                 labels={**_words("file_size_in_bytes", "record_count", "file_count"), "group": group},
                 title=f"Data bytes per {group} (dashed: mean){note}")
    fig.add_hline(y=mean, line_dash="dash", annotation_text="mean")
    fig.update_layout(height=_HEIGHT, xaxis_type="category")
    return fig


@_as_text
def top_values(top: pd.DataFrame, title: str = "Most frequent values") -> go.Figure:
    if top.empty:
        return _empty(title)
    # px.bar's one trace and layout, made directly (its frame machinery was most of this figure's time)
    words = {**_words("value", "cardinality"), "files": "files holding it"}
    parts = [("value", "%{x}"), ("cardinality", "%{y}")] + ([("files", "%{customdata[0]}")] if "files" in top else [])
    fig = go.Figure([go.Bar(x=top["value"].to_numpy(), y=top["cardinality"].to_numpy(), name="", legendgroup="",
                            orientation="v", showlegend=False, textposition="auto",
                            marker={"color": colours()[0], "pattern": {"shape": ""}},
                            customdata=top[["files"]].to_numpy() if "files" in top else None,
                            hovertemplate=hover([(words[c], v) for c, v in parts]))])
    fig.update_layout(title=title, xaxis_title=words["value"], yaxis_title=words["cardinality"],
                      legend_tracegroupgap=0, barmode="relative", height=_HEIGHT, xaxis_type="category")
    return _count_axis(fig, float(top["cardinality"].max()))


def values_per_file(values: pd.DataFrame, top: Sequence[str], title: str = "Value rows per file") -> go.Figure:
    """Stacked bars: for each file, the rows of each of the ``top`` values (the rows of other
    values left before the texts are escaped: thousands of files by a few values each)."""
    top = list(top)
    return _values_per_file(values[values["value"].isin(top)] if not values.empty else values, top, title,
                            values.empty)


@_as_text
def _values_per_file(frame: pd.DataFrame, top: list[str], title: str, empty: bool) -> go.Figure:
    """:func:`values_per_file` of the rows of the ``top`` values (``empty``: no values at all)."""
    if empty:
        return _empty(title)
    per_file = frame.groupby("file_name", as_index=False)["cardinality"].sum()
    kept, note = capped(per_file, MAX_BARS, "cardinality")
    frame = _with_labels(frame[frame["file_name"].isin(kept["file_name"])])
    extra = ["file_name", "partition", "bucket"]
    words = _words("file", "cardinality", "value", *extra)
    # the columns taken once and cut per value (colour_groups' parts, without a frame per value)
    files, cards, custom = frame["file"].to_numpy(), frame["cardinality"].to_numpy(), frame[extra].to_numpy()
    fig = go.Figure([go.Bar(  # px.bar(color="value")'s traces, made directly (frames/traces.py)
        x=files[rows], y=cards[rows], name=value, legendgroup=value, orientation="v",
        showlegend=True, textposition="auto", marker={"color": colour, "pattern": {"shape": ""}},
        customdata=custom[rows],
        hovertemplate=hover([(words["value"], value), (words["file"], "%{x}"), (words["cardinality"], "%{y}"),
                             *((words[h], f"%{{customdata[{i}]}}") for i, h in enumerate(extra))]))
        for value, rows, colour in colour_rows(frame, "value")])
    fig.update_layout(xaxis_title=words["file"], yaxis_title=words["cardinality"], legend_title=words["value"],
                      legend_tracegroupgap=0, title=title + note, height=_HEIGHT, barmode="stack")
    return _count_axis(fig, float(frame.groupby("file")["cardinality"].sum().max()) if not frame.empty else 0.0)


@_as_text
def bitmap_lookup_bytes(layouts: pd.DataFrame) -> go.Figure:
    """V1 vs V2 per file: total index bytes and the bytes a point lookup reads."""
    if layouts.empty:
        return _empty("Bitmap layout")
    sizes = layouts.groupby("file_name", as_index=False)["size"].max()
    kept, note = capped(sizes, MAX_BARS // 2, "size")
    frame = _with_labels(layouts[layouts["file_name"].isin(kept["file_name"])])
    measures = {"size": "index size", "head_bytes": "head", "lookup_bytes": "point lookup"}
    long = frame.melt(id_vars=["file", "file_name", "layout"], value_vars=list(measures), var_name="measure",
                      value_name="bytes")
    long["measure"] = long["measure"].map(measures)
    fig = px.bar(long, x="file", y="bytes", color="layout", barmode="group", facet_col="measure",
                 hover_data=["file_name"], labels={"file": "data file", "bytes": "bytes", "file_name": "file",
                                                   "measure": "measure"},
                 title="V1 vs V2 layout per file: index size, head and point-lookup bytes" + note)
    fig.for_each_annotation(lambda a: a.update(text=a.text.split("=", 1)[-1]))
    fig.update_yaxes(matches=None, showticklabels=True)
    fig.update_layout(height=_HEIGHT + 60)
    return fig


@_as_text
def bloom_fill(blooms: pd.DataFrame, population: int | None = None) -> go.Figure:
    """Histogram of bloom filter fill ratios (near 1: saturated); a sample of ``population`` says so."""
    frame = blooms.dropna(subset=["fill_ratio"])
    if frame.empty:
        return _empty("Bloom filter fill")
    sampled, words = population is not None and population > len(frame), _words("fill_ratio", "column")
    fig = go.Figure([go.Histogram(
        x=part["fill_ratio"].to_numpy(), name=value, legendgroup=value, bingroup="x", nbinsx=20, orientation="v",
        showlegend=True, marker={"color": colour, "pattern": {"shape": ""}},
        hovertemplate=hover([(words["column"], value), (words["fill_ratio"], "%{x}"), ("count", "%{y}")]))
        for value, part, colour in colour_groups(frame, "column")])
    fig.update_layout(xaxis_title=words["fill_ratio"], legend_title=words["column"], legend_tracegroupgap=0,
                      barmode="relative", title="Fill ratio per bloom filter (near 1: saturated)"
                            + (f": a random sample of {len(frame):,} of {population:,} filters" if sampled else ""),
                      xaxis_range=[0, 1], height=_HEIGHT, bargap=0.05, xaxis_tickformat=".0%",
                      yaxis_title="sampled bloom filters" if sampled else "bloom filters")
    return _count_axis(fig, float(len(frame)))


@_as_text
def bloom_items(blooms: pd.DataFrame) -> go.Figure:
    """Estimated distinct items vs the configured ``items``, per filter (log axes)."""
    frame = blooms.dropna(subset=["estimated_items"])
    if frame.empty:
        return _empty("Bloom filter items")
    frame, note = capped(frame.sort_values(["estimated_items", "configured_items"], kind="stable"), MAX_POINTS,
                         what="filters")
    frame = _with_labels(frame)
    extra = ["file_name", "fill_ratio", "recommended_items"]
    words = _words("configured_items", "estimated_items", "column", *extra)
    fig = go.Figure([go.Scatter(
        x=part["configured_items"].to_numpy(), y=part["estimated_items"].to_numpy(), mode="markers", name=value,
        legendgroup=value, orientation="v", showlegend=True, marker={"color": colour, "symbol": "circle", "size": 11},
        customdata=part[extra].to_numpy(),
        hovertemplate=hover([(words["column"], value), (words["configured_items"], "%{x}"), (words["estimated_items"],
                             "%{y}"), *((words[h], f"%{{customdata[{i}]}}") for i, h in enumerate(extra))]))
        for value, part, colour in colour_groups(frame, "column")])
    fig.update_layout(xaxis={"title": words["configured_items"], "type": "log", "dtick": 1},
                      legend={"title": words["column"], "tracegroupgap": 0},
                      yaxis={"title": words["estimated_items"], "type": "log", "dtick": 1}, height=_HEIGHT,
                      title="Estimated distinct items vs configured items (dashed: equal)" + note)
    lo = max(1.0, min(frame["configured_items"].min(), frame["estimated_items"].min()))
    hi = max(frame["configured_items"].max(), frame["estimated_items"].max())
    fig.add_trace(go.Scatter(x=[lo, hi], y=[lo, hi], mode="lines", line={"dash": "dash", "color": "gray"},
                             name="items = configured"))
    return fig


@_as_text
def bloom_fpp(blooms: pd.DataFrame) -> go.Figure:
    """Estimated false-positive probability vs the configured fpp, per filter (log axis)."""
    frame = blooms.dropna(subset=["estimated_fpp"])
    if frame.empty:
        return _empty("Bloom filter FPP")
    frame, note = capped(frame, MAX_BARS, "estimated_fpp", "filters")
    frame = _with_labels(frame)
    frame["label"] = frame["file"] + " · " + frame["column"].astype(str)
    floor = 1e-12
    frame["estimated_fpp_shown"] = frame["estimated_fpp"].clip(lower=floor)
    extra = ["file_name", "estimated_fpp", "configured_fpp"]
    words = {**_words("column", *extra), "label": "filter (data file · column)"}
    fig = go.Figure([go.Bar(
        x=part["label"].to_numpy(), y=part["estimated_fpp_shown"].to_numpy(), name=value, legendgroup=value,
        orientation="v", showlegend=True, textposition="auto", marker={"color": colour, "pattern": {"shape": ""}},
        customdata=part[extra].to_numpy(),
        hovertemplate=hover([(words["column"], value), (words["label"], "%{x}"),
                              (words["estimated_fpp"], "%{customdata[1]}"), (words["file_name"], "%{customdata[0]}"),
                              (words["configured_fpp"], "%{customdata[2]}")]))
        for value, part, colour in colour_groups(frame, "column")])
    fig.update_layout(xaxis_title=words["label"], legend_title=words["column"], legend_tracegroupgap=0,
                      barmode="relative", title="Estimated FPP per filter (dashed: configured)" + note, height=_HEIGHT,
                      yaxis={"type": "log", "exponentformat": "power", "dtick": 2,
                             "title": f"estimated fpp (shown down to {floor:g})"})
    for fpp in sorted(set(frame["configured_fpp"].dropna())):
        fig.add_hline(y=fpp, line_dash="dash", annotation_text=f"fpp {fpp:g}")
    return fig


@_as_text
def dv_heatmap(buckets: pd.DataFrame) -> go.Figure:
    """Deleted/rows density as a partition x bucket heatmap."""
    if buckets.empty:
        return _empty("Deletion vector density")
    densest = buckets.groupby("partition", as_index=False)["density"].max()
    kept, note = capped(densest, MAX_BARS, "density", "partitions")
    grid = buckets[buckets["partition"].isin(kept["partition"])].pivot_table(
        index="partition", columns="bucket", values="density", aggfunc="max")
    fig = px.imshow(grid, color_continuous_scale="Reds", zmin=0, zmax=max(0.01, float(grid.max().max())),
                    text_auto=".0%" if grid.size <= 400 else False, aspect="auto",
                    labels={"color": "deleted / rows", "x": "bucket", "y": "partition"},
                    title="Deletion density per partition x bucket" + note)
    fig.update_coloraxes(colorbar_tickformat=".0%")
    fig.update_xaxes(type="category")
    fig.update_yaxes(type="category")
    fig.update_layout(height=max(_HEIGHT, 30 * len(grid)))
    return fig


@_as_text
def dv_trend(trend: pd.DataFrame) -> go.Figure:
    """Deleted rows per snapshot (bars, left) and the deleted / rows density (line, right, 0-100%)."""
    title = "Deleted rows across snapshots"
    if trend.empty:
        return _empty(title)
    x = trend["snapshot_id"].astype(str)
    fig = go.Figure()
    fig.add_trace(go.Bar(x=x, y=trend["deleted"], name="deleted rows", yaxis="y",
                         customdata=trend[["row_count", "dv_files"]],
                         hovertemplate="snapshot %{x}<br>%{y:,} deleted rows of %{customdata[0]:,}"
                                       "<br>%{customdata[1]} files with a DV<extra></extra>"))
    fig.add_trace(go.Scatter(x=x, y=trend["density"], name="density (right axis)", yaxis="y2",
                             mode="lines+markers",
                             hovertemplate="snapshot %{x}<br>%{y:.1%} of the rows deleted<extra></extra>"))
    fig.update_layout(title=title, height=_HEIGHT, xaxis={"title": "snapshot", "type": "category"},
                      yaxis={"title": "deleted rows", "rangemode": "tozero"},
                      yaxis2={"title": "deleted / rows", "overlaying": "y", "side": "right", "range": [0, 1],
                              "tickvals": [0, 0.25, 0.5, 0.75, 1], "tickformat": ".0%", "showgrid": False,
                              "zeroline": False},
                      legend={"orientation": "h", "y": 1.02, "yanchor": "bottom", "x": 1, "xanchor": "right"})
    return _count_axis(fig, float(trend["deleted"].max()))


@_as_text
def hash_buckets(frame: pd.DataFrame, target: int) -> go.Figure:
    """Keys per bucket with ``dynamic-bucket.target-row-num`` as a dashed line across the chart."""
    title = f"Keys per bucket vs the target of {target:,} rows per bucket"
    if frame.empty:
        return _empty("Hash index", "no hash index in this snapshot")
    data, note = capped(frame, MAX_BARS, "keys", "buckets")
    data = data.copy()
    data["bucket"] = data["bucket"].astype(str)
    fig = px.bar(data, x="bucket", y="keys", color="partition", barmode="group", title=title + note,
                 hover_data=["distinct", "recorded_rows", "index_files", "fill"],
                 labels={**_words("bucket", "keys", "partition", "distinct", "recorded_rows", "index_files"),
                         "fill": "keys / target"})
    fig.update_traces(hovertemplate=None)
    buckets = list(dict.fromkeys(sorted(data["bucket"], key=lambda b: (len(b), b))))
    line = {"dash": "dash", "color": "crimson", "width": 2}
    fig.add_hline(y=target, line=line, annotation_text=f"target {target:,}", annotation_position="top left")
    fig.add_trace(go.Scatter(x=[None], y=[None], mode="lines", line=line, hoverinfo="skip",
                             name="dynamic-bucket.target-row-num"))
    top = max(float(data["keys"].max()), float(target))
    fig.update_layout(height=_HEIGHT, xaxis={"type": "category", "categoryorder": "array", "categoryarray": buckets},
                      yaxis={"range": [0, top * 1.15]})
    return _count_axis(fig, top)


@_as_text
def funnel(stages: Sequence[tuple[str, int]], title: str = "From all files to files read") -> go.Figure:
    if not stages:
        return _empty(title)
    fig = go.Figure(go.Funnel(y=[s[0] for s in stages], x=[s[1] for s in stages],
                              textinfo="value+percent initial", textposition="outside",
                              hovertemplate="%{y}: %{x} files left (%{percentInitial:.0%} of all)<extra></extra>"))
    fig.update_layout(title=title, height=_HEIGHT, yaxis_title="stage", xaxis_title="files")
    return fig


@_as_text
def funnel_cost(stages: pd.DataFrame, title: str = "Files and data bytes left after each stage",
                size_text: Callable[[int], str] = lambda n: f"{n:,} B") -> go.Figure:
    """The funnel with data bytes beside files: one funnel per measure over the same stages
    (a frame with ``stage``, ``files`` and ``bytes``, as :func:`indexcore.frames.what_if.funnel_frame` gives);
    ``size_text`` writes a byte count (the app passes its own formatter)."""
    if stages.empty or not {"stage", "files", "bytes"} <= set(stages.columns):
        return _empty(title)
    fig = go.Figure()
    for key, value in copy.deepcopy(_two_funnels_layout()):  # the subplots' axes and titles
        fig.layout[key] = value
    files, size = stages["files"].astype(int), stages["bytes"].astype(int)

    def share(values: pd.Series) -> list[str]:
        first = values.iloc[0] or 1
        return [f"{v / first:.0%}" for v in values]

    for col, values, labels, what in ((1, files, [f"{v:,}" for v in files], "files"),
                                      (2, size, [size_text(v) for v in size], "bytes")):
        text = [f"{label} ({pct})" for label, pct in zip(labels, share(values), strict=True)]
        fig.add_trace(go.Funnel(y=stages["stage"], x=values, name=what, text=text, textinfo="text",
                                textposition="auto", constraintext="none",
                                hovertemplate=f"%{{y}}: %{{text}} {what} left<extra></extra>"))
        fig.data[-1].xaxis, fig.data[-1].yaxis = (f"x{col}", f"y{col}") if col > 1 else ("x", "y")
    fig.layout.title, fig.layout.height, fig.layout.showlegend = {"text": title}, _HEIGHT, False
    return fig


@functools.cache
def _two_funnels_layout() -> tuple[tuple[str, object], ...]:
    """The layout ``make_subplots`` gives two side-by-side funnels on a shared y axis (without its
    template, which a new figure has), made once per process: :func:`funnel_cost` lays it on its
    figure property by property and puts each trace on its axes as ``add_trace(row=, col=)`` does,
    the same figure JSON in about 5 ms instead of make_subplots' 14 (its ``update_layout`` checks
    each path it sets)."""
    from plotly.subplots import make_subplots

    layout = make_subplots(rows=1, cols=2, shared_yaxes=True, horizontal_spacing=0.04,
                           subplot_titles=("files", "data bytes")).to_dict()["layout"]
    return tuple((key, value) for key, value in layout.items() if key != "template")


@_as_text
def bar(frame: pd.DataFrame, x: str, y: str, title: str, color: str | None = None) -> go.Figure:
    """A plain bar chart of two columns (Spark results, anything tabular)."""
    if frame.empty or x not in frame or y not in frame:
        return _empty(title)
    color = color if color in frame else None
    fig = px.bar(frame, x=x, y=y, color=color, title=title, labels=_words(*[c for c in (x, y, color) if c]))
    fig.update_layout(height=_HEIGHT, xaxis_type="category", yaxis_rangemode="tozero")
    values = pd.to_numeric(frame[y], errors="coerce").fillna(0)
    if not (values != 0).any():
        fig.update_yaxes(range=[0, 1], dtick=1)
    elif (values == values.round()).all():  # counts (rows, files): whole-number ticks
        stacked = values.groupby(frame[x]).sum() if color else values
        _count_axis(fig, float(stacked.abs().max()))
    return fig


@_as_text
def global_index_coverage(frame: pd.DataFrame) -> go.Figure:
    """The table's row ids per indexed field: indexed segments, gaps, and index ranges beyond the table."""
    title = "Global index coverage of the table's row ids"
    if frame.empty:
        return _empty(title, "no global index in this snapshot")
    colors = {"indexed": "seagreen", "gap": "crimson", "beyond table": "lightgray"}
    fig = go.Figure()
    labels = [f"{f} ({t})" for f, t in zip(frame["field"], frame["index_type"], strict=True)]
    for status, color in colors.items():
        part = frame[frame["status"] == status]
        if part.empty:
            continue
        fig.add_trace(go.Bar(
            y=[lab for lab, s in zip(labels, frame["status"], strict=True) if s == status], x=part["rows"],
            base=part["start"], orientation="h", name=status, marker_color=color,
            customdata=part[["start", "end", "rows"]].to_numpy(),
            hovertemplate="row ids %{customdata[0]}..%{customdata[1]} (%{customdata[2]} rows)<extra>" + status
                          + "</extra>"))
    fig.update_layout(title=title, barmode="overlay", height=max(_HEIGHT, 40 * frame["field"].nunique() + 120),
                      xaxis_title="row id", yaxis={"type": "category"})
    return fig


@_as_text
def advisor_benefit(existing: pd.DataFrame, candidates: pd.DataFrame) -> go.Figure:
    """Each existing and candidate index: bytes it stores against data bytes it skips for the workload.

    Takes :func:`indexcore.analysis.advise_statements.advice_summary`'s rows; an index far right and low
    costs more than it earns, one high and left pays off.
    """
    title = "Index bytes stored against data bytes skipped by the workload"
    rows = []
    for frame, kind, size in ((existing, "existing", "bytes"), (candidates, "candidate", "est_bytes")):
        if frame is None or frame.empty:
            continue
        for r in frame.to_dict("records"):
            rows.append({"index": f"{r['column']} {r['index_type']}", "kind": kind,
                         "bytes stored": r[size], "bytes skipped": r["bytes_skipped"]})
    if not rows:
        return _empty(title, "no index and no candidate")
    data = pd.DataFrame(rows)
    fig = px.scatter(data, x="bytes stored", y="bytes skipped", color="kind", text="index", title=title)
    fig.update_traces(textposition="top center", marker={"size": 12})
    fig.update_layout(height=_HEIGHT, xaxis_rangemode="tozero", yaxis_rangemode="tozero")
    return fig


TOP_TABLES = 25


@_as_text
def table_bytes(tables: pd.DataFrame, top: int = TOP_TABLES) -> go.Figure:
    """Data bytes and index bytes of the ``top`` largest tables, one horizontal bar pair per table.

    Takes :func:`indexcore.analysis.health.tables_frame`. The height grows with the tables shown
    and the legend sits above the plot, so 50 tables stay readable; the title says how many more
    tables were left out (the caller lists them all in a table).
    """
    if tables.empty or "data_bytes" not in tables:
        return _empty("Data and index bytes per table", "no table")
    shown = tables.dropna(subset=["data_bytes"]).nlargest(top, "data_bytes").iloc[::-1]
    more = len(tables) - len(shown)
    title = f"Data and index bytes, the {len(shown)} largest tables" if more else "Data and index bytes per table"
    if more:
        title += f" ({more} more not drawn)"
    fig = go.Figure()
    for col, name in (("data_bytes", "data bytes"), ("index_bytes", "index bytes")):
        fig.add_trace(go.Bar(y=shown["table"], x=shown[col], name=name, orientation="h",
                             customdata=shown[["files", "score"]].to_numpy(),
                             hovertemplate="%{y}: %{x:,} " + name + " (%{customdata[0]} files, health "
                                           "%{customdata[1]})<extra></extra>"))
    fig.update_layout(title=title, barmode="group", height=max(260, 26 * len(shown) + 140),
                      legend={"orientation": "h", "yanchor": "bottom", "y": 1.0, "x": 0},
                      xaxis={"title": "bytes", "tickformat": "~s"}, yaxis={"type": "category", "automargin": True},
                      margin={"l": 10, "r": 10, "t": 80, "b": 40})
    return fig
