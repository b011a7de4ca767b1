"""The session's Selection (warehouse, table, branch, tag, snapshot, predicate): its record, the
branch / tag / snapshot pickers, and its place in the page's URL.

The URL carries it (``?table=db.t&snapshot=3&where=...``, :data:`URL_KEYS`) so a view can be shared
and survives a reload: a session's first run reads the link, each picker applies the value it owns
after checking it as it checks its own input, and refuses the others with a message in the
sidebar; every run writes the Selection back into the URL.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from dataclasses import dataclass, replace
from pathlib import Path

import streamlit as st

from indexcore.config import settings
from indexcore.errors import IndexCoreError
from indexcore.expr.sql import parse_where
from indexcore.frames.views import branch_ref
from indexcore.io.roots import local_url
from pages.auth import user_roots

APP_DIR = Path(__file__).resolve().parent.parent
DEFAULT_WAREHOUSE = APP_DIR / "sample_warehouse"
WH_KEY, TABLE_KEY, SNAPSHOT_KEY, MASTER_KEY = "warehouse_url", "table", "snapshot_id", "spark_master"
BRANCH_KEY, TAG_KEY, SELECTION_KEY = "branch", "tag", "selection"
OPTIONS_KEY = "storage_options"
MAIN, NO_TAG = "main", "(no tag)"
# the Selection in the page's URL (``?table=db.t&snapshot=3&where=...``): a view can be shared and
# survives a reload; read on a session's first run (LINK_KEY keeps what is still to apply), and
# refused values are said in the sidebar (LINK_REFUSED_KEY) instead of silently dropped
URL_KEYS = ("warehouse", "table", "branch", "tag", "snapshot", "where")
LINK_KEY, LINK_REFUSED_KEY = "_link", "_link_refused"


@dataclass(frozen=True)
class Selection:
    """The session's choice: warehouse, table, branch, tag, snapshot (None = latest) and predicate."""

    warehouse: str
    table: str | None = None
    branch: str = MAIN
    tag: str | None = None
    snapshot_id: int | None = None
    options: tuple = ()  # fsspec storage options as sorted (key, value) pairs
    predicate: str | None = None  # the SQL WHERE the What-if page explains (kept while the table is)

    @property
    def table_ref(self) -> str | None:
        """The name :meth:`Warehouse.table` opens: ``db.t`` or ``db.t$branch_NAME``."""
        if self.table is None or self.branch == MAIN:
            return self.table
        return branch_ref(self.table, self.branch)


def _cli_warehouse() -> str | None:
    """``streamlit run app.py -- --warehouse URL``."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--warehouse")
    args, _ = parser.parse_known_args(sys.argv[1:])
    return args.warehouse


def norm(url: str) -> str:
    """A local path made absolute (``~`` as :func:`indexcore.io.roots.local_url` expands it); URLs as given."""
    return local_url(url)


def default_warehouse() -> str:
    """Command line, then the ``warehouse`` setting, then ``sample_warehouse/`` next to app.py."""
    return norm(_cli_warehouse() or settings().warehouse or str(DEFAULT_WAREHOUSE))


def allowed_roots() -> tuple[str, ...]:
    """The signed-in user's roots when sign-in is on (:mod:`pages.auth`), else the ``allowed_roots``
    setting, else the default and the given warehouse."""
    signed_in = user_roots()
    if signed_in is not None:
        return tuple(dict.fromkeys(norm(r) for r in signed_in))
    config = settings()
    if config.allowed_roots:
        roots = list(config.allowed_roots)
    else:
        roots = [str(DEFAULT_WAREHOUSE)]
        for given in (_cli_warehouse(), config.warehouse):
            if given:
                roots.append(given)
    return tuple(dict.fromkeys(norm(r) for r in roots))


def _snapshot_label(table, sid: int) -> str:
    try:
        snap = table.snapshot(sid)
    except IndexCoreError:
        return f"#{sid} (unreadable)"
    when = dt.datetime.fromtimestamp(snap.time_millis / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M:%S") \
        if snap.time_millis else "?"
    return f"#{sid} · {snap.commit_kind or '?'} · {when}"


def forget(*keys: str) -> None:
    for key in keys:
        st.session_state.pop(key, None)


def url_link() -> dict:
    """The Selection the page's URL carries (:data:`URL_KEYS`), read on the session's first run
    only; the pickers pop what they apply."""
    if LINK_KEY not in st.session_state:
        st.session_state[LINK_KEY] = {k: st.query_params[k] for k in URL_KEYS if st.query_params.get(k)}
        st.session_state[LINK_REFUSED_KEY] = []
    return st.session_state[LINK_KEY]


def refuse(what: str, detail: str) -> None:
    """Say (in the sidebar, for the rest of the session) that the link's ``what`` (one of
    :data:`URL_KEYS`) was not applied and why; ``detail`` quotes the URL, so it is shown as plain
    text, never as markdown."""
    st.session_state.setdefault(LINK_REFUSED_KEY, []).append((what, detail))


def show_refused(sb) -> None:
    """The link's values that were not applied, each a warning with its reason as plain text."""
    for what, detail in st.session_state.get(LINK_REFUSED_KEY, ()):
        sb.warning(f"The link's {what} was not applied:")
        sb.text(detail)


