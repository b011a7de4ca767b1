"""Streamlit AppTest of every page on the sample warehouse (else a conformance warehouse).

Set ``INDEXCORE_TEST_WAREHOUSE`` to browse another warehouse. Numbers the pages show are
compared with what indexcore computes directly (file counts, DV cardinalities, lookups).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import indexcore
from indexcore.frames import bitmap as bitmap_frames
from indexcore.frames import pruning as pruning_frames
from indexcore.frames import range_figures
from indexcore.frames import suggestion as suggestion_frames
from indexcore.frames import warehouse as warehouse_frames
from indexcore.frames.text import md
from indexcore.views import view

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")
PAGES = ["warehouse", "table", "bitmap", "bloom", "range", "deletion_vectors", "hash_index", "global_indexes",
         "what_if", "spark"]
# page -> the index kind its table should have ("" = any table)
KIND = {"bitmap": "bitmap", "bloom": "bloom-filter", "range": "bsi", "deletion_vectors": "DELETION_VECTORS",
        "hash_index": "HASH", "what_if": "bitmap"}


def _warehouse_path() -> Path | None:
    given = os.environ.get("INDEXCORE_TEST_WAREHOUSE")
    for cand in (given, ROOT / "sample_warehouse", ROOT.parent / "shared" / "conformance" / "warehouses" / "parquet"):
        if cand and Path(cand).is_dir():
            return Path(cand).resolve()
    return None


@pytest.fixture(scope="module")
def wh_path(monkeypatch_module):
    path = _warehouse_path()
    if path is None:
        pytest.skip("no warehouse to browse: neither sample_warehouse/ nor ../shared/conformance exists")
    monkeypatch_module.setenv("INDEXCORE_WAREHOUSE", str(path))
    monkeypatch_module.delenv("INDEXCORE_ALLOWED_ROOTS", raising=False)
    return path


@pytest.fixture(scope="module", autouse=True)
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    _served_through_app(mp)
    yield mp
    mp.undo()


def _served_through_app(mp: pytest.MonkeyPatch) -> None:
    """Run every AppTest rerun through app.py's ``st.navigation``, as a live server does.

    A server clears Streamlit's process-wide "old ``pages/`` mode" flag the first time app.py
    calls ``st.navigation`` and never sets it again; AppTest sets it anew before every run
    (``pages/`` exists), which would route reruns past app.py. The browser test covers the
    live server's first request for a page URL (see ``pages/common.py``).
    """
    from streamlit.runtime.pages_manager import PagesManager

    original = PagesManager.__init__

    def init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        PagesManager.uses_pages_directory = False

    mp.setattr(PagesManager, "__init__", init)


@pytest.fixture(scope="module")
def overview(wh_path):
    return warehouse_frames.warehouse_overview(indexcore.open_warehouse(str(wh_path)))


def _table_with(overview, kind: str) -> str | None:
    if not kind:
        return str(overview.iloc[0]["table"])
    hits = overview[overview["index_kinds"].fillna("").str.contains(kind, regex=False)]
    return None if hits.empty else str(hits.iloc[0]["table"])


def _app(table: str | None = None, page: str | None = None):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(APP, default_timeout=90)
    if table:
        at.session_state["table"] = table
    at.run()
    if page:
        at.switch_page(f"pages/{page}.py").run()
    return at


def _metric(at, label: str) -> str:
    for m in at.metric:
        if m.label == label:
            return m.value
    raise AssertionError(f"no metric {label!r} among {[m.label for m in at.metric]}")


def _no_failure(at) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not [e.value for e in at.error], [e.value for e in at.error]


@pytest.mark.parametrize("page", PAGES)
def test_page_renders(overview, page):
    table = _table_with(overview, KIND.get(page, ""))
    if table is None:
        pytest.skip(f"no table with a {KIND[page]} index in this warehouse")
    at = _app(table, page)
    _no_failure(at)
    assert at.title, "the page drew no title"


def test_warehouse_numbers(wh_path, overview):
    at = _app(page="warehouse")
    _no_failure(at)
    wh = indexcore.open_warehouse(str(wh_path))
    assert _metric(at, "Tables") == str(len(wh.tables()))
    files = sum(len(wh.table(n).plan().files) for n in wh.tables())
    assert _metric(at, "Live data files") == str(files)


def test_table_picker_changes_numbers(wh_path, overview):
    wh = indexcore.open_warehouse(str(wh_path))
    counts = {n: len(wh.table(n).plan().files) for n in wh.tables()}
    a, b = sorted(counts, key=counts.get)[0], sorted(counts, key=counts.get)[-1]
    at = _app()
    assert any(h.value == md(f"Problems in {sorted(counts)[0]}") for h in at.subheader)
    at = _app(b)
    _no_failure(at)
    assert at.selectbox(key="table").value == b
    assert any(h.value == md(f"Problems in {b}") for h in at.subheader)
    # the picked table is shared with the other pages through st.session_state
    at = _app(a, "table")
    assert _metric(at, "Live files") == str(counts[a])
    at = _app(b, "table")
    _no_failure(at)
    assert _metric(at, "Live files") == str(counts[b])


def test_snapshot_picker_time_travels(wh_path, overview):
    wh = indexcore.open_warehouse(str(wh_path))
    names = [n for n in wh.tables() if len(wh.table(n).snapshot_ids()) > 1]
    if not names:
        pytest.skip("no table with more than one snapshot")
    table = wh.table(names[0])
    first = table.snapshot_ids()[0]
    from streamlit.testing.v1 import AppTest

    # AppTest loses the entry script's sidebar after a rerun under st.navigation, so the pick
    # is made through st.session_state, which is what the sidebar selectbox writes
    at = AppTest.from_file(APP, default_timeout=90)
    at.session_state["table"] = names[0]
    at.session_state["snapshot_id"] = first
    at.run()
    assert at.selectbox(key="snapshot_id").value == first
    at.switch_page("pages/table.py").run()
    _no_failure(at)
    assert _metric(at, "Live files") == str(len(table.plan(first).files))
    rows = sum(lf.file.row_count for lf in table.plan(first).files)
    assert _metric(at, "Rows") == f"{rows:,}"


def test_dv_numbers_match_decoded_vectors(wh_path, overview):
    name = _table_with(overview, "DELETION_VECTORS")
    if name is None:
        pytest.skip("no table with deletion vectors")
    table = indexcore.open_warehouse(str(wh_path)).table(name)
    deleted = 0
    for lf in table.plan().files:
        dv = table.deletion_vector(lf)
        deleted += dv.cardinality if dv is not None else 0
    at = _app(name, "deletion_vectors")
    _no_failure(at)
    assert _metric(at, "Deleted rows") == f"{deleted:,}"
    assert _metric(at, "Files with a DV") == str(sum(1 for lf in table.plan().files if lf.deletion_vector))


def test_bitmap_column_and_lookup(wh_path, overview):
    name = _table_with(overview, "bitmap")
    table = indexcore.open_warehouse(str(wh_path)).table(name)
    at = _app(name, "bitmap")
    _no_failure(at)
    box = at.selectbox(key="bitmap_column")
    for column in box.options:
        at.selectbox(key="bitmap_column").select(column).run()
        _no_failure(at)
        values = view(table, "bitmap_values", column=column).to_pandas()
        top = bitmap_frames.top_values(values, 1)
        if top.empty or top["value"].iloc[0] == "NULL":
            continue
        literal = top["value"].iloc[0]
        at.text_input(key="bitmap_lookup_value").set_value(f"'{literal}'").run()
        _no_failure(at)
        lookup = bitmap_frames.bitmap_lookup(table, column, f"'{literal}'")
        if lookup.empty:
            continue
        assert _metric(at, "Matching rows") == f"{int(lookup['matching_rows'].sum()):,}"
        assert int(lookup["matching_rows"].sum()) == int(top["cardinality"].iloc[0])
        break


def test_bitmap_layouts_are_rebuilt_only_when_asked(wh_path, overview, monkeypatch):
    """The V1 vs V2 rebuild (a pass over every row of 100 files) runs only once its toggle is on,
    then shows the same rebuilt sizes as the frame function."""
    name = _table_with(overview, "bitmap")
    table = indexcore.open_warehouse(str(wh_path)).table(name)
    rebuilt = []
    writer = bitmap_frames.BitmapWriter

    class Counted(writer):
        def __init__(self, *args, **kwargs):
            rebuilt.append(1)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(bitmap_frames, "BitmapWriter", Counted)
    at = _app(name, "bitmap")
    _no_failure(at)
    assert not rebuilt and not [d for d in at.dataframe if "layout" in d.value.columns]
    at.toggle(key="bitmap_layouts_on").set_value(True).run()
    _no_failure(at)
    column = at.selectbox(key="bitmap_column").value
    shown = _frame_with(at, "layout", "lookup_bytes")
    assert rebuilt, "rebuilt once asked"
    want = bitmap_frames.bitmap_layout_compare(table, column, index_block_size="16kb")
    assert sorted(shown["size"].tolist()) == sorted(want["size"].tolist()) and len(shown) == len(want)


def test_a_sampled_bitmap_lookup_is_an_estimate_with_its_interval(wh_path, overview, monkeypatch):
    """With a decode sample of one file, the lookup's count is labelled an estimate over every
    file carrying the bitmap, with its interval and sample, never shown as the table's total."""
    name = _table_with(overview, "bitmap")
    table = indexcore.open_warehouse(str(wh_path)).table(name)
    census = view(table, "file_indexes").to_pandas()
    carrying = census[census["index_type"] == "bitmap"].groupby("column_name", observed=True)["file_path"].nunique()
    if carrying.max() < 2:
        pytest.skip("no bitmap column in two files to sample one of")
    monkeypatch.setenv("INDEXCORE_DECODE_SAMPLE", "1")
    at = _app(name, "bitmap")
    at.selectbox(key="bitmap_column").select(str(carrying.idxmax())).run()
    _no_failure(at)
    labels = [m.label for m in at.metric]
    assert "Matching rows" not in labels and "Matching rows, estimated" in labels, labels
    assert _metric(at, "Matching rows, estimated").startswith("≈ ")
    assert any("sampled files" in c.value and "95% interval" in c.value for c in at.caption), \
        [c.value for c in at.caption]


