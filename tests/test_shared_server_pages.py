"""A shared server's pages against a hostile warehouse (issue 28): names and values are text, never markup.

The warehouse is built here: a table named like a markdown link, a column named like a markdown
image of a URL on a listener on 127.0.0.1, and string values that are HTML links to it. The
markdown the pages send is checked with a foreign CommonMark implementation (markdown-it-py) in
AppTest, and the pages are loaded in real Chromium while the listener counts requests.
"""

from __future__ import annotations

import http.server
import os
import threading
import time
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest
from test_app import _served_through_app
from test_browser import CHROME_ARGS, CHROMIUM, _wait_idle

from indexcore.frames import figures, range_figures
from indexcore.frames.text import code, html, md

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")
TABLE = "db.x[y](z)"
HOSTILE_PAGES = ["warehouse", "table", "bitmap", "range", "what_if", "advisor"]


def _markdown_html(text: str) -> str:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").render(text)


HOSTILE_TEXTS = ["![t](http://127.0.0.1:9/x.png)", "[x](http://e.example/)", "<img src=x onerror=alert(1)>",
                 "a_b_c *d* ~~e~~ $x^2$ :red[r] :material/home: `tick` ``two``", "# heading\n1. item\n- item",
                 "&amp; &lt;b&gt; \\[y\\](http://e/)", "www.example.com a@b.co https://e.example/p"]


@pytest.mark.parametrize("text", HOSTILE_TEXTS)
def test_md_and_code_render_exactly_their_text(text):
    """CommonMark (markdown-it-py, not our code) renders md(text) as one paragraph of the text itself
    (the word joiners md puts into autolink triggers aside) and code(text) as one code span of it."""
    import html as stdlib_html

    out = _markdown_html(md(text))
    assert "<a " not in out and "<img" not in out and "<em>" not in out and "<h1>" not in out, out
    shown = stdlib_html.unescape(out.removeprefix("<p>").removesuffix("</p>\n")).replace("\u2060", "")
    assert shown == text
    assert "://" not in md(text).replace("\u2060", "") or "http:\u2060//" in md(text) or "https:\u2060//" in md(text)
    span = _markdown_html(code(text))
    inner = span.removeprefix("<p><code>").removesuffix("</code></p>\n")
    assert span.startswith("<p><code>") and stdlib_html.unescape(inner) == text.replace("\n", " ")


def test_figures_escape_every_string_they_are_given():
    """Every text Plotly gets from data (ticks, legend, hover, titles) comes with <, > and & as entities."""
    link = '<a href="http://127.0.0.1:9/v">v</a>'
    top = pd.DataFrame({"value": [link, "b&c"], "cardinality": [3, 1], "files": [1, 1]})
    values = pd.DataFrame({"value": [link, "b&c"], "cardinality": [3, 1], "file_name": ["f<1>", "f2"],
                           "partition": ["p", "p"], "bucket": [0, 0]})
    ranges = pd.DataFrame({"file_name": ["<b>f</b>"], "index_type": ["bsi"], "min": [1], "max": [5]})
    drawn = [figures.top_values(top, f"Top of {link}"), figures.values_per_file(values, [link, "b&c"], link),
             figures.bar(top, "value", "cardinality", link, color="value"),
             range_figures.value_ranges(ranges, 2, 3, title=link)]
    for fig in drawn:
        texts = [fig.layout.title.text]
        for trace in fig.data:
            for attr in ("x", "y", "name", "hovertemplate", "text", "customdata"):
                value = getattr(trace, attr, None)
                if value is None:
                    continue
                items = value if isinstance(value, list | tuple) else getattr(value, "tolist", lambda v=value: [v])()
                texts += [str(v) for v in pd.core.common.flatten(items)]
        assert not [t for t in texts if "<a" in t or "<b>f" in t], texts
        assert any(html(link) in t for t in texts), texts


