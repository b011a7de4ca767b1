"""Sorting and filtering an Arrow view over all its rows before paging, as :func:`pages.common.sort_and_filter`
does a pandas frame: a page that lists a 50,000-file view keeps it in Arrow (the table's own, shared)
and turns only the rows on screen into pandas."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import streamlit as st

from indexcore.frames.text import md
from pages import common

AS_LISTED = "(as listed)"


def cell_text(column: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray | pa.Array:
    """A column's cells as text (null stays null; a list's items joined with ", ")."""
    if pa.types.is_list(column.type) or pa.types.is_large_list(column.type):
        return pc.binary_join(column.cast(pa.list_(pa.string())), ", ")
    return column if pa.types.is_string(column.type) else column.cast(pa.string())


def containing(table: pa.Table, text: str, columns: list[str]) -> pa.Table:
    """The rows of ``table`` where any of ``columns`` has ``text`` in its cell's text, case-insensitive."""
    hit = None
    for name in columns:
        found = pc.fill_null(pc.match_substring(cell_text(table[name]), text, ignore_case=True), False)
        hit = found if hit is None else pc.or_(hit, found)
    return table if hit is None else table.filter(hit)


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
    """Past ``page_size`` rows, the sort and filter widgets of :func:`pages.common.sort_and_filter`
    (same keys and labels) applied to every row of ``table``; ``hidden`` columns are kept in the
    result but neither offered to sort by nor searched (they are not shown)."""
    if table.num_rows <= (page_size or common.PAGE_SIZE):
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