def test_bad_sql_is_an_error_not_a_traceback(overview):
    at = _app(_table_with(overview, "bitmap"), "what_if")
    at.text_input(key="whatif_sql").set_value("this is not ( sql").run()
    assert not at.exception
    assert any("Explain" in e.value for e in at.error)
    assert at.selectbox(key="hyp_column").options, "the hypothetical-index section still works"


def test_what_if_builds_hypothetical_index(wh_path, overview):
    name = _table_with(overview, "bitmap")
    table = indexcore.open_warehouse(str(wh_path)).table(name)
    column = table.schema().field_names[-1]
    at = _app(name, "what_if")
    at.selectbox(key="hyp_column").select(column).run()
    at.selectbox(key="hyp_type").select("bloom-filter").run()
    at.button(key="hyp_build").click().run()
    _no_failure(at)
    assert _metric(at, "Files indexed") == str(len(table.plan().files))
    before = sorted(p.name for p in wh_path.rglob("*"))
    assert before == sorted(p.name for p in wh_path.rglob("*")), "nothing written into the warehouse"


def test_what_if_starts_from_a_pruning_predicate(wh_path, overview):
    """The default predicate is the one suggestion_frames.suggest_predicate derives, and the page shows it
    pruning: fewer files read than live, or fewer rows after the index than in the files."""
    names = overview["table"].tolist()
    wh = indexcore.open_warehouse(str(wh_path))
    name = next((n for n in names if suggestion_frames.suggest_predicate(wh.table(n))["prunes"]), None)
    if name is None:
        pytest.skip("no table where an equality prunes")
    expected = suggestion_frames.suggest_predicate(wh.table(name))
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(APP, default_timeout=90)
    at.session_state["table"] = name
    at.switch_page("pages/what_if.py").run()
    _no_failure(at)
    assert at.text_input(key="whatif_sql").value == expected["sql"]
    assert int(_metric(at, "Files read")) == expected["files_read"]
    assert int(_metric(at, "Files read")) < int(_metric(at, "Live files")) or \
        expected["rows_selected"] < expected["rows"]
    other = next(n for n in names if n != name)
    at.selectbox(key="table").select(other).run()
    _no_failure(at)
    assert at.text_input(key="whatif_sql").value == suggestion_frames.suggest_predicate(wh.table(other))["sql"], \
        "a new table starts from its own predicate"