@pytest.fixture(scope="module")
def listener():
    """An HTTP server on 127.0.0.1 that records every path asked of it."""
    hits: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - the stdlib's name
            hits.append(self.path)
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1], hits
    server.shutdown()


@pytest.fixture(scope="module")
def hostile(tmp_path_factory, listener):
    """A warehouse whose table name is a markdown link, whose BSI column is a markdown image of a URL
    on the listener, and whose bitmap-indexed values are HTML links to it."""
    from indexcore.write import TableWriter, make_schema

    port, _hits = listener
    root = tmp_path_factory.mktemp("hostile")
    column = f"![t](http://127.0.0.1:{port}/column.png)"
    value = f'<a href="http://127.0.0.1:{port}/value">v</a>'
    schema = make_schema([(column, "INT"), ("v", "STRING")],
                         options={"file-index.bitmap.columns": "v", "file-index.bsi.columns": column})
    writer = TableWriter.create(str(root), TABLE, schema)
    for start in (0, 20):
        writer.write(pa.table({column: pa.array(range(start, start + 20), pa.int32()),
                               "v": [value if i % 2 else "plain" for i in range(20)]}))
    return root, column, value


def _hostile_app(root: Path, page: str):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(APP, default_timeout=120)
    at.session_state["warehouse_url"] = str(root)
    at.session_state["table"] = TABLE
    at.switch_page(f"pages/{page}.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.mark.parametrize("page", HOSTILE_PAGES)
def test_pages_send_names_as_text(hostile, page, monkeypatch):
    """Every markdown element a page sends renders (CommonMark) without a link or an image, though
    the table and column names are written as both."""
    root, column, _value = hostile
    _served_through_app(monkeypatch)
    monkeypatch.setenv("INDEXCORE_ALLOWED_ROOTS", str(root))
    at = _hostile_app(root, page)
    assert not [e.value for e in at.error], [e.value for e in at.error]
    sent = [el.value for kind in ("markdown", "caption", "warning", "info", "subheader", "error", "success")
            for el in getattr(at, kind)]
    assert sent
    for text in sent:
        out = _markdown_html(text)
        assert "<a " not in out and "<img" not in out, (text, out)
    if page == "advisor":  # the workload it starts from names the table quoted, and reads it
        from indexcore.analysis.workload import parse_workload, scans

        text = at.text_area(key="advisor_workload").value
        assert text.startswith("SELECT * FROM db.`x[y](z)` WHERE `"), text
        read, skipped = scans(parse_workload(text), TABLE, [column, "v"])
        assert read and not skipped, skipped
    if page in ("range", "what_if"):  # the SQL the page starts from names the column quoted, and parses
        key = "range_sql" if page == "range" else "whatif_sql"
        sql = at.text_input(key=key).value
        assert sql.startswith(f"`{column}`"), sql


@pytest.mark.browser
@pytest.mark.slow
def test_hostile_names_fetch_nothing_and_link_nowhere_in_chromium(hostile, listener, streamlit_server):
    """Real Chromium on every page of the hostile table: the listener the names and values point at
    gets no request, and no page has a link or image to it (markdown, plotly ticks, legends)."""
    if not CHROMIUM.exists():
        pytest.skip("Debian chromium is not installed at /usr/bin/chromium")
    pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    from playwright.sync_api import sync_playwright

    root, _column, _value = hostile
    listen_port, hits = listener
    with streamlit_server({"INDEXCORE_WAREHOUSE": str(root), "INDEXCORE_ALLOWED_ROOTS": str(root)}) as url:
        target = f"127.0.0.1:{listen_port}"
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROME_ARGS, headless=True)
            try:
                page = browser.new_page(viewport={"width": 1400, "height": 2000})
                for path in HOSTILE_PAGES:
                    page.goto(f"{url}/{'' if path == 'warehouse' else path}")
                    _wait_idle(page, 60)
                    main = page.locator('[data-testid="stMain"]')
                    assert page.locator('[data-testid="stException"]').count() == 0, path
                    if path in ("warehouse", "table"):  # the name is shown, as the text it is
                        assert "db.x[y](z)" in main.inner_text().replace("\u2060", ""), path
                    links = [a.get_attribute("href") or "" for a in main.locator("a").all()]
                    assert not [h for h in links if target in h or h in ("z", "http://e.example/")], (path, links)
                    sources = [i.get_attribute("src") or "" for i in page.locator("img, image").all()]
                    assert not [s for s in sources if target in s], (path, sources)
                    # plotly draws ticks, legends and titles as svg text: a link there is an <a> in the svg
                    assert main.locator("svg a").count() == 0, path
            finally:
                browser.close()
        assert hits == [], f"the browser fetched {hits} from the listener"


