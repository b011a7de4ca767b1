"""Streamlit glue shared by every page: warehouse/table/snapshot pickers, caching, error guard.

Nothing here decodes anything: it opens a warehouse with :func:`indexcore.open_warehouse`,
keeps the choice in ``st.session_state`` and caches :mod:`indexcore.evaluate.metrics` frames
per warehouse URL, table and snapshot.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

import indexcore
from indexcore.errors import IndexCoreError
from indexcore.evaluate import metrics
from indexcore.io import parse_storage_options

APP_DIR = Path(__file__).resolve().parent.parent
DEFAULT_WAREHOUSE = APP_DIR / "sample_warehouse"
PAGE_SIZE = 200

WH_KEY, TABLE_KEY, SNAPSHOT_KEY, MASTER_KEY = "warehouse_url", "table", "snapshot_id", "spark_master"
OPTIONS_KEY = "storage_options"


def _cli_warehouse() -> str | None:
    """``streamlit run app.py -- --warehouse URL``."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--warehouse")
    args, _ = parser.parse_known_args(sys.argv[1:])
    return args.warehouse


def _norm(url: str) -> str:
    return url if "://" in url else str(Path(url).expanduser().resolve())


def default_warehouse() -> str:
    """Command line, then ``INDEXCORE_WAREHOUSE``, then ``sample_warehouse/`` next to app.py."""
    return _norm(_cli_warehouse() or os.environ.get("INDEXCORE_WAREHOUSE") or str(DEFAULT_WAREHOUSE))


def allowed_roots() -> tuple[str, ...]:
    """``INDEXCORE_ALLOWED_ROOTS`` (os.pathsep-separated), else the default and the given warehouse."""
    raw = os.environ.get("INDEXCORE_ALLOWED_ROOTS")
    if raw:
        roots = [r for r in raw.split(os.pathsep) if r.strip()]
    else:
        roots = [str(DEFAULT_WAREHOUSE)]
        for given in (_cli_warehouse(), os.environ.get("INDEXCORE_WAREHOUSE")):
            if given:
                roots.append(given)
    return tuple(dict.fromkeys(_norm(r) for r in roots))


@st.cache_resource(show_spinner="Opening warehouse…")
def open_warehouse(url: str, roots: tuple[str, ...], options: tuple = ()):
    """One read-only Warehouse per (URL, allowed roots, storage options), shared by every session."""
    return indexcore.open_warehouse(url, allowed_roots=list(roots), storage_options=dict(options) or None)


@st.cache_data(show_spinner=False)
def table_names(url: str, roots: tuple[str, ...], options: tuple = ()) -> list[str]:
    return open_warehouse(url, roots, options).tables()


def storage_options() -> tuple:
    """The sidebar's storage options (``key=value`` per line) as sorted pairs, for cache keys."""
    lines = [ln.strip() for ln in st.session_state.get(OPTIONS_KEY, "").splitlines() if ln.strip()]
    return tuple(sorted(parse_storage_options(lines).items()))


@st.cache_data(show_spinner="Reading…", max_entries=256)
def cached_metric(name: str, url: str, roots: tuple[str, ...], table: str | None, snapshot_id: int | None,
                  kwargs: tuple = (), pass_snapshot: bool = True, options: tuple = ()) -> Any:
    """``metrics.<name>(table, snapshot_id=..., **kwargs)`` (``(warehouse)`` when table is None), cached.

    ``snapshot_id`` is part of the key even when not passed, so table-wide frames refresh with it.
    """
    wh = open_warehouse(url, roots, options)
    fn = getattr(metrics, name)
    if table is None:
        return fn(wh, **dict(kwargs))
    if pass_snapshot:
        kwargs = (*kwargs, ("snapshot_id", snapshot_id))
    return fn(wh.table(table), **dict(kwargs))


@contextmanager
def guard(what: str) -> Iterator[None]:
    """Show a failure of one page section as st.error and let the rest of the page run."""
    try:
        yield
    except IndexCoreError as exc:
        st.error(f"{what}: {exc}")
    except Exception as exc:  # the page must keep working whatever a section hits
        st.error(f"{what} failed: {type(exc).__name__}: {exc}")


class Context:
    """What the sidebar picked: warehouse, table and snapshot (None when not available)."""

    def __init__(self, url: str, roots: tuple[str, ...], warehouse, table_name: str | None,
                 snapshot_id: int | None, options: tuple = ()):
        self.url, self.roots, self.warehouse = url, roots, warehouse
        self.options = options
        self.table_name, self.snapshot_id = table_name, snapshot_id

    @property
    def table(self):
        return self.warehouse.table(self.table_name) if self.warehouse and self.table_name else None

    def metric(self, name: str, table: bool = True, snapshot: bool = True, **kwargs) -> Any:
        """A cached metrics frame for the picked table (``table=False``: the warehouse) and snapshot
        (``snapshot=False``: a table-wide frame such as the schema history)."""
        return cached_metric(name, self.url, self.roots, self.table_name if table else None,
                             self.snapshot_id if table else None, tuple(sorted(kwargs.items())), snapshot,
                             self.options)