def test_what_if_columns_follow_the_snapshot_schema(sweep_env):
    """At an older snapshot the hypothetical index offers that snapshot's columns (a later
    schema renamed and added some) and builds on them."""
    root = SWEEP_ROOTS[1]
    name = "append_with_bitmap_alter_table.append_with_bitmap_alter_table"
    if not root.is_dir():
        pytest.skip("../shared/conformance/warehouses/parquet is absent")
    from streamlit.testing.v1 import AppTest

    table = indexcore.open_warehouse(str(root)).table(name)
    first = table.snapshot_ids()[0]
    old = table.schema(table.snapshot(first).schema_id).field_names
    assert list(old) != list(table.schema().field_names), "the table's schema evolved"
    at = AppTest.from_file(APP, default_timeout=90)
    at.session_state["warehouse_url"] = str(root.resolve())
    at.session_state["table"] = name
    at.session_state["snapshot_id"] = first
    at.switch_page("pages/what_if.py").run()
    assert at.selectbox(key="hyp_column").options == list(old)
    at.selectbox(key="hyp_column").select(old[0]).run()
    at.button(key="hyp_build").click().run()
    _no_failure(at)
    assert _metric(at, "Files indexed") == str(len(table.plan(first).files))


def test_warehouse_outside_allowed_roots(tmp_path, overview):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(APP, default_timeout=90)
    at.session_state["warehouse_url"] = str(tmp_path)
    at.run()
    assert not at.exception
    assert any("allowed roots" in e.value for e in at.sidebar.error)


def test_problems_are_warnings(wh_path, overview):
    bad = overview[overview["problems"] > 0]
    if bad.empty:
        pytest.skip("no table with unreadable parts in this warehouse")
    name = str(bad.iloc[0]["table"])
    for page in ("warehouse", "table"):
        at = _app(name, page)
        _no_failure(at)
        assert at.warning, f"{page}: unreadable parts should be listed as warnings"


# ---------------------------------------------------------------------------------------
# Robustness sweep: every page on every table of the sample and the Java-written warehouses

SWEEP_ROOTS = [ROOT / "sample_warehouse"] + [ROOT.parent / "shared" / "conformance" / "warehouses" / name
                                             for name in ("parquet", "mixed")]
TITLES = {"warehouse": "Warehouse", "table": "Table", "bitmap": "Bitmap indexes", "bloom": "Bloom filters",
          "range": "Range-bitmap and BSI", "deletion_vectors": "Deletion vectors", "hash_index": "Hash index",
          "global_indexes": "Global indexes", "what_if": "What-if", "spark": "Spark"}


def _sweep_tables() -> list:
    out = []
    for root in SWEEP_ROOTS:
        if not root.is_dir():
            continue
        for name in indexcore.open_warehouse(str(root)).tables():
            out.append(pytest.param(str(root.resolve()), name, id=f"{root.name}/{name.split('.')[-1]}"))
    return out or [pytest.param(None, None, id="no-warehouse")]


@pytest.fixture
def sweep_env(monkeypatch):
    monkeypatch.setenv("INDEXCORE_ALLOWED_ROOTS", ",".join(str(r.resolve()) for r in SWEEP_ROOTS if r.is_dir()))


