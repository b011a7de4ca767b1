"""Streamlit glue shared by every page: warehouse/table/branch/tag/snapshot pickers, caching, error guard.

Nothing here decodes anything: it opens a warehouse with :func:`indexcore.open_warehouse`,
keeps the session's choice as ONE :class:`~pages.selection.Selection` record in ``st.session_state``
(the branch, tag and snapshot pickers and the URL link live in :mod:`pages.selection`) and caches
:mod:`indexcore.views` tables (as frames) and the frames of :mod:`indexcore.frames.registry` per
warehouse URL, table (with its branch) and snapshot.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pandas as pd
import pyarrow as pa
import streamlit as st

import indexcore
from indexcore.cache import release_unused
from indexcore.config import Settings, settings, variable
from indexcore.errors import IndexCoreError, SettingsError
from indexcore.frames import health, unusable
from indexcore.frames import table as table_frames
from indexcore.frames.registry import FRAMES, WAREHOUSE, spec_of
from indexcore.frames.text import md
from indexcore.frames.views import shared_frame, view_frame
from indexcore.io.options import app_storage_options
from indexcore.spark.jobs.metadata import metadata_master, seed_census
from indexcore.views import view
from indexcore.views.census import census_column_names, census_files
from pages.rows import show_frame
from pages.selection import (
    BRANCH_KEY,
    MASTER_KEY,
    OPTIONS_KEY,
    SELECTION_KEY,
    SNAPSHOT_KEY,
    TABLE_KEY,
    TAG_KEY,
    WH_KEY,
    Selection,
    allowed_roots,
    default_warehouse,
    forget,
    norm,
    pick_version,
    refuse,
    show_refused,
    to_url,
    url_link,
)
from pages.spark_lease import run_beside, spark_sessions, spark_user

MAX_CHOICES = 1000  # options a selectbox sends to the browser before a filter narrows them
PROGRESS_EVERY_S = 0.1  # a progress bar is redrawn this often at most (and at 100%)
# server memory stays bounded whatever the number of sessions: warehouses opened at once
# (each with its tables' plan and manifest caches, see indexcore.warehouse.table), and cached
# frames, which also expire so a long-running server lets go of tables nobody looks at
try:
    _APP = settings()  # read when the server starts: the caches below are sized once
except SettingsError:  # malformed roots: app.py shows why and serves nothing; a page run alone gets there
    _APP = Settings()
MAX_WAREHOUSES = _APP.app_warehouses
CACHE_ENTRIES = _APP.app_cache_entries
CACHE_TTL = _APP.app_cache_ttl  # seconds

# the app's pages: key (the script's name in pages/, also what health items name), title and icon,
# in navigation order; app.py builds its navigation from them, health links resolve here
PAGES = (
    ("warehouse", "Warehouse", ":material/warehouse:"),
    ("table", "Table", ":material/table:"),
    ("bitmap", "Bitmap indexes", ":material/bar_chart:"),
    ("bloom", "Bloom filters", ":material/filter_alt:"),
    ("range", "Range-bitmap and BSI", ":material/straighten:"),
    ("deletion_vectors", "Deletion vectors", ":material/delete_sweep:"),
    ("hash_index", "Hash index", ":material/tag:"),
    ("global_indexes", "Global indexes", ":material/account_tree:"),
    ("what_if", "What-if", ":material/psychology:"),
    ("advisor", "Advisor", ":material/recommend:"),
    ("spark", "Spark", ":material/bolt:"),
)
# page key -> title, and -> the script st.page_link opens (relative to app.py)
PAGE_TITLES = {key: title for key, title, _icon in PAGES}
PAGE_FILES = {key: f"pages/{key}.py" for key, _title, _icon in PAGES}


@st.cache_resource(show_spinner="Opening warehouse…", max_entries=MAX_WAREHOUSES)
def open_warehouse(url: str, roots: tuple[str, ...], options: tuple = ()):
    """One read-only Warehouse per (URL, allowed roots, storage options), shared by every session."""
    return indexcore.open_warehouse(url, allowed_roots=list(roots), storage_options=dict(options) or None)


@st.cache_data(show_spinner=False, max_entries=CACHE_ENTRIES, ttl=60)
def table_names(url: str, roots: tuple[str, ...], options: tuple = ()) -> list[str]:
    return open_warehouse(url, roots, options).tables()


def storage_options(url: str) -> tuple:
    """The storage options the app reads ``url`` with, as sorted pairs (cache keys): the sidebar's
    (``key=value`` per line; only names the operator allows, never endpoints or credentials) with
    the operator's options bound to the url's root over them (:mod:`indexcore.io.options`)."""
    return tuple(sorted(app_storage_options(url, st.session_state.get(OPTIONS_KEY) or "", settings()).items()))


@st.cache_resource(show_spinner="Reading…", max_entries=CACHE_ENTRIES, ttl=CACHE_TTL)
def cached_view(name: str, url: str, roots: tuple[str, ...], table: str, snapshot_id: int | None,
                kwargs: tuple = (), options: tuple = ()) -> pd.DataFrame:
    """``views.view(table, name, snapshot_id, **kwargs)`` as a frame, one for every session of the
    server (a cache_data hit unpickled a copy per run: twenty sessions held twenty ``$files``
    frames). Read-only (:func:`~indexcore.frames.views.shared_frame`); :meth:`Context.view` hands out
    shallow copies."""
    return shared_frame(view_frame(open_warehouse(url, roots, options).table(table), name, snapshot_id,
                                   **dict(kwargs)))


@st.cache_data(show_spinner="Reading…", max_entries=CACHE_ENTRIES, ttl=CACHE_TTL)
def cached_frame(key: str, url: str, roots: tuple[str, ...], table: str | None, snapshot_id: int | None,
                 kwargs: tuple = (), options: tuple = ()) -> Any:
    """The registered frame ``key`` (:data:`~indexcore.frames.registry.FRAMES`) of the table, with
    ``snapshot_id=`` when it takes one, or of the warehouse; cached under the key.

    ``snapshot_id`` is part of the cache key even when not passed, so table-wide frames refresh with it.
    """
    spec = FRAMES[key]
    wh = open_warehouse(url, roots, options)
    if spec.on == WAREHOUSE:
        frame = spec.fn(wh, **dict(kwargs))
    else:
        if spec.snapshot:
            kwargs = (*kwargs, ("snapshot_id", snapshot_id))
        frame = spec.fn(wh.table(table), **dict(kwargs))
    release_unused()  # health's or the statistics' scratch, about 1 KiB per live file: not kept in RSS
    return frame


# what a browser user reads of an error that is not ours (a backend's, a bug): never its text, which
# may carry a host's response; the sidebar, where a URL is chosen, shows not even the class (no
# tell of "cannot connect"), a page section shows the class
UNEXPECTED = "an unexpected error; the server log has the details."
LOG = logging.getLogger("indexcore.app")


class Missing(Exception):
    """A section needs a value that an earlier section, which failed, did not produce."""


def needs(section: str, *values: Any) -> None:
    """Inside a :func:`guard`: stop this section (not the page) when ``section`` left any of
    ``values`` unset (None), so it says what it misses instead of raising NameError."""
    if any(v is None for v in values):
        raise Missing(section)


@contextmanager
def guard(what: str) -> Iterator[None]:
    """Show a failure of one page section as st.error and let the rest of the page run.

    Sections that share values initialise them to None before the first section and call
    :func:`needs` before using them.
    """
    try:
        yield
    except Missing as exc:
        st.info(md(f"{what}: not shown, it needs what the section \"{exc}\" computes, and that section failed."))
    except IndexCoreError as exc:
        st.error(md(f"{what}: {exc}"))
    except Exception as exc:  # the page must keep working whatever a section hits; its text is not shown
        st.error(md(f"{what} failed: {type(exc).__name__}, {UNEXPECTED}"))
        LOG.warning("%s failed", what, exc_info=True)


class Context:
    """What the sidebar picked (:class:`Selection`) with the opened warehouse; ``table_name`` is the
    table with its branch (``db.t$branch_NAME``), ``snapshot_id`` the picked snapshot."""

    def __init__(self, selection: Selection, roots: tuple[str, ...], warehouse):
        self.selection, self.roots, self.warehouse = selection, roots, warehouse
        self.url = selection.warehouse
        self.table_name = selection.table_ref if warehouse is not None else None
        self.snapshot_id = selection.snapshot_id
        self.options = selection.options
        # what this run already took from the Streamlit caches: a cached_frame hit unpickles a copy,
        # and a page asks for the 180,000-row census up to four times
        self._run: dict[tuple, Any] = {}

    @property
    def table(self):
        return self.warehouse.table(self.table_name) if self.warehouse and self.table_name else None

    def view(self, name: str, snapshot: bool = True, **kwargs) -> pd.DataFrame:
        """A cached :mod:`indexcore.views` view of the picked table as a frame (``snapshot=False``:
        the latest snapshot, for table-wide views such as ``$snapshots``). The same frame for the
        whole run, a shallow copy of the one every session shares: columns may be added to it, its
        data is read-only (copy it before changing values)."""
        args = self._view_args(name, snapshot, kwargs)
        return self._once(("view", *args), lambda: cached_view(*args).copy(deep=False))

    def census(self) -> pa.Table:
        """The picked snapshot's census of index heads (``$file_indexes``) in Arrow: the one the table
        keeps for every session (Spark's, when :func:`census_on_spark` seeded it), no pandas frame of
        its rows (at 1,000,000 files 3.87 million rows: about 440 MB a frame)."""
        def read() -> pa.Table:
            with st.spinner("Reading the index heads…"):
                return view(self.table, "file_indexes", self.snapshot_id)
        return self._once(("census", self.url, self.table_name, self.snapshot_id), read)

    def has_view(self, name: str, snapshot: bool = True, **kwargs) -> bool:
        """This run already holds the view (:meth:`view` returns it without any work)."""
        return ("view", *self._view_args(name, snapshot, kwargs)) in self._run

    def _view_args(self, name: str, snapshot: bool, kwargs: dict) -> tuple:
        return (name, self.url, self.roots, self.table_name, self.snapshot_id if snapshot else None,
                tuple(sorted(kwargs.items())), self.options)

    def frame(self, fn: Callable[..., Any], **kwargs) -> Any:
        """``fn``'s cached frame (a function of :mod:`indexcore.frames.registry`) for the picked table
        and snapshot, or for the warehouse, as its spec says; the same object for the whole run,
        as :meth:`view`."""
        spec = spec_of(fn)
        on_table = spec.on != WAREHOUSE
        args = (spec.key, self.url, self.roots, self.table_name if on_table else None,
                self.snapshot_id if on_table else None, tuple(sorted(kwargs.items())), self.options)
        return self._once(("frame", *args), lambda: cached_frame(*args))

    def end_run(self) -> None:
        """Let go of what this run took from the caches: the Context stays in the session's state
        between runs, and a 50,000-file table's frames are tens of MB per session. What they held
        goes back to the OS (the unpickled copies of cached frames are each session's own)."""
        self._run.clear()
        release_unused()

    def _once(self, key: tuple, fetch: Callable[[], Any]) -> Any:
        try:
            return self._run[key]
        except KeyError:
            value = self._run[key] = fetch()
            return value
        except TypeError:  # an argument that cannot be a key: no memo, the Streamlit cache still holds
            return fetch()


def travel_by_time(table) -> None:
    """The Table page's "Travel": the snapshot live at the end of the ``tt_date``/``tt_time`` minute. Not a
    page closure: a kept callback holds its globals, a page's frames (36-95 MiB a session at 100k files)."""
    when = dt.datetime.combine(st.session_state["tt_date"], st.session_state["tt_time"].replace(second=0))
    end = when.replace(tzinfo=dt.UTC) + dt.timedelta(seconds=59, milliseconds=999)  # UTC, as the inputs say
    snap = table.snapshot_at(int(end.timestamp() * 1000))
    if snap is None:
        st.session_state["tt_message"] = f"No snapshot was committed at or before {when}."
        return
    st.session_state[SNAPSHOT_KEY] = snap.id  # the sidebar drops a tag that pins another snapshot
    st.session_state["tt_message"] = f"Travelled to snapshot {snap.id} (live at {when})."


def sidebar() -> Context:
    """Draw the pickers in the sidebar, store the :class:`Selection` and return the :class:`Context`.

    A new warehouse forgets the table; a new table forgets branch, tag and snapshot; a new branch
    forgets tag and snapshot; a picked tag moves the snapshot to the one it pins, and moving the
    snapshot elsewhere drops the tag.
    """
    roots = allowed_roots()
    link = url_link()
    if link.get("warehouse"):
        st.session_state[WH_KEY] = link.pop("warehouse")  # opened below within the allowed roots, as if typed
    st.session_state.setdefault(WH_KEY, default_warehouse())
    st.session_state.setdefault(MASTER_KEY, "local[*]")
    prev = st.session_state.get(SELECTION_KEY)
    prev = prev if isinstance(prev, Selection) else None
    sb = st.sidebar
    sb.text_input("Warehouse (local path or fsspec URL)", key=WH_KEY,
                  help=md("Must lie inside the allowed roots: " + ", ".join(roots)))
    typable = [k for k in settings().app_storage_options if k.strip()]
    sb.text_area("Storage options (key=value per line)", key=OPTIONS_KEY, disabled=not typable,
                 help=(f"Only {', '.join(typable)} may be set here" if typable else
                       "Set by the operator: this server takes no storage options from the browser")
                      + f"; endpoints and credentials are bound to roots by the operator ({variable('root_options')})")
    if not typable:
        sb.caption("Storage options are set by the operator, not in the browser.")
    url, wh, names, options = st.session_state[WH_KEY].strip(), None, [], ()
    try:
        url = norm(url)
        options = storage_options(url)
        if prev is not None and (prev.warehouse, prev.options) != (url, options):
            forget(TABLE_KEY, BRANCH_KEY, TAG_KEY, SNAPSHOT_KEY)
            prev = None
        wh = open_warehouse(url, roots, options)
        names = table_names(url, roots, options)
    except IndexCoreError as exc:
        sb.error(md(f"Cannot open the warehouse: {exc}"))
    except Exception:  # a backend's own error (unreachable host...): summarised, never echoed
        sb.error(f"Cannot open the warehouse: {UNEXPECTED}")
        LOG.warning("cannot open the warehouse %r", url, exc_info=True)
    if wh is not None and not names:
        sb.warning("No Paimon tables found in this warehouse.")
    selection = Selection(url, options=options)
    if names:
        linked = link.pop("table", None)
        if linked in names:
            st.session_state[TABLE_KEY] = linked  # ?table=db.name picks the table on the first run
        elif linked is not None:
            refuse("table", f"{linked!r}: this warehouse has no such table")
            link.clear()  # the rest of the link belongs to that table
        if st.session_state.get(TABLE_KEY) not in names:
            st.session_state[TABLE_KEY] = names[0]
        if prev is not None and prev.table is not None and st.session_state[TABLE_KEY] != prev.table:
            forget(BRANCH_KEY, TAG_KEY, SNAPSHOT_KEY)  # another table: its own latest snapshot
            prev = None
        selection = Selection(url, sb.selectbox("Table", names, key=TABLE_KEY), options=options)
    if wh is not None and selection.table:
        try:
            selection = pick_version(sb, wh, selection, prev)
        except IndexCoreError as exc:
            sb.error(md(exc))
    link.clear()  # what the pickers did not take (no table, no snapshot) is not kept for later
    show_refused(sb)
    sb.text_input("Spark master", key=MASTER_KEY,
                  help="local[*], spark://host:7077 or a Spark Connect URL sc://host:15002")
    st.session_state[SELECTION_KEY] = selection
    to_url(selection)
    return Context(selection, roots, wh)


def need_table(ctx: Context) -> bool:
    """True when a table is picked; otherwise say what is missing."""
    if ctx.warehouse is None:
        st.info("Pick a readable warehouse in the sidebar.")
        return False
    if ctx.table_name is None:
        st.info("Pick a table in the sidebar.")
        return False
    return True


def open_page(key: str) -> Context:
    """Start the page ``key``: its title (from :data:`PAGES`, the one home of titles) and the
    session's context; the page stops here, saying what is missing, until a table is picked."""
    st.title(PAGE_TITLES[key])
    ctx = context()
    if not need_table(ctx):
        st.stop()
    census_on_spark(ctx)
    return ctx


def census_on_spark(ctx: Context) -> None:
    """Past the operator's ``spark_metadata_files`` live files, the picked snapshot's census of index
    heads is read on Spark (the default master, under a lease of the shared context), once: it is
    kept on the table, so every page and session of that snapshot reads it. Below it (and by
    default) nothing happens here. A failure is shown and the pages read the heads themselves."""
    if not settings().spark_metadata_files:  # off (the default): nothing to look at
        return
    try:
        table = ctx.table
        master = metadata_master(table, ctx.snapshot_id) if table is not None else None
        snap = table.snapshot(ctx.snapshot_id) if master else None
    except IndexCoreError:
        return
    if snap is None or table.caches.derived.peek(("view", "file_indexes", snap.id)) is not None:
        return
    limits, state = settings(), {"done": 0, "total": 0}
    sessions, cancel = spark_sessions(limits.spark_jobs_per_user, limits.spark_queue_seconds), threading.Event()

    def work() -> None:
        with sessions.lease(master, spark_user(), cancel) as reserved:
            seed_census(table, ctx.url, reserved, snap.id, progress=lambda d, t, m: state.update(done=d, total=t),
                        cancel=cancel)

    with st.status(md(f"Reading the index heads of this snapshot on Spark ({master}): past "
                      f"{limits.spark_metadata_files:,} live files this server reads them there"),
                   expanded=False) as status:
        try:
            run_beside(work, st.progress(0.0), state, cancel, lambda s: f"{s['done']}/{s['total'] or '?'} tasks")
            status.update(label=md(f"Index heads read on Spark ({master})"), state="complete")
        except Exception as exc:  # noqa: BLE001 - Spark failed: the pages read the heads themselves
            LOG.warning("census on Spark failed: %s", exc)
            status.update(label=md(f"Reading the index heads on Spark failed ({exc}); this page reads them itself"),
                          state="error")


def pick_name(label: str, names: list[str], key: str, first: str | None = None,
              limit: int | None = None, **kwargs) -> str | None:
    """A selectbox over ``names`` (``first``, e.g. "every file", leads); past ``limit`` names
    (default :data:`MAX_CHOICES`) a filter box narrows them first, so a 50,000-file table does
    not send 50,000 options to the browser."""
    limit = limit or MAX_CHOICES
    lead = [first] if first is not None else []
    if len(names) > limit:
        text = st.text_input(f"{label}: filter ({len(names):,} in all)", key=f"{key}_filter",
                             help="Part of the name; the list below shows the first matches")
        names = [n for n in names if text in n] if text else names
        if len(names) > limit:
            st.caption(md(f"{label}: the first {limit:,} of {len(names):,} shown; type part of a name to narrow them."))
            names = names[:limit]
    return st.selectbox(label, lead + names, key=key, **kwargs)


def progress_callback(label: str, every: float = PROGRESS_EVERY_S) -> tuple[Callable[[int, int, str], None], Any]:
    """A ``progress(done, total, what)`` callback drawing an st.progress bar, redrawn only when its whole
    percent changes (a callback per file of 50,000 would send 50,000 messages to the browser) and
    ``every`` seconds at most, but at 100% (an explain of 10,000 files in 0.15 s drew 100 bars no
    one saw: about 2% of the What-if page's CPU)."""
    bar = st.progress(0.0, text=label)
    shown = [-1, time.monotonic()]  # the percent on screen and when it was drawn

    def update(done: int, total: int, what: str) -> None:
        percent = min(100, done * 100 // total) if total else 100
        if percent != shown[0] and (percent == 100 or time.monotonic() - shown[1] >= every):
            shown[0], shown[1] = percent, time.monotonic()
            bar.progress(percent / 100, text=f"{label}: {what} ({done:,}/{total:,})")

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
    """Columns that have a file index of one of ``index_types`` in the picked snapshot (on the
    census's dictionaries: no copy of its rows)."""
    return census_column_names(ctx.census(), index_types)


def unusable_files(ctx: Context, index_types: tuple[str, ...]) -> pd.DataFrame:
    """Files of the picked snapshot whose file index of one of ``index_types`` (or whole index file)
    could not be used, and why, plus the unreadable manifests that hide files from every page
    (:func:`indexcore.frames.unusable.unusable_file_indexes`)."""
    # only the census's unusable rows (taken from the kept census when the table has it; else a walk of
    # the same heads keeping a fraction of the rows): every unusable file is among them
    census = ctx.view("file_indexes", errors_only=True)
    return unusable.unusable_file_indexes(census, index_types, ctx.frame(table_frames.unreadable_frame))


def unusable_index_files(ctx: Context, kinds: tuple[str, ...]) -> pd.DataFrame:
    """Index-manifest files (HASH, global indexes) of the picked snapshot that could not be used, and
    why (:func:`indexcore.frames.unusable.unusable_index_files`), plus :func:`unreadable_parts`."""
    return unusable.with_unreadable(ctx.frame(unusable.unusable_index_files, kinds=kinds),
                                    ctx.frame(table_frames.unreadable_frame))


def missing_dv_files(ctx: Context) -> pd.DataFrame:
    """Live files of the picked snapshot whose deletion-vector file is gone (their deletes are lost)."""
    return unusable.missing_dv_files(ctx.table, ctx.view("deletion_vectors"))


def unreadable_parts(ctx: Context) -> pd.DataFrame:
    """Manifests, index manifests and other metadata of the picked snapshot that could not be read:
    the files they list are missing from every page, so each page names them."""
    return unusable.unreadable_parts(ctx.frame(table_frames.unreadable_frame))


# a health item's severity -> the icon shown beside it (Table and Warehouse pages)
SEVERITY_ICONS = {health.ERROR: ":material/error:", health.WARNING: ":material/warning:", health.INFO: ":material/info:"}


def health_item(severity: str, text: str, page: str | None) -> None:
    """One health item: its icon and ``text`` (markdown: the caller escapes what comes from data
    with :func:`~indexcore.frames.text.md`), and a link to the page explaining it (its key in
    :data:`PAGE_FILES`; wide enough for the longest page title, "Range-bitmap and BSI",
    on one line)."""
    left, right = st.columns([3, 1], vertical_alignment="center")
    left.markdown(f"{SEVERITY_ICONS[severity]} {text}")
    if page in PAGE_FILES:
        right.page_link(PAGE_FILES[page], label=PAGE_TITLES[page], icon=":material/arrow_forward:")


def decode_sample(ctx: Context, kinds: tuple[str, ...], key: str) -> int:
    """How many files this page's per-file decoding reads (the ``sample`` of the views and
    frames that decode; as many as there are means all): all of them up to
    ``decode_sample`` (:mod:`indexcore.config`) files with a file index; past
    that a fixed random sample unless the user turns on "every file". Says which it is."""
    sample = settings().decode_sample
    with_index = census_file_count(ctx)
    if with_index <= sample:
        return with_index
    carrying = census_file_count(ctx, kinds)
    every = st.toggle(f"Decode every file ({carrying:,} carry this index; slow)", key=f"{key}_every",
                      help="Counts, bytes and unusable files above cover every file; value-level figures "
                           "below decode a sample unless this is on.")
    if every:
        return with_index
    st.caption(f"Value-level figures below decode a fixed random sample of {sample:,} of the "
               f"{with_index:,} files with a file index (about {carrying * sample // with_index:,} "
               f"of the {carrying:,} carrying this index). Turn on \"Decode every file\" for exact totals.")
    return sample


def census_file_count(ctx: Context, kinds: tuple[str, ...] | None = None, column: str | None = None) -> int:
    """How many files of the picked snapshot carry a file index (of ``kinds``, on ``column``): counted
    on the census's path indices (:func:`~indexcore.views.census.census_files`), not by hashing
    millions of paths."""
    return census_files(ctx.census(), kinds, column)


def show_unusable(bad: pd.DataFrame, key: str) -> None:
    """Warn about the files a page could not use, with the reason per file."""
    if bad.empty:
        return
    counts = bad.drop_duplicates("file_name")["why"].value_counts()
    st.warning(md(f"{bad['file_name'].nunique()} file(s) could not be used: "
                  + ", ".join(f"{n} {why}" for why, n in counts.items())))
    show_frame(bad, key)


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