# ---------------------------------------------------------------------------------------
# What-if: bounded work per session and per server (issue 28 item 1)

SAMPLE = ROOT / "sample_warehouse"


@pytest.fixture(scope="module")
def events():
    import indexcore

    if not SAMPLE.is_dir():
        pytest.skip("sample_warehouse/ is absent")
    return indexcore.open_warehouse(str(SAMPLE)).table("demo.events")


def test_bloom_options_that_only_cost_memory_are_refused_with_the_reason(events):
    from indexcore.analysis.whatif import ITEMS_OVER_ROWS, check_hypothetical
    from indexcore.errors import IndexCoreError
    from indexcore.formats.registry import new_writer
    from indexcore.types import parse_type

    largest = max(lf.file.row_count for lf in events.plan().files)
    with pytest.raises(IndexCoreError, match=f"far above the {largest:,} rows of the largest data file"):
        check_hypothetical(events, "bloom-filter", {"items": "2147483647", "fpp": "0.01"})
    with pytest.raises(IndexCoreError, match="below this server's floor of 1e-06"):
        check_hypothetical(events, "bloom-filter", {"items": "10", "fpp": "1e-9"}, min_fpp=1e-6)
    with pytest.raises(IndexCoreError, match="over this server's budget of 100 bytes"):
        check_hypothetical(events, "bloom-filter", {"items": str(largest), "fpp": "0.01"}, max_bytes=100)
    items = ITEMS_OVER_ROWS * largest  # the largest filter the page allows is exactly the one a writer makes
    per_file = check_hypothetical(events, "bloom-filter", {"items": str(items), "fpp": "1e-6"}, min_fpp=1e-6)
    writer = new_writer("bloom-filter", parse_type("INT"), {"items": str(items), "fpp": "1e-6"})
    writer.write(1)
    assert per_file == len(writer.serialized_bytes())
    assert check_hypothetical(events, "bitmap", {}) is None


def test_a_build_stops_at_its_budget_on_a_random_sample_and_gives_the_bytes_back(events):
    from indexcore.analysis.whatif import SERVER, SESSION, ByteBudget, build_hypothetical_index

    column = events.schema().field_names[0]
    options = {"items": "400", "fpp": "0.01"}
    whole = build_hypothetical_index(events, column, "bloom-filter", options)
    per_file = whole.files[0].size
    live = {lf.path for lf in events.plan().files}
    assert whole.limited_by is None and len(whole.files) == len(live) == whole.total_files
    budget = ByteBudget(10 * per_file)
    with build_hypothetical_index(events, column, "bloom-filter", options, max_bytes=3 * per_file,
                                  budget=budget) as first:
        assert first.limited_by == SESSION and len(first.files) == 3 and first.total_size <= 3 * per_file
        assert {f.path for f in first.files} <= live and budget.used == 3 * per_file
        blobs = {f.path: f.blob for f in whole.files}
        assert all(f.blob == blobs[f.path] for f in first.files), "a sampled file's index is the same bytes"
        with build_hypothetical_index(events, column, "bloom-filter", options, budget=budget, seed=1) as second:
            assert second.limited_by == SERVER and len(second.files) == 7, "the server's budget holds both"
            assert budget.used == budget.limit
        assert budget.used == 3 * per_file
    assert budget.used == 0 and budget.peak == budget.limit
    assert all(f.blob is None for f in first.files), "a released index keeps no bytes"