@pytest.mark.parametrize(("root", "name"), _sweep_tables())
def test_every_page_on_every_table(sweep_env, root, name):
    """Each page opens on each table: no exception, its title, and no error from an unexpected
    exception (``guard`` words those ``... failed: Type: ...``; unreadable parts are warnings
    or ``IndexCoreError`` messages)."""
    if root is None:
        pytest.skip("neither sample_warehouse/ nor ../shared/conformance/warehouses exists")
    from streamlit.testing.v1 import AppTest

    ids = indexcore.open_warehouse(root).table(name).snapshot_ids()
    # every page at the latest snapshot; the oldest one (older schema, fewer files) on the pages
    # that read per snapshot
    runs = [(None, PAGES)] + ([(ids[0], ["table", "bitmap", "range", "deletion_vectors", "what_if"])]
                              if len(ids) > 1 else [])
    for snapshot_id, pages in runs:
        at = AppTest.from_file(APP, default_timeout=120)
        at.session_state["warehouse_url"] = root
        at.session_state["table"] = name
        if snapshot_id is not None:
            at.session_state["snapshot_id"] = snapshot_id
        for page in pages:
            at.switch_page(f"pages/{page}.py").run()
            where = (page, snapshot_id)
            assert not at.exception, (where, [e.value for e in at.exception])
            assert at.selectbox(key="table").value == name, where
            if snapshot_id is not None:
                assert at.selectbox(key="snapshot_id").value == snapshot_id, where
            assert [t.value for t in at.title] == [TITLES[page]], where
            unexpected = [e.value for e in at.error if " failed: " in e.value]
            assert not unexpected, (where, unexpected)


# ---------------------------------------------------------------------------------------
# Spark page: one real run


@pytest.mark.spark
@pytest.mark.slow
def test_spark_page_runs_evaluate(wh_path, overview, monkeypatch):
    """Launch evaluate on the smallest table with ``local[1]``: the page shows the run and its
    numbers equal the single-process explain with verification."""
    pytest.importorskip("pyspark")
    import shutil

    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("Spark needs Java")
    from streamlit.testing.v1 import AppTest

    from indexcore.scan import explain

    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    name = str(overview.sort_values(["files", "rows"]).iloc[0]["table"])
    table = indexcore.open_warehouse(str(wh_path)).table(name)
    at = AppTest.from_file(APP, default_timeout=300)
    at.session_state["table"] = name
    at.session_state["spark_master"] = "local[1]"
    at.switch_page("pages/spark.py").run()
    _no_failure(at)
    sql = at.text_input(key="spark_sql").value
    at.button(key="spark_run").click().run()
    _no_failure(at)
    runs = at.session_state["spark_runs"]
    assert len(runs) == 1 and runs[0]["ok"], runs
    expected = explain(table, sql, verify=True)
    read = [f for f in expected.files if f.skipped_by is None]
    assert _metric(at, "Files read") == str(len(read))
    assert _metric(at, "Matching rows") == f"{sum(f.matching_rows or 0 for f in read):,}"
    assert _metric(at, "Violations") == "0"
    assert any(h.value.startswith("Run #1: evaluate") for h in at.subheader)
    assert at.dataframe, "the run's per-file table is shown"


def test_switching_table_resets_the_snapshot(wh_path, overview):
    """A snapshot picked on one table must not stick to the next table (it starts at its latest)."""
    from streamlit.testing.v1 import AppTest

    wh = indexcore.open_warehouse(str(wh_path))
    ids = {n: wh.table(n).snapshot_ids() for n in wh.tables()}
    pairs = [(a, b) for a in ids for b in ids
             if a != b and len(ids[a]) > 1 and ids[a][0] in ids[b] and ids[b][-1] != ids[a][0]]
    if not pairs:
        pytest.skip("no two tables where the old snapshot id would survive the switch")
    a, b = pairs[0]
    at = AppTest.from_file(APP, default_timeout=90)
    at.session_state["table"] = a
    at.session_state["snapshot_id"] = ids[a][0]
    at.run()
    _no_failure(at)
    assert at.session_state["selection"].snapshot_id == ids[a][0]
    at.session_state["table"] = b
    at.run()
    _no_failure(at)
    selection = at.session_state["selection"]
    assert (selection.table, selection.snapshot_id, selection.branch, selection.tag) == (b, ids[b][-1], "main", None)
    assert at.session_state["snapshot_id"] == ids[b][-1]
    at.switch_page("pages/table.py").run()
    assert _metric(at, "Live files") == str(len(wh.table(b).plan().files))


@pytest.fixture()
def tagged_env(tagged_warehouse, monkeypatch):
    monkeypatch.setenv("INDEXCORE_WAREHOUSE", str(tagged_warehouse))
    monkeypatch.delenv("INDEXCORE_ALLOWED_ROOTS", raising=False)
    return tagged_warehouse