def _snapshot_label(table, sid: int) -> str:
    try:
        snap = table.snapshot(sid)
    except IndexCoreError:
        return f"#{sid} (unreadable)"
    when = dt.datetime.fromtimestamp(snap.time_millis / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M:%S") \
        if snap.time_millis else "?"
    return f"#{sid} · {snap.commit_kind or '?'} · {when}"


def time_travel_to(table, when: dt.datetime) -> int | None:
    """The snapshot id live at ``when`` (UTC), or None when the table had none yet."""
    millis = int(when.replace(tzinfo=dt.UTC).timestamp() * 1000)
    snap = table.snapshot_at(millis)
    return snap.id if snap else None


def sidebar() -> Context:
    """Draw the pickers in the sidebar and return the current :class:`Context`."""
    roots = allowed_roots()
    st.session_state.setdefault(WH_KEY, default_warehouse())
    st.session_state.setdefault(MASTER_KEY, "local[*]")
    sb = st.sidebar
    sb.text_input("Warehouse (local path or fsspec URL)", key=WH_KEY,
                  help="Must lie inside the allowed roots: " + ", ".join(roots))
    sb.text_area("Storage options (key=value per line)", key=OPTIONS_KEY,
                 help="fsspec options for the backend, e.g. endpoint_url=http://localhost:9000 for MinIO; "
                      "FSSPEC_S3_ENDPOINT_URL and friends also work")
    url = _norm(st.session_state[WH_KEY].strip())
    wh, names, options = None, [], ()
    try:
        options = storage_options()
        wh = open_warehouse(url, roots, options)
        names = table_names(url, roots, options)
    except IndexCoreError as exc:
        sb.error(f"Cannot open the warehouse: {exc}")
    except Exception as exc:  # unreachable URL, unknown protocol...
        sb.error(f"Cannot open the warehouse: {type(exc).__name__}: {exc}")
    if wh is not None and not names:
        sb.warning("No Paimon tables found in this warehouse.")
    table_name = None
    if names:
        linked = st.query_params.get("table")
        if linked in names and not st.session_state.get("_linked_table_used"):
            st.session_state[TABLE_KEY] = linked  # ?table=db.name picks the table on the first run
            st.session_state["_linked_table_used"] = True
        if st.session_state.get(TABLE_KEY) not in names:
            st.session_state[TABLE_KEY] = names[0]
        table_name = sb.selectbox("Table", names, key=TABLE_KEY)
    snapshot_id = None
    if wh is not None and table_name:
        try:
            table = wh.table(table_name)
            ids = list(reversed(table.snapshot_ids()))
        except IndexCoreError as exc:
            sb.error(str(exc))
            ids = []
        if ids:
            if st.session_state.get(SNAPSHOT_KEY) not in ids:
                st.session_state[SNAPSHOT_KEY] = ids[0]
            snapshot_id = sb.selectbox("Snapshot (time travel)", ids, key=SNAPSHOT_KEY,
                                       format_func=lambda sid: _snapshot_label(table, sid))
        else:
            sb.info("This table has no snapshot yet.")
    sb.text_input("Spark master", key=MASTER_KEY,
                  help="local[*], spark://host:7077 or a Spark Connect URL sc://host:15002")
    return Context(url, roots, wh, table_name, snapshot_id, options)


def need_table(ctx: Context) -> bool:
    """True when a table is picked; otherwise say what is missing."""
    if ctx.warehouse is None:
        st.info("Pick a readable warehouse in the sidebar.")
        return False
    if ctx.table_name is None:
        st.info("Pick a table in the sidebar.")
        return False
    return True


def show_frame(frame: pd.DataFrame, key: str, page_size: int = PAGE_SIZE, **kwargs) -> None:
    """A dataframe, paginated when it has more than ``page_size`` rows."""
    if len(frame) > page_size:
        pages = (len(frame) - 1) // page_size + 1
        page = st.number_input(f"Page (of {pages}, {len(frame):,} rows)", min_value=1, max_value=pages,
                               value=1, key=f"{key}_page")
        frame = frame.iloc[(page - 1) * page_size: page * page_size]
    st.dataframe(frame, hide_index=True, width="stretch", **kwargs)


def progress_callback(label: str) -> tuple[Callable[[int, int, str], None], Any]:
    """A ``progress(done, total, what)`` callback drawing an st.progress bar."""
    bar = st.progress(0.0, text=label)

    def update(done: int, total: int, what: str) -> None:
        bar.progress(min(1.0, done / total) if total else 1.0, text=f"{label}: {what} ({done}/{total})")

    return update, bar


def fmt_bytes(n: float | int | None) -> str:
    if n is None or pd.isna(n):
        return "–"
    n = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if abs(n) < 1024 or unit == "GB":
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1024
    return f"{n:,.1f} TB"


def index_columns(ctx: Context, index_types: tuple[str, ...]) -> list[str]:
    """Columns that have a file index of one of ``index_types`` in the picked snapshot."""
    frame = ctx.metric("file_indexes_frame")
    if frame.empty:
        return []
    hit = frame[frame["index_type"].isin(index_types)]
    return sorted(hit["column"].dropna().unique().tolist())


def _run_through_app() -> None:
    """Hand a page that Streamlit ran on its own back to ``app.py``'s navigation.

    With a ``pages/`` folder beside it, a fresh server serves its first page-URL request in
    Streamlit's older multipage mode: the page runs without ``app.py`` (no sidebar, raw page
    names). That mode is a process-wide flag which ``st.navigation`` clears; clear it here and
    rerun, and the same URL is served through ``app.py``.
    """
    from streamlit.runtime.pages_manager import PagesManager

    if PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False
        st.rerun()


def context() -> Context:
    """The :class:`Context` the sidebar stored for this run (drawn again if a page runs alone)."""
    _run_through_app()
    ctx = st.session_state.get("context")
    return ctx if isinstance(ctx, Context) else sidebar()