def _what_if_app(table: str = "demo.events", root: Path = SAMPLE):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(APP, default_timeout=300)
    at.session_state["warehouse_url"] = str(root)
    at.session_state["table"] = table
    at.switch_page("pages/what_if.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_what_if_page_refuses_huge_options_and_keeps_no_index_bytes(events, monkeypatch):
    import pickle

    _served_through_app(monkeypatch)
    monkeypatch.delenv("INDEXCORE_ALLOWED_ROOTS", raising=False)
    at = _what_if_app()
    at.selectbox(key="hyp_column").select(events.schema().field_names[0]).run()
    at.selectbox(key="hyp_type").select("bloom-filter").run()
    at.text_input(key="hyp_options").set_value("items=2147483647, fpp=1e-9").run()
    assert any("far above" in e.value for e in at.error), [e.value for e in at.error]
    assert at.button(key="hyp_build").disabled
    at.text_input(key="hyp_options").set_value("items=100, fpp=1e-9").run()
    assert any("below this server's floor" in e.value for e in at.error), [e.value for e in at.error]
    # a budget of three files' filters: the page builds a sample and says so
    monkeypatch.setenv("INDEXCORE_WHATIF_SESSION_BYTES", "1000")
    at.text_input(key="hyp_options").set_value("items=100, fpp=0.01").run()
    at.button(key="hyp_build").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    files = len(events.plan().files)
    assert any(w.value.startswith("Built on a random sample of ") and f"of the {files:,} live files" in w.value
               for w in at.warning), [w.value for w in at.warning]
    kept = at.session_state["hyp"][1]
    assert 0 < kept["files_indexed"] < files and kept["index_bytes"] <= 1000
    state = pickle.dumps(kept)
    assert b"HypotheticalIndex" not in state and len(state) < 200_000, "frames only, never the built blobs"


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _one_runtime_for_all_sessions(monkeypatch) -> None:
    """Give sessions run in threads the one runtime a server gives all its sessions.

    AppTest installs a runtime of its own for each run in ``Runtime._instance`` (a class attribute)
    and sets it back to None when that run ends. With sessions in threads, one session's end leaves
    another session's script thread without a runtime: "Runtime hasn't been created!" when it asks
    for the media file manager, the thread dies and its run ends without its results. Here the last
    runtime installed answers while ``_instance`` is None (and is the only answer before any is)."""
    from streamlit.runtime.runtime import Runtime

    last: list = []

    def current(cls):
        if cls._instance is not None:
            last[:] = [cls._instance]
            return cls._instance
        if last:
            return last[0]
        raise RuntimeError("Runtime hasn't been created!")

    monkeypatch.setattr(Runtime, "instance", classmethod(current))
    monkeypatch.setattr(Runtime, "exists", classmethod(lambda cls: cls._instance is not None or bool(last)))


def _thread_exceptions(monkeypatch) -> list:
    """Every exception a thread leaves unhandled from now to the test's end (threading.excepthook):
    a session's script thread that dies is a failure of the test, not a warning after it."""
    raised: list = []
    monkeypatch.setattr(threading, "excepthook", lambda args: raised.append((args.thread.name, args.exc_value)))
    return raised


def _reruns_after_the_gate(arrived, gate):
    """An AppTest script (run from its source): says it started, waits for the test, reruns once."""
    import streamlit as st

    if "again" not in st.session_state:
        st.session_state["again"] = True
        arrived.set()
        gate.wait(120)  # a bound on a stuck test, not a pause: the test opens the gate
        st.rerun()
    st.write("ran twice")


def _does_nothing():
    """An AppTest script whose run ends at once."""


def test_a_session_that_outlives_another_still_has_a_runtime(monkeypatch):
    """Session A's script is running when session B's run starts and ends (B sets the runtime back to
    None); A then reruns, and a run's start asks the runtime for its media file manager. Without one
    runtime for all sessions A's script thread dies there ("Runtime hasn't been created!")."""
    from streamlit.testing.v1 import AppTest

    _one_runtime_for_all_sessions(monkeypatch)
    died = _thread_exceptions(monkeypatch)
    arrived, gate = threading.Event(), threading.Event()
    first = AppTest.from_function(_reruns_after_the_gate, args=(arrived, gate), default_timeout=120)
    runner = threading.Thread(target=first.run)
    runner.start()
    try:
        assert arrived.wait(120), "session A's script never started"
        second = AppTest.from_function(_does_nothing).run()
        assert not second.exception
    finally:
        gate.set()
        runner.join()
    assert not died, died
    assert not first.exception, [e.value for e in first.exception]
    assert [m.value for m in first.markdown] == ["ran twice"]


@pytest.mark.slow
def test_twenty_sessions_asking_for_the_largest_index_stay_under_the_budget(monkeypatch):
    """20 sessions at once on the 50,000-file sample (``python -m indexcore sample build DIR --scale
    large --files 50000``, as bench/bench_app.py caches it; ``INDEXCORE_TEST_LARGE`` names another),
    each building the largest bloom filter the What-if page allows: the bytes the server accounts
    never pass its budget, each session keeps at most its own budget's worth, and the process grows
    by far less than the unbounded builds would hold (about 5,900 bytes x 45,504 files = 268 MB each)."""
    import gc
    import pickle
    import tempfile

    import indexcore
    from indexcore.analysis.whatif import ITEMS_OVER_ROWS, ByteBudget

    root = Path(os.environ.get("INDEXCORE_TEST_LARGE")
                or Path(tempfile.gettempdir()) / "indexcore-bench" / "large-50000")
    if not (root / "large.db").is_dir():
        pytest.skip(f"no large sample at {root} (bench/bench_app.py builds it)")
    session, server, sessions = 256 << 10, 2 << 20, 20
    _served_through_app(monkeypatch)
    _one_runtime_for_all_sessions(monkeypatch)
    died = _thread_exceptions(monkeypatch)
    monkeypatch.setenv("INDEXCORE_ALLOWED_ROOTS", str(root))
    monkeypatch.setenv("INDEXCORE_WHATIF_SESSION_BYTES", str(session))
    monkeypatch.setenv("INDEXCORE_WHATIF_SERVER_BYTES", str(server))
    table = indexcore.open_warehouse(str(root)).table("large.events")
    largest = max(lf.file.row_count for lf in table.plan().files)
    options = f"items={ITEMS_OVER_ROWS * largest}, fpp=1e-06"

    def one_session(out: list) -> None:
        from streamlit.testing.v1 import AppTest

        at = AppTest.from_file(APP, default_timeout=900)
        for key, value in (("warehouse_url", str(root)), ("table", "large.events"), ("hyp_column", "event_id"),
                           ("hyp_type", "bloom-filter"), ("hyp_options", options)):
            at.session_state[key] = value
        at.switch_page("pages/what_if.py").run()
        at.button(key="hyp_build").click().run()
        out.append(at)

    warm: list = []
    one_session(warm)  # the shared caches (plan, explain frames) are built once, as on a server
    assert not warm[0].exception and not warm[0].error, [e.value for e in warm[0].error]
    gc.collect()
    before = _rss_mb()
    done: list = []
    failed: list = []

    def guarded(out: list) -> None:
        try:
            one_session(out)
        except KeyError as exc:  # AppTest is not thread-safe: its widget registry can lose a key
            failed.append(exc)

    threads = [threading.Thread(target=guarded, args=(done,)) for _ in range(sessions)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # CPython 3.11's compiler is not thread-safe either (gh-106905): a page compiled in two AppTest
    # threads at once can fail with "AST constructor recursion depth mismatch". A real server
    # compiles each page once (its script cache); such a session, too, runs again alone.
    racing = [at for at in done if any("AST constructor recursion depth" in str(e.value) for e in at.exception)
              or "hyp" not in at.session_state]  # a run that lost its session state to the race
    done[:] = [at for at in done if not any(at is r for r in racing)]
    for _ in failed + racing:  # such a session runs again alone, still beside the others' kept state
        one_session(done)
    gc.collect()
    grown = _rss_mb() - before
    assert not died, died  # no session's script thread died (each AppTest run joins its own)
    assert not [t.name for t in threading.enumerate() if t.name == "ScriptRunner.scriptThread"]
    assert len(done) == sessions
    kept = []
    for at in done:
        assert not at.exception, [e.value for e in at.exception]
        kept.append(at.session_state["hyp"][1])
    built = [k for k in kept if "refused" not in k]
    assert built, "no session built anything"
    assert all(0 < k["index_bytes"] <= session for k in built)
    budgets = [o for o in gc.get_objects() if isinstance(o, ByteBudget) and o.limit == server]
    assert budgets and all(b.peak <= server and b.used == 0 for b in budgets), [(b.peak, b.used) for b in budgets]
    print(f"\n{sessions} sessions: {len(built)} built (indexes of {sum(k['files_indexed'] for k in built):,} "
          f"files, {sum(k['index_bytes'] for k in built):,} bytes), server peak "
          f"{max(b.peak for b in budgets):,} of {server:,} bytes; RSS grew {grown:.0f} MB")
    for at in done:  # between runs a session keeps its small results, no frame of the last run
        assert not at.session_state["context"]._run
        assert len(pickle.dumps(at.session_state["hyp"][1])) < 1_000_000
    # measured: 229 MB (it was 1,937 MB while each session's Context kept its last run's frames)
    assert grown < 512, f"20 sessions grew the process by {grown:.0f} MB"


# ---------------------------------------------------------------------------------------
# Optional sign-in (issue 28 item 7): the mapping of users and groups to roots, in AppTest with st.user


def test_user_roots_mapping_reads_json_and_says_what_is_wrong(tmp_path):
    from indexcore.errors import IndexCoreError
    from pages.auth import parse_user_roots, roots_for

    mapping = parse_user_roots('{"Alice@Example.com": ["/a", "/shared"], "group:analysts": ["/g"], "*": ["/shared"]}')
    assert roots_for(mapping, "alice@example.COM", []) == ("/a", "/shared")
    assert roots_for(mapping, "bob@example.com", ["analysts", "other"]) == ("/g", "/shared")
    assert roots_for(parse_user_roots('{"bob@example.com": ["/b"]}'), "carol@example.com", ["x"]) == ()
    file = tmp_path / "roots.json"
    file.write_text('{"*": ["/f"]}')
    assert parse_user_roots(str(file)) == {"*": ("/f",)}
    with pytest.raises(IndexCoreError, match=r"INDEXCORE_APP_USER_ROOTS \(the setting\) is not JSON: .* line 1"):
        parse_user_roots('{"a": [}')
    with pytest.raises(IndexCoreError, match="must map each user, group:NAME or \\* to a list of roots"):
        parse_user_roots('{"a": "/not-a-list"}')
    with pytest.raises(IndexCoreError, match="cannot read"):
        parse_user_roots(str(tmp_path / "missing.json"))


@pytest.fixture
def two_roots(tmp_path, monkeypatch):
    """Sign-in on: alice may read the sample warehouse, the analysts group a copy of it elsewhere."""
    import json
    import shutil

    if not SAMPLE.is_dir():
        pytest.skip("sample_warehouse/ is absent")
    other = tmp_path / "team"
    shutil.copytree(SAMPLE, other)
    _served_through_app(monkeypatch)
    monkeypatch.setenv("INDEXCORE_ALLOWED_ROOTS", ",".join([str(SAMPLE), str(other)]))
    monkeypatch.setenv("INDEXCORE_APP_SIGN_IN", "on")
    monkeypatch.setenv("INDEXCORE_APP_USER_ROOTS", json.dumps({"alice@example.com": [str(SAMPLE)],
                                                                "group:analysts": [str(other)]}))
    return SAMPLE.resolve(), other.resolve()


def _signed_in_app(user: dict | None):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(APP, default_timeout=120)
    if user is not None:
        at.user = user
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_sign_in_gates_the_app_and_maps_each_user_to_their_roots(two_roots):
    sample, other = two_roots
    at = _signed_in_app({"is_logged_in": False})
    assert [b.key for b in at.button] == ["sign_in"] and not at.sidebar.text_input, "nothing but the sign-in"
    at = _signed_in_app({"is_logged_in": True, "email": "carol@example.com"})
    assert any("no warehouse to read" in w.value for w in at.warning) and not at.sidebar.text_input
    at = _signed_in_app({"is_logged_in": True, "email": "alice@example.com"})
    assert at.text_input(key="warehouse_url").value == str(sample)
    assert at.selectbox(key="table").options, "alice reads her root"
    at.text_input(key="warehouse_url").set_value(str(other)).run()  # the server allows it, alice's mapping not
    assert any("allowed" in e.value for e in at.sidebar.error), [e.value for e in at.sidebar.error]
    at = _signed_in_app({"is_logged_in": True, "email": "bob@example.com", "groups": ["analysts"]})
    assert at.text_input(key="warehouse_url").value == str(other)
    assert at.selectbox(key="table").options, "bob reads his group's root"


def test_figures_take_object_columns_without_strings():
    """An object column of numbers or None (decimal min/max, empty errors) is drawn as before."""
    import decimal

    ranges = pd.DataFrame({"file_name": ["f"], "index_type": ["bsi"], "min": [decimal.Decimal("1.5")],
                           "max": [decimal.Decimal("2.5")], "error": [None]}).astype({"error": object})
    fig = range_figures.value_ranges(ranges)
    assert list(fig.data[0].x) == [1.5, 2.5]


def _oidc_provider(email: str, groups: list[str], client_id: str):
    """A minimal OpenID Connect provider on 127.0.0.1: discovery, an authorize endpoint that signs
    the user in at once, a token endpoint issuing an RS256 id_token with the request's nonce, and
    its JWKS. Returns the server and the paths it was asked for."""
    import json
    import secrets as token_bytes
    import urllib.parse

    from joserfc import jwt
    from joserfc.jwk import RSAKey

    key = RSAKey.generate_key(2048, parameters={"kid": "k1", "use": "sig", "alg": "RS256"})
    nonces: dict[str, str | None] = {}
    asked: list[str] = []

    class Provider(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def _json(self, doc: dict) -> None:
            body = json.dumps(doc).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _base(self) -> str:
            return f"http://127.0.0.1:{self.server.server_address[1]}"

        def do_GET(self):  # noqa: N802 - the stdlib's name
            url = urllib.parse.urlparse(self.path)
            query = dict(urllib.parse.parse_qsl(url.query))
            asked.append(url.path)
            base = self._base()
            if url.path == "/.well-known/openid-configuration":
                self._json({"issuer": base, "authorization_endpoint": f"{base}/authorize",
                            "token_endpoint": f"{base}/token", "jwks_uri": f"{base}/jwks",
                            "response_types_supported": ["code"], "subject_types_supported": ["public"],
                            "id_token_signing_alg_values_supported": ["RS256"]})
            elif url.path == "/jwks":
                self._json({"keys": [key.as_dict(private=False)]})
            elif url.path == "/authorize":
                code = token_bytes.token_urlsafe(8)
                nonces[code] = query.get("nonce")
                self.send_response(302)
                self.send_header("Location", query["redirect_uri"] + "?" + urllib.parse.urlencode(
                    {"code": code, "state": query.get("state", "")}))
                self.end_headers()
            else:
                self.send_response(404)
                self.end_headers()

        def do_POST(self):  # noqa: N802
            asked.append(self.path)
            form = dict(urllib.parse.parse_qsl(self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()))
            now = int(time.time())
            claims = {"iss": self._base(), "sub": "user-1", "aud": client_id, "iat": now, "exp": now + 600,
                      "email": email, "groups": groups, "nonce": nonces.pop(form.get("code"), None)}
            self._json({"access_token": "token", "token_type": "Bearer", "expires_in": 600,
                        "id_token": jwt.encode({"alg": "RS256", "kid": "k1"}, claims, key)})

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Provider)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, asked


@pytest.mark.browser
@pytest.mark.slow
def test_sign_in_through_a_local_oidc_provider_in_chromium(tmp_path, streamlit_server, free_port):
    """Sign-in on, with an OIDC provider stub on 127.0.0.1: the app shows only "Sign in"; clicking it
    goes through the provider and back, and the signed-in user (group analysts) opens their group's root."""
    if not CHROMIUM.exists() or not SAMPLE.is_dir():
        pytest.skip("needs /usr/bin/chromium and sample_warehouse/")
    pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    pytest.importorskip("authlib", reason="st.login needs Authlib (pip install indexcore[auth])")
    pytest.importorskip("httpx", reason="st.login needs httpx (pip install indexcore[auth])")
    pytest.importorskip("joserfc", reason="the provider stub signs with joserfc (Authlib's dependency)")
    import json

    from playwright.sync_api import sync_playwright

    provider, asked = _oidc_provider("bob@example.com", ["analysts"], "indexcore")
    port = free_port()
    secrets_file = tmp_path / "secrets.toml"
    secrets_file.write_text(
        f'[auth]\nredirect_uri = "http://127.0.0.1:{port}/oauth2callback"\n'
        f'cookie_secret = "{os.urandom(16).hex()}"\nclient_id = "indexcore"\nclient_secret = "not-a-secret"\n'
        f'server_metadata_url = "http://127.0.0.1:{provider.server_address[1]}/.well-known/openid-configuration"\n')
    env = {"INDEXCORE_APP_SIGN_IN": "on", "INDEXCORE_ALLOWED_ROOTS": str(SAMPLE),
           "INDEXCORE_APP_USER_ROOTS": json.dumps({"group:analysts": [str(SAMPLE)]})}
    try:
        with streamlit_server(env, ["--secrets.files", str(secrets_file)], port=port) as url:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROME_ARGS, headless=True)
                try:
                    page = browser.new_page()
                    page.goto(url)
                    page.get_by_role("button", name="Sign in").wait_for(timeout=60_000)
                    assert page.get_by_role("textbox", name="Warehouse (local path or fsspec URL)").count() == 0
                    page.get_by_role("button", name="Sign in").click()
                    signed = page.get_by_text("Signed in as")
                    signed.wait_for(timeout=60_000)
                    assert signed.inner_text().replace("\u2060", "") == "Signed in as bob@example.com"
                    assert not [w for w in page.locator('[data-testid="stAlert"]').all_inner_texts()
                                if "no warehouse" in w], "bob's group maps to a root"
                    box = page.get_by_role("textbox", name="Warehouse (local path or fsspec URL)")
                    box.wait_for(timeout=60_000)
                    page.wait_for_function("v => document.querySelector('[data-testid=stSidebar] input').value === v",
                                           arg=str(SAMPLE.resolve()), timeout=60_000)
                    assert box.input_value() == str(SAMPLE.resolve())
                finally:
                    browser.close()
            assert {"/authorize", "/token", "/jwks"} <= set(asked), asked
    finally:
        provider.shutdown()