def test_branch_and_tag_pickers(tagged_env):
    tagged_warehouse = tagged_env
    from streamlit.testing.v1 import AppTest

    wh = indexcore.open_warehouse(str(tagged_warehouse))
    tagged = wh.table("pk_table_scan_and_read_dv.pk_table_scan_and_read_dv")
    at = AppTest.from_file(APP, default_timeout=90)
    at.session_state["warehouse_url"] = str(tagged_warehouse)
    at.session_state["table"] = tagged.name
    at.session_state["tag"] = "v2"
    at.run()
    _no_failure(at)
    assert at.selectbox(key="tag").options == ["(no tag)", "v2"]
    assert at.selectbox(key="snapshot_id").value == 2
    assert at.session_state["selection"].tag == "v2"
    at.switch_page("pages/table.py").run()
    _no_failure(at)
    assert _metric(at, "Live files") == str(len(tagged.plan(2).files))

    at = AppTest.from_file(APP, default_timeout=90)
    at.session_state["warehouse_url"] = str(tagged_warehouse)
    at.session_state["table"] = "append_table_with_rt_branch.append_table_with_rt_branch"
    at.session_state["branch"] = "rt"
    at.run()
    _no_failure(at)
    assert at.selectbox(key="branch").options == ["main", "rt"]
    selection = at.session_state["selection"]
    assert (selection.branch, selection.table_ref) == ("rt", "append_table_with_rt_branch.append_table_with_rt_branch$branch_rt")
    branch = wh.table(selection.table_ref)
    at.switch_page("pages/table.py").run()
    _no_failure(at)
    assert _metric(at, "Rows") == f"{sum(lf.file.row_count for lf in branch.plan().files):,}"
    assert branch.schema().primary_keys != wh.table(selection.table).schema().primary_keys


# ---------------------------------------------------------------------------------------
# Sections: a failed section leaves the others running, and those that need it say so


def _guard_blocks(tree) -> list:
    import ast

    def is_guard(item) -> bool:
        call = item.context_expr
        return isinstance(call, ast.Call) and getattr(call.func, "id", None) == "guard"

    return sorted((n for n in ast.walk(tree) if isinstance(n, ast.With) and any(map(is_guard, n.items))),
                  key=lambda n: n.lineno)


