"""Plotly traces split by a colour column as plotly express splits them, made directly: px's frame
machinery costs about 0.03 s a figure, a tenth of a page's run at 10,000 files
(tests/test_sampled_figures.py compares each figure made so with px's drawing of it)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.express as px
import plotly.io as pio


def colours() -> tuple[str, ...]:
    """The template's colours in the order px gives them to traces (the first: a one-colour chart's)."""
    return tuple(pio.templates[pio.templates.default].layout.colorway or px.colors.qualitative.Plotly)


def colour_groups(frame: pd.DataFrame, column: str) -> list[tuple[object, pd.DataFrame, str]]:
    """``frame`` split as px splits it for ``color=column``: the groups in order of first
    appearance, each with the template's next colour."""
    palette = colours()
    return [(value, part, palette[i % len(palette)])
            for i, (value, part) in enumerate(frame.groupby(column, sort=False, dropna=False))]


def colour_rows(frame: pd.DataFrame, column: str) -> list[tuple[object, np.ndarray, str]]:
    """:func:`colour_groups` as row positions: each group's value, its rows' positions in ``frame``
    (in frame order) and its colour, for a caller that cuts arrays taken once."""
    palette = colours()
    codes, uniques = pd.factorize(frame[column], sort=False, use_na_sentinel=False)  # first-appearance order
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(len(uniques) + 1))
    return [(value, order[bounds[i]:bounds[i + 1]], palette[i % len(palette)]) for i, value in enumerate(uniques)]


def hover(parts: list[tuple[str, str]]) -> str:
    """A px hover template: a ``label=value`` line per part."""
    return "<br>".join(f"{label}={value}" for label, value in parts) + "<extra></extra>"