def to_url(selection: Selection) -> None:
    """Write the Selection into the URL (only what differs from the defaults), so the view can be
    shared and a reload comes back to it."""
    want = {"warehouse": selection.warehouse if selection.warehouse != default_warehouse() else None,
            "table": selection.table, "branch": selection.branch if selection.branch != MAIN else None,
            "tag": selection.tag, "snapshot": str(selection.snapshot_id) if selection.snapshot_id is not None else None,
            "where": selection.predicate}
    want = {k: v for k, v in want.items() if v}
    if {k: st.query_params.get(k) for k in st.query_params} != want:
        st.query_params.from_dict(want)


def check_predicate(table, snapshot_id: int | None, sql: str) -> None:
    """Raise :class:`IndexCoreError` unless ``sql`` is a WHERE clause over the snapshot's columns
    (the explain's own parsing, so the link's predicate is checked as the What-if box is)."""
    snap = table.snapshot(snapshot_id) if snapshot_id is not None else None
    parse_where(sql, table.snapshot_schema(snap).row_type())


def remember_predicate(sql: str | None) -> None:
    """The What-if page's predicate becomes the session's (and the URL's) until the table changes."""
    selection = st.session_state.get(SELECTION_KEY)
    if isinstance(selection, Selection) and selection.predicate != (sql or None):
        selection = replace(selection, predicate=sql or None)
        st.session_state[SELECTION_KEY] = selection
        to_url(selection)


def pick_version(sb, wh, selection: Selection, prev: Selection | None) -> Selection:
    """Branch and tag pickers side by side, the snapshot picker below them."""
    main = wh.table(selection.table)
    branches = [MAIN, *main.branches()]
    link = url_link()
    linked = link.pop("branch", None)
    if linked in branches:
        st.session_state[BRANCH_KEY] = linked
    elif linked is not None:
        refuse("branch", f"{linked!r}: {selection.table} has no such branch")
        link.clear()
    if st.session_state.get(BRANCH_KEY) not in branches:
        st.session_state[BRANCH_KEY] = MAIN
    if prev is not None and st.session_state[BRANCH_KEY] != prev.branch:
        forget(TAG_KEY, SNAPSHOT_KEY)
        prev = None
    left, right = sb.columns(2)
    branch = left.selectbox("Branch", branches, key=BRANCH_KEY, help="Paimon branches (`branch/branch-NAME`)")
    table = main.branch(branch)
    tags = {name: snap.id for name, snap in table.tags().items()}
    ids = list(reversed(table.snapshot_ids()))
    ids += sorted({sid for sid in tags.values() if sid not in ids}, reverse=True)  # expired, kept by a tag
    apply_linked_version(link, selection.table, tags, ids)
    if st.session_state.get(TAG_KEY) not in (NO_TAG, *tags):
        st.session_state[TAG_KEY] = NO_TAG
    tag = st.session_state[TAG_KEY]
    picked = st.session_state.get(SNAPSHOT_KEY)
    if prev is not None and tag != NO_TAG and tag == prev.tag and picked != tags[tag]:
        st.session_state[TAG_KEY] = tag = NO_TAG  # the snapshot was moved away from the tag
    elif prev is not None and tag == NO_TAG and prev.tag in tags and picked == tags[prev.tag]:
        forget(SNAPSHOT_KEY)  # "(no tag)" picked instead of a tag: back to the latest snapshot
    if tag != NO_TAG and (prev is None or tag != prev.tag):
        st.session_state[SNAPSHOT_KEY] = tags[tag]  # a newly picked tag moves the snapshot
    tag = right.selectbox("Tag", [NO_TAG, *tags], key=TAG_KEY, help="Paimon tags (`tag/tag-NAME`)")
    selection = replace(selection, branch=branch, tag=None if tag == NO_TAG else tag,
                        predicate=prev.predicate if prev is not None else None)
    if not ids:
        sb.info("This table has no snapshot yet.")
        return selection
    if st.session_state.get(SNAPSHOT_KEY) not in ids:
        st.session_state[SNAPSHOT_KEY] = ids[0]
    snapshot_id = sb.selectbox("Snapshot (time travel)", ids, key=SNAPSHOT_KEY,
                               format_func=lambda sid: _snapshot_label(table, sid))
    selection = replace(selection, snapshot_id=snapshot_id)
    linked = link.pop("where", None)
    if linked is not None:
        try:
            check_predicate(table, snapshot_id, linked)
            selection = replace(selection, predicate=linked)
        except IndexCoreError as exc:
            refuse("predicate", f"{linked}: {exc}")
    return selection


def apply_linked_version(link: dict, name: str, tags: dict[str, int], ids: list[int]) -> None:
    """The link's tag and snapshot into the pickers' state, each checked against what the table has."""
    tag, snapshot = link.pop("tag", None), link.pop("snapshot", None)
    if tag is not None:
        if tag in tags:
            st.session_state[TAG_KEY] = tag  # the tag moves the snapshot to the one it pins
            return
        refuse("tag", f"{tag!r}: {name} has no such tag")
    if snapshot is not None:
        sid = int(snapshot) if snapshot.strip().isdigit() else None
        if sid in ids:
            st.session_state[SNAPSHOT_KEY] = sid
        else:
            refuse("snapshot", f"{snapshot!r}: {name} has no such snapshot (it has "
                    + (f"{min(ids)} to {max(ids)})" if ids else "none yet)"))