def test_sections_declare_what_they_take_from_earlier_sections():
    """A value set inside one ``with guard(...)`` block and read in a later one must be named in a
    ``needs(...)`` call there: otherwise a failure of the first shows ``NameError`` in the second."""
    import ast

    undeclared, sections = [], {}
    for page in sorted((ROOT / "pages").glob("*.py")):
        tree = ast.parse(page.read_text())
        blocks = _guard_blocks(tree)
        sections[page.name] = len(blocks)
        inside = {id(n) for block in blocks for stmt in block.body for n in ast.walk(stmt)}
        # bound to a real value outside every section (a None placeholder does not count)
        rebound = {t.id for n in ast.walk(tree) if isinstance(n, ast.Assign) and id(n) not in inside
                   and not (isinstance(n.value, ast.Constant) and n.value.value is None)
                   for t in n.targets if isinstance(t, ast.Name)}
        for i, block in enumerate(blocks):
            nodes = [n for stmt in block.body for n in ast.walk(stmt)]
            own = {n.id for n in nodes if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
            loaded = {n.id for n in nodes if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)} - own - rebound
            declared = {a.id for n in nodes if isinstance(n, ast.Call) and getattr(n.func, "id", None) == "needs"
                        for a in n.args if isinstance(a, ast.Name)}
            for earlier in blocks[:i]:
                stored = {n.id for stmt in earlier.body for n in ast.walk(stmt)
                          if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
                undeclared += [(page.name, block.lineno, name) for name in sorted(stored & loaded - declared)]
    # the What-if page's five sections live in the module it imports (compiled once per process, not
    # re-read by Streamlit's magic on every run): they are read there, inside its function
    assert sections["what_if.py"] == 0 and sections["what_if_sections.py"] == 5, sections
    assert not undeclared, undeclared


def _failing_first_section():
    import streamlit as st

    from pages.common import guard, needs

    files = other = None
    with guard("Overview"):
        files = st.session_state.to_dict()["files"]  # KeyError: the first section fails
    with guard("Independent"):
        other = 1
        st.markdown(f"independent {other}")
    with guard("Files"):
        needs("Overview", files)
        st.markdown(f"{len(files)} files")


def test_failed_section_leaves_independent_ones_and_names_what_dependents_miss():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_function(_failing_first_section, default_timeout=90)
    at.run()
    assert not at.exception
    # the class, never the text (which may carry a storage backend's answer)
    assert [e.value for e in at.error] == ["Overview failed: KeyError, an unexpected error; the server log has the details."]
    assert [m.value for m in at.markdown] == ["independent 1"]
    assert [i.value for i in at.info] == ['Files: not shown, it needs what the section "Overview" computes, '
                                          "and that section failed."]


def test_table_without_snapshot_on_every_page(tmp_path, monkeypatch):
    """A table with a schema but no snapshot yet: every page says so, none fails (was KeyError: 'deleted')."""
    import shutil

    source = ROOT.parent / "shared" / "conformance" / "warehouses" / "parquet" / "pk_table_scan_and_read_dv.db"
    if not source.is_dir():
        pytest.skip("../shared/conformance is absent")
    shutil.copytree(source / "pk_table_scan_and_read_dv" / "schema", tmp_path / "db.db" / "t" / "schema")
    monkeypatch.setenv("INDEXCORE_ALLOWED_ROOTS", str(tmp_path))
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(APP, default_timeout=90)
    at.session_state["warehouse_url"] = str(tmp_path)
    at.session_state["table"] = "db.t"
    for page in PAGES:
        at.switch_page(f"pages/{page}.py").run()
        _no_failure(at)
        assert [t.value for t in at.title] == [TITLES[page]], page
        assert "This table has no snapshot yet." in [i.value for i in at.info], page


def _faulty_copy(root: Path, monkeypatch) -> Path:
    """demo.faulty of the sample (one corrupt, one missing ``.index``) copied into the scratch warehouse
    ``root`` (a new one per state: the app caches by warehouse URL)."""
    import shutil

    source = ROOT / "sample_warehouse" / "demo.db" / "faulty"
    if not source.is_dir():
        pytest.skip("sample_warehouse/ has no demo.faulty")
    shutil.copytree(source, root / "demo.db" / "faulty")
    monkeypatch.setenv("INDEXCORE_ALLOWED_ROOTS", str(root.parent))
    return root / "demo.db" / "faulty"


def _open_page(root: Path, table: str, page: str):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(APP, default_timeout=90)
    at.session_state["warehouse_url"] = str(root)
    at.session_state["table"] = table
    at.switch_page(f"pages/{page}.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_bitmap_page_lists_files_it_cannot_use(tmp_path, monkeypatch):
    _faulty_copy(tmp_path / "faulty", monkeypatch)
    at = _open_page(tmp_path / "faulty", "demo.faulty", "bitmap")
    assert "2 file(s) could not be used: 1 unreadable index, 1 missing .index file" in [w.value for w in at.warning]
    listed = at.dataframe[0].value
    assert sorted(listed["why"]) == ["missing .index file", "unreadable index"]
    # every configured .index file gone: the page lists all four files, not "No bitmap index"
    table_dir = _faulty_copy(tmp_path / "gone", monkeypatch)
    for index in (table_dir / "bucket-0").glob("*.index"):
        index.unlink()
    at = _open_page(tmp_path / "gone", "demo.faulty", "bitmap")
    warnings = [w.value for w in at.warning]
    assert "4 file(s) could not be used: 4 missing .index file" in warnings, warnings
    assert not [i.value for i in at.info if i.value.startswith("No bitmap index")]


def test_dv_page_lists_files_whose_dv_file_is_missing(tmp_path, monkeypatch):
    import shutil

    source = (ROOT.parent / "shared" / "conformance" / "warehouses" / "parquet" / "pk_table_with_dv_cardinality.db"
              / "pk_table_with_dv_cardinality")
    if not source.is_dir():
        pytest.skip("../shared/conformance is absent")
    shutil.copytree(source, tmp_path / "db.db" / "t")
    monkeypatch.setenv("INDEXCORE_ALLOWED_ROOTS", str(tmp_path))
    at = _open_page(tmp_path, "db.t", "deletion_vectors")
    assert not [w.value for w in at.warning if "could not be used" in w.value]
    table = indexcore.open_warehouse(str(tmp_path)).table("db.t")
    with_dv = sorted(lf.file.file_name for lf in table.plan().files if lf.deletion_vector)
    assert with_dv, "the conformance table has deletion vectors"
    shutil.copytree(tmp_path / "db.db", tmp_path / "gone" / "db.db")
    for dv_file in (tmp_path / "gone" / "db.db" / "t" / "index").iterdir():
        dv_file.unlink()
    at = _open_page(tmp_path / "gone", "db.t", "deletion_vectors")
    warnings = [w.value for w in at.warning]
    assert f"{len(with_dv)} file(s) could not be used: {len(with_dv)} missing DV file" in warnings, warnings
    assert sorted(at.dataframe[0].value["file_name"]) == with_dv


def test_prune_counts_keeps_no_index_apart():
    """A file without the index is not "kept by" it: the figure counts it in its own "no index" part."""

    sample = ROOT / "sample_warehouse"
    if not (sample / "demo.db" / "events").is_dir():
        pytest.skip("no sample warehouse")
    wh = indexcore.open_warehouse(str(sample))
    for name, where in (("demo.faulty", "amount BETWEEN 10 AND 20"), ("demo.events", "amount BETWEEN 10 AND 20")):
        pruned = pruning_frames.prune_by_sql(wh.table(name), where, ["range-bitmap", "bsi"])
        fig = range_figures.prune_counts(pruned, ["range-bitmap", "bsi"])
        bars = {(x, tr.name): y for tr in fig.data for x, y in zip(tr.x, tr.y, strict=True)}
        for kind in ("range-bitmap", "bsi"):
            col = pruned[kind].astype(str)
            none = int((col == "no index").sum())
            assert bars.get((kind, "no index"), 0) == none, (name, kind, bars)
            assert bars[(kind, "kept")] == int((~col.str.startswith("SKIP") & (col != "no index")).sum())
        if name == "demo.faulty":
            assert bars[("bsi", "kept")] == 0 and bars[("bsi", "no index")] == len(pruned)


def test_range_predicate_follows_the_column(wh_path, overview):
    name = _table_with(overview, "bsi")
    if name is None:
        pytest.skip("no table with a bsi index")
    at = _app(name, "range")
    _no_failure(at)
    box = at.selectbox(key="range_column")
    if len(box.options) < 2:
        pytest.skip("one range column only")
    first, second = box.options[0], box.options[1]
    assert at.text_input(key="range_sql").value.startswith(f"{first} ")
    at.selectbox(key="range_column").select(second).run()
    _no_failure(at)
    assert at.text_input(key="range_sql").value.startswith(f"{second} ")
    at.text_input(key="range_sql").set_value(f"{second} IS NULL").run()
    assert at.text_input(key="range_sql").value == f"{second} IS NULL", "a typed predicate stays"


def test_hash_page_says_one_thing_on_an_append_table(wh_path):
    wh = indexcore.open_warehouse(str(wh_path))
    appends = [n for n in wh.tables() if not wh.table(n).schema().primary_keys]
    if not appends:
        pytest.skip("no append table")
    at = _app(appends[0], "hash_index")
    _no_failure(at)
    infos = [i.value for i in at.info]
    assert infos == ["No hash index: this is an append table (no primary key), and Paimon keeps a dynamic-bucket "
                     "hash index only for primary-key tables with `bucket` = -1."], infos


def test_count_axes_have_whole_number_ticks():
    """Small counts (files, rows, keys, filters) tick 0, 1, 2... never 0.5."""
    import pandas as pd

    from indexcore.frames import figures

    sample = ROOT / "sample_warehouse"
    if not (sample / "demo.db" / "faulty").is_dir():
        pytest.skip("no sample warehouse")
    wh = indexcore.open_warehouse(str(sample))
    faulty = wh.table("demo.faulty")
    two = pd.DataFrame({"value": ["a", "b"], "cardinality": [2, 1], "files": [1, 1]})
    charts = {
        "prune_counts": range_figures.prune_counts(pruning_frames.prune_by_sql(faulty, "amount > 1", ["bsi"]), ["bsi"]),
        "top_values": figures.top_values(two),
        "values_per_file": figures.values_per_file(two.assign(file_name="f", partition="{}", bucket=0), ["a", "b"]),
        "bloom_fill": figures.bloom_fill(view(faulty, "bloom_filters").to_pandas()),
        "dv_trend": figures.dv_trend(pd.DataFrame({"snapshot_id": [1, 2], "row_count": [8, 8], "deleted": [0, 3],
                                                   "density": [0.0, 0.375], "dv_files": [0, 1]})),
        "hash_buckets": figures.hash_buckets(pd.DataFrame({"partition": ["{}"], "bucket": [0], "keys": [3],
                                                           "distinct": [3], "recorded_rows": [3], "index_files": [1],
                                                           "fill": [0.5]}), 6),
        "bar": figures.bar(pd.DataFrame({"what": ["existing", "both"], "rows": [3, 1]}), "what", "rows", "Rows"),
    }
    for name, fig in charts.items():
        assert fig.layout.yaxis.dtick == 1 and fig.layout.yaxis.tickformat == ",d", (name, fig.layout.yaxis)
    ratios = figures.bar(pd.DataFrame({"what": ["a", "b"], "ratio": [0.25, 0.5]}), "what", "ratio", "Ratio")
    assert ratios.layout.yaxis.dtick is None, "a ratio axis keeps Plotly's own ticks"


def test_what_if_validates_options_and_keeps_its_button(wh_path, overview):
    name = _table_with(overview, "bitmap")
    table = indexcore.open_warehouse(str(wh_path)).table(name)
    at = _app(name, "what_if")
    at.selectbox(key="hyp_column").select(table.schema().field_names[-1]).run()
    at.selectbox(key="hyp_type").select("bloom-filter").run()
    at.text_input(key="hyp_options").set_value("items=100, fpp=0.01").run()
    _no_failure(at)
    assert not at.button(key="hyp_build").disabled
    for raw, message in (("items", "an index option needs KEY=VALUE, got 'items'"),
                         ("items=100, chunk-size=4kb", "bloom-filter does not take chunk-size; it takes items, fpp")):
        at.text_input(key="hyp_options").set_value(raw).run()
        assert not at.exception
        assert [e.value for e in at.error] == [f"Options: {message}"]
        assert at.button(key="hyp_build").disabled, "the button stays, disabled until the options are fixed"
    from indexcore.analysis.whatif import build_hypothetical_index
    from indexcore.errors import IndexCoreError

    with pytest.raises(IndexCoreError, match="bsi does not take items; it takes no options"):
        build_hypothetical_index(table, table.schema().field_names[0], "bsi", {"items": "10"})


# ---------------------------------------------------------------------------------------
# What-if tells the whole cost; per-file statistics on What-if and Table


def _frame_with(at, *columns: str):
    for df in at.dataframe:
        if set(columns) <= set(df.value.columns):
            return df.value
    raise AssertionError(f"no dataframe with {columns} among {[list(d.value.columns) for d in at.dataframe]}")


def _parquet_stats(path: str, column: str) -> tuple:
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    values = pq.read_table(path, columns=[column]).column(column)
    bounds = pc.min_max(values)
    return bounds["min"].as_py(), bounds["max"].as_py(), values.null_count


def test_what_if_shows_the_whole_cost_and_the_stats_of_each_decision(wh_path, overview):
    from indexcore.scan import explain
    from pages.common import fmt_bytes

    name = _table_with(overview, "bitmap")
    table = indexcore.open_warehouse(str(wh_path)).table(name)
    column = table.schema().field_names[1]
    lf = table.plan().files[0]
    stats = explain(table, f"{column} IS NOT NULL").files[0].stats[column]
    sql = f"{column} = {stats['min']!r}" if isinstance(stats["min"], str) else f"{column} = {stats['min']}"
    at = _app(name, "what_if")
    at.text_input(key="whatif_sql").set_value(sql).run()
    _no_failure(at)
    ex = explain(table, sql)
    first, read = ex.funnel["all"], ex.funnel["read"]
    assert _metric(at, "Data bytes read") == fmt_bytes(read["bytes"])
    assert _metric(at, "Data bytes skipped") == fmt_bytes(first["bytes"] - read["bytes"])
    assert _metric(at, "Rows skipped") == f"{first['rows'] - read['rows']:,}"
    assert _metric(at, "Index bytes read") == fmt_bytes(sum(v["index_bytes"] for v in ex.funnel.values()))
    cost = _frame_with(at, "stage", "bytes_skipped", "index_bytes")
    assert list(cost["stage"]) == list(ex.funnel)
    assert list(cost["bytes"]) == [v["bytes"] for v in ex.funnel.values()]
    from indexcore.frames import figures
    from indexcore.frames.what_if import funnel_frame

    fig = figures.funnel_cost(funnel_frame(ex.funnel), size_text=fmt_bytes)
    assert [list(t.x) for t in fig.data] == [[v["files"] for v in ex.funnel.values()],
                                             [v["bytes"] for v in ex.funnel.values()]]
    assert fig.data[1].text[-1] == f"{fmt_bytes(read['bytes'])} ({read['bytes'] / first['bytes']:.0%})"
    import plotly.io as pio

    drawn = [pio.from_json(c.proto.spec) for c in at.get("plotly_chart")]
    assert any([list(t.text or ()) for t in d.data] == [list(t.text) for t in fig.data] for d in drawn), \
        "the page draws the cost funnel: files and data bytes left per stage"
    shown = _frame_with(at, "stats_decision", f"{column} min", f"{column} max", f"{column} nulls")
    assert len(shown) == len(ex.files)
    assert list(shown["stats_decision"]) == [f.stats_decision.value for f in ex.files]
    assert list(shown[f"{column} min"]) == [f.stats[column]["min"] for f in ex.files]
    assert list(shown[f"{column} nulls"]) == [f.stats[column]["null_count"] for f in ex.files]
    if lf.file.file_format == "parquet":
        by_path = {f.path: f for f in ex.files}
        low, high, nulls = _parquet_stats(lf.path, column)
        assert by_path[lf.path].stats[column] == {"min": low, "max": high, "null_count": nulls}


def test_what_if_compares_bytes_and_rows_skipped_before_and_after(wh_path, overview):
    from indexcore.analysis.whatif import build_hypothetical_index
    from indexcore.frames.what_if import whatif_frames
    from pages.common import fmt_bytes

    name = _table_with(overview, "bitmap")
    table = indexcore.open_warehouse(str(wh_path)).table(name)
    column = table.schema().field_names[-1]
    at = _app(name, "what_if")
    sql = at.text_input(key="whatif_sql").value
    at.selectbox(key="hyp_column").select(column).run()
    at.selectbox(key="hyp_type").select("bloom-filter").run()
    at.button(key="hyp_build").click().run()
    _no_failure(at)
    totals = whatif_frames(build_hypothetical_index(table, column, "bloom-filter", {}), sql)["totals"]
    after = totals.set_index("what").loc["combined"]
    assert _metric(at, "Data bytes skipped (with it)") == fmt_bytes(after["bytes_skipped"])
    assert _metric(at, "Rows skipped (with it)") == f"{int(after['rows_skipped']):,}"
    assert _metric(at, "Index bytes read (with it)") == fmt_bytes(after["index_bytes"])
    shown = _frame_with(at, "what", "bytes_skipped", "rows_skipped", "index_bytes")
    assert list(shown["bytes_skipped"]) == list(totals["bytes_skipped"])


def test_table_page_shows_per_file_statistics(wh_path, overview):
    name = _table_with(overview, "bitmap")
    table = indexcore.open_warehouse(str(wh_path)).table(name)
    column = table.schema().field_names[1]
    at = _app(name, "table")
    _no_failure(at)
    at.session_state["table_tab"] = "Column statistics"  # the Table page's tabs are lazy
    at.run()
    at.selectbox(key="stats_column").select(column).run()
    _no_failure(at)
    files = table.plan().files
    shown = _frame_with(at, "column", "min", "max", "null_count")
    assert len(shown) == len(files) and set(shown["column"]) == {column}
    checked = 0
    for lf in files[:4]:
        if lf.file.file_format != "parquet":
            continue
        row = shown[shown["file_name"] == lf.file.file_name].iloc[0]
        assert (row["min"], row["max"], row["null_count"]) == _parquet_stats(lf.path, column)
        checked += 1
    # one file: every column of it
    at.selectbox(key="stats_file").select(files[0].file.file_name).run()
    at.selectbox(key="stats_column").select("(every column)").run()
    _no_failure(at)
    one = _frame_with(at, "column", "min", "max", "null_count")
    assert list(one["column"]) == list(table.schema().field_names)
    assert set(one["file_name"]) == {files[0].file.file_name}
    assert checked or files[0].file.file_format != "parquet"


def test_metric_counts_carry_thousands_separators() -> None:
    """A count on a metric reads 966,800, not 966800 (the pages' metrics at 1,000,000 files); one
    wider than a narrow column's width in millions or billions; any other value as it is."""
    import numpy as np

    from indexcore.frames.text import fmt_count

    assert fmt_count(966_800) == "966,800" and fmt_count(np.int64(2210)) == "2,210" and fmt_count(7) == "7"
    assert fmt_count(115_081_690) == "115,081,690" and fmt_count(115_081_690, width=9) == "115.1 M"
    assert fmt_count(3_400_000_000, width=9) == "3.4 B" and fmt_count(99_999_999, width=10) == "99,999,999"
    assert fmt_count("–") == "–" and fmt_count(True) is True and fmt_count(0.5) == 0.5
