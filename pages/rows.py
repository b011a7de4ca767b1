"""Rows on screen: a frame or an Arrow view sorted and filtered over all its rows, then paged.

:func:`show_frame` orders a pandas frame's row positions (no copy of the frame) and takes out only
the page on screen; :func:`sort_and_filter_table` does the same for an Arrow view, which a page that
lists a 50,000-file view keeps in Arrow (the table's own, shared)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import streamlit as st

from indexcore.frames.text import md
from indexcore.views.common import to_frame

AS_LISTED = "(as listed)"
PAGE_SIZE = 200


def cell_text(column: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray | pa.Array:
    """A column's cells as text (null stays null; a list's items joined with ", ")."""
    if pa.types.is_list(column.type) or pa.types.is_large_list(column.type):
        return pc.binary_join(column.cast(pa.list_(pa.string())), ", ")
    return column if pa.types.is_string(column.type) else column.cast(pa.string())


def containing(table: pa.Table, text: str, columns: list[str]) -> pa.Table:
    """The rows of ``table`` where any of ``columns`` has ``text`` in its cell's text, case-insensitive
    (a dictionary column's texts searched once each, not decoded per row)."""
    hit = None
    for name in columns:
        column = table[name]
        if pa.types.is_dictionary(column.type):
            found = pa.chunked_array([_found(c.dictionary, text).take(c.indices) for c in column.chunks], pa.bool_())
        else:
            found = _found(column, text)
        found = pc.fill_null(found, False)
        hit = found if hit is None else pc.or_(hit, found)
    return table if hit is None else table.filter(hit)


def _found(column, text: str):
    return pc.match_substring(cell_text(column), text, ignore_case=True)


def sorted_by(table: pa.Table, column: str, descending: bool) -> pa.Table:
    """``table`` sorted by ``column`` (stable, nulls last); a column Arrow cannot order (lists) by its text."""
    order = "descending" if descending else "ascending"
    try:
        at = pc.sort_indices(table, sort_keys=[(column, order, "at_end")])
    except (pa.ArrowNotImplementedError, pa.ArrowTypeError):
        at = pc.sort_indices(pa.table({"text": cell_text(table[column])}), sort_keys=[("text", order, "at_end")])
    return table.take(at)


def sort_and_filter_table(table: pa.Table, key: str, hidden: tuple[str, ...] = (),
                          page_size: int | None = None) -> pa.Table:
    """Past ``page_size`` rows, the sort and filter widgets of :func:`sort_and_filter`
    (same keys and labels) applied to every row of ``table``; ``hidden`` columns are kept in the
    result but neither offered to sort by nor searched (they are not shown)."""
    if table.num_rows <= (page_size or PAGE_SIZE):
        return table
    shown = [name for name in table.column_names if name not in hidden]
    c1, c2, c3 = st.columns([2, 1, 2], vertical_alignment="bottom")
    by = c1.selectbox(f"Sort all {table.num_rows:,} rows by", [AS_LISTED, *shown], key=f"{key}_sort",
                      help="A click on a column header sorts only the page on screen")
    descending = c2.toggle("Descending", value=True, key=f"{key}_desc")
    text = c3.text_input("Keep rows containing", key=f"{key}_grep", help="Any column's text, case-insensitive")
    if text:
        table = containing(table, text, shown)
        st.caption(md(f"{table.num_rows:,} row(s) contain {text!r}"))
    if by != AS_LISTED:
        table = sorted_by(table, by, descending)
    return table


def show_table(table: pa.Table, key: str, hidden: tuple[str, ...] = (), page_size: int | None = None) -> None:
    """An Arrow view's rows on screen: sorted and filtered over every row (:func:`sort_and_filter_table`),
    paged, and only the page shown becomes pandas; ``hidden`` columns are not shown."""
    ordered = sort_and_filter_table(table, key, hidden, page_size)
    page = page_rows(ordered.num_rows, key, page_size)
    shown = ordered.slice(page.start, page.stop - page.start).drop_columns(list(hidden))
    st.dataframe(to_frame(shown), hide_index=True, width="stretch")


def page_rows(rows: int, key: str, page_size: int | None = None) -> slice:
    """The rows of the page the user is on (a page picker past ``page_size``, default :data:`PAGE_SIZE`)."""
    page_size = page_size or PAGE_SIZE
    if rows <= page_size:
        return slice(0, rows)
    pages = (rows - 1) // page_size + 1
    page = st.number_input(f"Page (of {pages}, {rows:,} rows)", min_value=1, max_value=pages, value=1,
                           key=f"{key}_page")
    return slice((page - 1) * page_size, page * page_size)


def sort_and_filter(frame: pd.DataFrame, key: str, page_size: int | None = None,
                    columns: list | None = None, rows: np.ndarray | None = None) -> np.ndarray | None:
    """Past ``page_size`` rows, a sort and a filter over ALL the rows, to apply before paging: a
    header click in st.dataframe sorts the page on screen only, so "largest file" would be the
    largest of 200. The rows' positions in ``frame`` in the order picked (None: every row as it is,
    for shorter frames, whose header sorts every row), from ``rows`` (positions; None: all) over
    ``columns`` (None: all). Neither the frame nor its columns are copied: the sort orders one
    column's values, the filter reads each column once (a 1,000,000-file frame copied whole took
    hundreds of megabytes per sort)."""
    n = len(frame) if rows is None else len(rows)
    if n <= (page_size or PAGE_SIZE):
        return rows
    names = list(frame.columns) if columns is None else list(columns)
    c1, c2, c3 = st.columns([2, 1, 2], vertical_alignment="bottom")
    by = c1.selectbox(f"Sort all {n:,} rows by", [AS_LISTED, *map(str, names)],
                      key=f"{key}_sort", help="A click on a column header sorts only the page on screen")
    descending = c2.toggle("Descending", value=True, key=f"{key}_desc")
    text = c3.text_input("Keep rows containing", key=f"{key}_grep", help="Any column's text, case-insensitive")
    at = np.arange(len(frame)) if rows is None else np.asarray(rows, np.int64)

    def values(col) -> pd.Series:  # the column at the kept rows, numbered 0.. (a Series of its own)
        column = frame.iloc[:, frame.columns.get_loc(col)]
        return pd.Series(column.array if rows is None and len(at) == len(frame) else column.array.take(at), copy=False)

    if text:
        hit = np.zeros(len(at), bool)
        for col in names:
            hit |= values(col).astype(str).str.contains(text, case=False, regex=False, na=False).to_numpy()
        at = at[hit]
        st.caption(md(f"{len(at):,} row(s) contain {text!r}"))
    if by != AS_LISTED:
        column = values(names[[str(c) for c in names].index(by)])
        try:
            order = column.sort_values(ascending=not descending, kind="stable", na_position="last").index
        except TypeError:  # mixed kinds in one column: order by their text
            order = column.sort_values(ascending=not descending, kind="stable", na_position="last",
                                       key=lambda v: v.astype(str)).index
        at = at[np.asarray(order)]
    return at


def show_frame(frame: pd.DataFrame, key: str, page_size: int | None = None, columns: list | None = None,
               rows: np.ndarray | None = None, **kwargs) -> None:
    """A dataframe's ``columns`` (None: all) at ``rows`` (positions; None: all), paginated when
    there are more than ``page_size`` rows, sorted and filtered over every row before paging
    (:func:`sort_and_filter`); only the page on screen is taken out of the frame."""
    at = sort_and_filter(frame, key, page_size, columns, rows)
    page = page_rows(len(frame) if at is None else len(at), key, page_size)
    where = np.arange(len(frame))[page] if at is None else at[page]
    shown = frame.iloc[where] if columns is None else frame.iloc[where, [frame.columns.get_loc(c) for c in columns]]
    st.dataframe(shown, hide_index=True, width="stretch", **kwargs)
