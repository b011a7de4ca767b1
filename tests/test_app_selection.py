"""The sidebar's Selection: tags and "(no tag)", and the Selection in the URL (a link is shared and
survives a reload; values the table does not have are refused with a message). AppTest of app.py on a
scratch copy of two conformance tables (``tagged_warehouse``: tag ``v2`` pins snapshot 2 of six)."""

from __future__ import annotations

import pytest

import indexcore

PK = "pk_table_scan_and_read_dv.pk_table_scan_and_read_dv"
RT = "append_table_with_rt_branch.append_table_with_rt_branch"


@pytest.fixture()
def tagged(tagged_warehouse, monkeypatch):
    from test_app import _served_through_app

    _served_through_app(monkeypatch)
    monkeypatch.setenv("INDEXCORE_WAREHOUSE", str(tagged_warehouse))
    monkeypatch.delenv("INDEXCORE_ALLOWED_ROOTS", raising=False)
    return indexcore.open_warehouse(str(tagged_warehouse))


def _app(params: dict | None = None, **state):
    from streamlit.testing.v1 import AppTest
    from test_app import APP

    at = AppTest.from_file(APP, default_timeout=90)
    for k, v in (params or {}).items():
        at.query_params[k] = v
    for k, v in state.items():
        at.session_state[k] = v
    return at


def _ok(at) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not [e.value for e in at.error], [e.value for e in at.error]


def _url(at) -> dict:
    return {k: (v[0] if isinstance(v, list) else v) for k, v in at.query_params.items()}


def test_no_tag_after_a_tag_goes_back_to_the_latest_snapshot(tagged):
    latest = tagged.table(PK).snapshot_ids()[-1]
    assert latest != 2, "the tag must pin an older snapshot for this test to mean anything"
    at = _app(table=PK, tag="v2")
    at.run()
    _ok(at)
    assert at.selectbox(key="snapshot_id").value == 2
    at.selectbox(key="tag").select("(no tag)").run()
    _ok(at)
    assert at.selectbox(key="snapshot_id").value == latest
    assert at.session_state["selection"].tag is None
    # moving the snapshot away from a tag still drops the tag and stays on the snapshot picked
    at.selectbox(key="tag").select("v2").run()
    assert at.selectbox(key="snapshot_id").value == 2
    at.selectbox(key="snapshot_id").select(3).run()
    _ok(at)
    assert (at.selectbox(key="tag").value, at.selectbox(key="snapshot_id").value) == ("(no tag)", 3)


def test_the_selection_is_written_into_the_url(tagged):
    at = _app(table=PK)
    at.run()
    _ok(at)
    at.selectbox(key="snapshot_id").select(3).run()
    _ok(at)
    assert _url(at) == {"table": PK, "snapshot": "3"}
    at.selectbox(key="tag").select("v2").run()
    assert _url(at) == {"table": PK, "tag": "v2", "snapshot": "2"}
    at.switch_page("pages/what_if.py").run()
    _ok(at)
    at.text_input(key="whatif_sql").input("f0 <> 'zz'").run()
    _ok(at)
    assert _url(at)["where"] == "f0 <> 'zz'"
    at.selectbox(key="table").select(RT).run()
    _ok(at)
    assert _url(at) == {"table": RT, "snapshot": str(tagged.table(RT).snapshot_ids()[-1])}, \
        "another table forgets the tag, the snapshot and the predicate"


def test_a_link_opens_the_view_it_names(tagged):
    """A fresh session (a reload, or a shared link) opens the table, snapshot and predicate of the URL."""
    sql = "f0 <> 'zz'"
    at = _app({"table": PK, "snapshot": "3", "where": sql})
    at.switch_page("pages/what_if.py").run()
    _ok(at)
    selection = at.session_state["selection"]
    assert (selection.table, selection.snapshot_id, selection.tag, selection.predicate) == (PK, 3, None, sql)
    assert at.text_input(key="whatif_sql").value == sql
    assert not at.sidebar.warning
    at = _app({"table": PK, "tag": "v2"})
    at.run()
    _ok(at)
    assert (at.session_state["selection"].tag, at.session_state["selection"].snapshot_id) == ("v2", 2)
    at = _app({"table": RT, "branch": "rt"})
    at.run()
    _ok(at)
    assert at.session_state["selection"].table_ref == f"{RT}$branch_rt"


@pytest.mark.parametrize("params, what, detail", [
    ({"table": "db.nope"}, "table", "'db.nope'"),
    ({"table": PK, "snapshot": "99"}, "snapshot", "'99'"),
    ({"table": PK, "snapshot": "three"}, "snapshot", "'three'"),
    ({"table": PK, "tag": "v9"}, "tag", "'v9'"),
    ({"table": PK, "branch": "nope"}, "branch", "'nope'"),
    ({"table": PK, "where": "no_such_column = 1"}, "predicate", "unknown column 'no_such_column'"),
    ({"table": PK, "where": "k = = 1"}, "predicate", "k = = 1"),
    # markdown in the URL is shown as text, never rendered (no link, no image)
    ({"table": "[x](http://evil.example) ![i](http://evil.example/i.png)"}, "table", "[x](http://evil.example)"),
])
def test_a_link_with_values_the_table_lacks_is_refused_with_a_message(tagged, params, what, detail):
    at = _app(params)
    at.run()
    _ok(at)
    warnings = [w.value for w in at.sidebar.warning]
    assert f"The link's {what} was not applied:" in warnings, warnings
    assert any(detail in t.value for t in at.sidebar.text), [t.value for t in at.sidebar.text]
    assert not any("evil" in w for w in warnings)
    selection = at.session_state["selection"]
    names = tagged.tables()
    assert selection.table in names and selection.predicate is None
    assert selection.snapshot_id == tagged.table(selection.table).snapshot_ids()[-1]
