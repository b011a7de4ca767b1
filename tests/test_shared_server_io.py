"""A shared deployment (issue 28), its storage and CLI half: roots as a list of URLs, storage
options under the operator's control, one refusal text and no traceback for hostile input, and
CLI output that is never markup.

The S3 cases run against moto's server on 127.0.0.1, with the options the operator binds to a
root; the SSRF cases run a listener on 127.0.0.1 that records every connection it is offered.
"""

from __future__ import annotations

import contextlib
import io
import json
import pwd
import re
import shutil
import socket
import socketserver
import threading
from pathlib import Path

import pytest
from moto_s3 import moto_s3

import indexcore
from indexcore.config import settings
from indexcore.errors import SettingsError, StorageError
from indexcore.io.options import app_storage_options, bound_options, browser_storage_options
from indexcore.io.roots import Roots, local_url

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_warehouse"
REFUSED = "not allowed: outside the allowed roots"
BUCKET = "lake-shared-io"  # moto keeps buckets process-wide: not test_object_store's "lake"
BODY = "LISTENER-SECRET-BODY"


# ---------------------------------------------------------------------------------------
# fixtures: a listener, moto, the app


class _Listener(socketserver.ThreadingTCPServer):
    """A TCP server on 127.0.0.1 that counts connections and answers HTTP 500 with :data:`BODY`."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self):
        self.connections: list[bytes] = []
        super().__init__(("127.0.0.1", 0), _Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(socketserver.BaseRequestHandler):
    def handle(self):
        self.request.settimeout(2)
        try:
            head = self.request.recv(65536)
        except OSError:
            head = b""
        self.server.connections.append(head)
        body = f"<Error><Code>InternalError</Code><Message>{BODY}</Message></Error>".encode()
        self.request.sendall(b"HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/xml\r\n"
                             b"Content-Length: " + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body)


@pytest.fixture
def listener():
    server = _Listener()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _closed_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


@pytest.fixture(scope="module")
def moto():
    """(endpoint, URL of the sample warehouse in a moto bucket); the operator's credentials are
    ``operator``/``operator-secret``, and none are in the environment."""
    pytest.importorskip("s3fs")
    import fsspec

    if not (SAMPLE / "demo.db").is_dir():
        pytest.skip("sample_warehouse/ is missing")
    with moto_s3(BUCKET, keys=False) as endpoint:
        fs = fsspec.filesystem("s3", skip_instance_cache=True, endpoint_url=endpoint, key="operator",
                               secret="operator-secret")
        for table in ("orders", "users"):
            fs.put(f"{SAMPLE}/demo.db/{table}/", f"{BUCKET}/wh/demo.db/{table}/", recursive=True)
        yield endpoint, f"s3://{BUCKET}/wh"


def _operator(endpoint: str) -> dict:
    """The options an operator binds to the bucket's root (one attempt per request: quick failures)."""
    return {"endpoint_url": endpoint, "key": "operator", "secret": "operator-secret",
            "config_kwargs": {"retries": {"max_attempts": 1}, "connect_timeout": 2, "read_timeout": 5}}


def _app(monkeypatch, warehouse: str, roots: str | None = None, typed: str | None = None,
         state: dict | None = None, **env: str):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("INDEXCORE_WAREHOUSE", warehouse)
    if roots is None:
        monkeypatch.delenv("INDEXCORE_ALLOWED_ROOTS", raising=False)
    else:
        monkeypatch.setenv("INDEXCORE_ALLOWED_ROOTS", roots)
    for name in ("INDEXCORE_ROOT_OPTIONS", "INDEXCORE_APP_STORAGE_OPTIONS"):
        monkeypatch.delenv(name, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(f"INDEXCORE_{key.upper()}", value)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    if typed is not None:
        at.session_state["storage_options"] = typed
    for key, value in (state or {}).items():
        at.session_state[key] = value
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _sidebar_errors(at) -> list[str]:
    """The sidebar's errors as read on the page: the markdown escapes of frames.text.md undone."""
    return [re.sub(r"\\(.)", r"\1", e.value) for e in at.sidebar.error]


# ---------------------------------------------------------------------------------------
# Item 3: roots as a list of URLs


def test_roots_are_urls_split_on_commas_newlines_or_json():
    assert settings({"INDEXCORE_ALLOWED_ROOTS": "s3://tmp, /data/wh\n~/wh\n"}).allowed_roots == \
        ("s3://tmp", "/data/wh", "~/wh")
    assert settings({"INDEXCORE_ALLOWED_ROOTS": '["s3://lake/a,b", "hdfs://nn:8020/wh"]'}).allowed_roots == \
        ("s3://lake/a,b", "hdfs://nn:8020/wh")


@pytest.mark.parametrize("value,why", [
    ("s3://", "names no bucket or host"), ("s3:///wh", "names no bucket or host"),
    ("/data/a:/data/b", "holds ':'"), ("~daemon/wh", "another user's home"),
    ("nosuchproto://x/y", "fsspec does not know"), ("file://relative", "file URL without an absolute path"),
    ("simplecache::s3://lake/wh", "chain"), ('["s3://lake/wh", 3]', "JSON list of strings"),
    ("[not json", "not a JSON list"), ("/data/w\x00h", "control character")])
def test_a_malformed_root_is_an_error_naming_it(value, why):
    with pytest.raises(SettingsError, match="INDEXCORE_ALLOWED_ROOTS") as caught:
        settings({"INDEXCORE_ALLOWED_ROOTS": value})
    assert why in str(caught.value)


def test_an_s3_root_is_not_a_local_tmp(tmp_path):
    """``s3://tmp`` once became the roots ``<cwd>/s3`` and ``/tmp``: now it is one S3 root."""
    roots = list(settings({"INDEXCORE_ALLOWED_ROOTS": "s3://tmp"}).allowed_roots)
    shutil.copytree(SAMPLE / "demo.db" / "orders", tmp_path / "demo.db" / "orders")
    with pytest.raises(StorageError, match=REFUSED):
        indexcore.open_warehouse(str(tmp_path), allowed_roots=roots)
    guard = Roots(roots)
    assert guard.check("s3://tmp/wh/x")[-1].path == "tmp/wh/x"
    for outside in ("s3://tmp2/wh", "s3://other/tmp", "/tmp", "file:///tmp", "gs://tmp/wh"):
        with pytest.raises(StorageError, match=REFUSED):
            guard.check(outside)


def test_roots_are_checked_on_host_too():
    """Where the path does not carry the host (HDFS, FTP), the host must be the root's."""
    guard = Roots(["webhdfs://namenode:9870/wh", "ftp://files.example:21/pub"])
    assert guard.check("webhdfs://namenode:9870/wh/db/t")[-1].host == "namenode:9870"
    guard.check("ftp://files.example:21/pub/x")
    for elsewhere in ("webhdfs://127.0.0.1:9870/wh/db/t", "webhdfs://namenode:9871/wh", "ftp://evil:21/pub/x",
                      "webhdfs://namenode:9870/other"):
        with pytest.raises(StorageError, match=REFUSED):
            guard.check(elsewhere)
    # a host that happens to begin the path is still the host
    guard = Roots(["ftp://pub/pub"])
    guard.check("ftp://pub/pub/x")
    for elsewhere in ("ftp://p/pub/x", "ftp://pu/pub/x", "ftp://127.0.0.1/pub/x"):
        with pytest.raises(StorageError, match=REFUSED):
            guard.check(elsewhere)


def test_s3_root_in_the_app_with_operator_bound_options(moto, monkeypatch):
    """``INDEXCORE_ALLOWED_ROOTS=s3://lake/wh`` works and its bound options (endpoint, key,
    secret: the only credentials there are) reach the backend; another prefix is refused."""
    endpoint, url = moto
    bound = json.dumps({url: _operator(endpoint)})
    at = _app(monkeypatch, url, roots=f"{url}, {SAMPLE}", root_options=bound)
    assert not _sidebar_errors(at), _sidebar_errors(at)
    assert at.sidebar.selectbox(key="table").options == ["demo.orders", "demo.users"]
    at = _app(monkeypatch, f"s3://{BUCKET}/wh2", roots=url, root_options=bound)
    assert any(REFUSED in e for e in _sidebar_errors(at)), _sidebar_errors(at)
    # without the bound options the bucket is out of reach (no credentials, no endpoint)
    assert bound_options(url, settings({"INDEXCORE_ROOT_OPTIONS": bound}).root_options)["key"] == "operator"
    assert bound_options(f"s3://{BUCKET}/wh2", settings({"INDEXCORE_ROOT_OPTIONS": bound}).root_options) == {}


def test_a_malformed_root_stops_the_app_with_a_message(monkeypatch):
    at = _app(monkeypatch, str(SAMPLE), roots="s3://")
    assert [e.value for e in at.error] == [
        "The explorer cannot start: INDEXCORE_ALLOWED_ROOTS: the root 's3://' names no bucket or host"]
    assert not at.sidebar.text_input, "nothing else is served"
    at = _app(monkeypatch, str(SAMPLE), root_options='{"s3://lake/wh": {"secret": "TOP-SECRET"')
    assert "INDEXCORE_ROOT_OPTIONS is not JSON" in at.error[0].value and "TOP-SECRET" not in at.error[0].value


def test_local_roots_keep_working(tmp_path, monkeypatch):
    shutil.copytree(SAMPLE / "demo.db" / "orders", tmp_path / "wh" / "demo.db" / "orders")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert local_url("~/wh") == str((tmp_path / "wh").resolve())
    wh = indexcore.open_warehouse("~/wh", allowed_roots=list(settings({"INDEXCORE_ALLOWED_ROOTS": "~/wh"}).allowed_roots))
    assert wh.tables() == ["demo.orders"]
    at = _app(monkeypatch, "~/wh", roots=f"~/wh,{tmp_path / 'other'}")
    assert at.sidebar.selectbox(key="table").options == ["demo.orders"]


# ---------------------------------------------------------------------------------------
# Item 2: storage options under the operator's control


def test_browser_options_only_the_operators_named_keys():
    assert browser_storage_options("", ()) == {}
    assert browser_storage_options("anon=true\nrequester_pays=false", ["anon", "requester_pays"]) == \
        {"anon": True, "requester_pays": False}
    with pytest.raises(StorageError, match="not taken from the browser") as caught:
        browser_storage_options("anon=true", ())
    assert "anon" in str(caught.value)
    # endpoints, profiles and credentials: never, even when the operator lists them
    for name in ("endpoint_url", "profile", "key", "secret", "client_kwargs", "ENDPOINT", "sts_endpoint",
                 "aws_session_token", "proxy_url"):
        with pytest.raises(StorageError, match=f"{name} refused") as caught:
            browser_storage_options(f"{name}=VALUE-9\nanon=true", [name, "anon"])
        assert "VALUE-9" not in str(caught.value)
    # the operator's bound options win over what is typed
    config = settings({"INDEXCORE_APP_STORAGE_OPTIONS": "anon",
                       "INDEXCORE_ROOT_OPTIONS": '{"s3://lake/wh": {"anon": false, "endpoint_url": "http://op"}}'})
    assert app_storage_options("s3://lake/wh/db", "anon=true", config) == {"anon": False, "endpoint_url": "http://op"}
    assert app_storage_options("s3://lake/other", "anon=true", config) == {"anon": True}


@pytest.mark.parametrize("allowed", ["", "endpoint_url,key,secret,anon"])
def test_a_typed_endpoint_never_receives_a_request(listener, monkeypatch, allowed):
    """The SSRF of issue 28: a browser's ``endpoint_url`` is refused before anything is opened,
    whatever the operator allows; the listener sees no connection."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAOPERATOR")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "operator-secret")
    typed = f"endpoint_url={listener.url}\nkey=x\nsecret=y"
    at = _app(monkeypatch, "s3://lake/wh", roots="s3://lake/wh", typed=typed, app_storage_options=allowed)
    errors = _sidebar_errors(at)
    assert errors and "endpoint_url" in errors[0] and "refused" in errors[0], errors
    assert listener.url not in errors[0]
    assert listener.connections == []
    box = at.sidebar.text_area(key="storage_options")
    assert box.disabled == (allowed == "")
    if not allowed:
        assert any("set by the operator" in c.value for c in at.sidebar.caption)


def test_backend_errors_are_summarised_and_alike(listener, moto, monkeypatch):
    """An operator-bound endpoint that answers with an error body and one that refuses the
    connection read the same in the app; the body never shows."""
    _, url = moto
    shown = []
    for endpoint in (listener.url, _closed_port()):
        at = _app(monkeypatch, url, roots=url, root_options=json.dumps({url: _operator(endpoint)}))
        shown.append(_sidebar_errors(at))
    assert listener.connections, "the bound endpoint was asked"
    assert shown[0] == shown[1] and len(shown[0]) == 1, shown
    assert BODY not in shown[0][0] and "127.0.0.1" not in shown[0][0]
    assert "the storage backend failed" in shown[0][0]


def test_the_cli_keeps_storage_options_and_shows_the_detail(moto):
    """The CLI is the operator's shell: ``--storage-option`` as before, the backend's text as detail."""
    from indexcore.cli import main

    endpoint, url = moto
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["tables", url, "--storage-option", f"endpoint_url={endpoint}",
                     "--storage-option", "key=operator", "--storage-option", "secret=operator-secret",
                     "--format", "json"])
    assert code == 0 and json.loads(out.getvalue())["tables"] == ["demo.orders", "demo.users"]
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(["tables", url, "--storage-option", f"endpoint_url={_closed_port()}",
                     "--storage-option", "key=a", "--storage-option", "secret=b",
                     "--storage-option", "config_kwargs_unused=1"])
    assert code == 2
    assert "the storage backend failed" in err.getvalue() and "detail:" in err.getvalue()


# ---------------------------------------------------------------------------------------
# Item 6: one refusal text, no tracebacks


def _other_user() -> str:
    mine = Path.home()
    for entry in pwd.getpwall():
        if entry.pw_dir and Path(entry.pw_dir) != mine and entry.pw_dir != "/":
            return entry.pw_name
    pytest.skip("no other user with a home directory")


def test_other_homes_read_alike_whether_or_not_the_user_exists(monkeypatch):
    texts, shown = set(), set()
    for name in (_other_user(), "nosuchuser-indexcore"):
        typed = f"~{name}/x"
        with pytest.raises(StorageError, match=REFUSED) as caught:
            indexcore.open_warehouse(typed, allowed_roots=[str(SAMPLE)])
        texts.add(str(caught.value).replace(typed, "<typed>"))
        at = _app(monkeypatch, typed)
        shown.add(_sidebar_errors(at)[0].replace(typed, "<typed>"))
    assert texts == {f"{REFUSED} (file <typed>)"}, texts
    assert shown == {f"Cannot open the warehouse: {REFUSED} (file <typed>)"}, shown


def test_nul_bytes_are_a_clear_error(monkeypatch, tmp_path):
    for url in (f"{SAMPLE}\x00/x", f"file://{SAMPLE}/\x00"):
        with pytest.raises(StorageError, match="NUL byte"):
            indexcore.open_warehouse(url, allowed_roots=[str(SAMPLE)])
    at = _app(monkeypatch, str(SAMPLE), state={"warehouse_url": f"{SAMPLE}/x\x00y"})
    assert "NUL byte" in _sidebar_errors(at)[0] and "\\x00" in _sidebar_errors(at)[0]
    wh = indexcore.open_warehouse(str(SAMPLE))
    with pytest.raises(StorageError, match="NUL byte"):
        wh.storage.read_bytes("demo.db/orders/snapshot/\x00")


def test_a_nul_byte_in_a_manifest_list_name_is_a_problem_not_a_traceback(tmp_path):
    from indexcore.cli import main

    shutil.copytree(SAMPLE / "demo.db" / "orders", tmp_path / "demo.db" / "orders")
    snapshots = tmp_path / "demo.db" / "orders" / "snapshot"
    latest = max(snapshots.glob("snapshot-*"), key=lambda p: int(p.name.split("-")[1]))
    snap = json.loads(latest.read_text())
    snap["baseManifestList"] += "\x00x"
    latest.write_text(json.dumps(snap))
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["rows", str(tmp_path), "demo.orders", "--format", "json"])
    assert code == 0, err.getvalue()
    problems = json.loads(out.getvalue())["problems"]
    assert [(p["structure"], p["reason"]) for p in problems] == [("manifest list", "not a valid path: it holds a NUL byte")]


@pytest.mark.parametrize("args", [["--limit", "99999999999999999999"], ["--limit", "-1"],
                                  ["--snapshot", "99999999999999999999"], ["--limit", "1e400"]])
def test_huge_numbers_are_a_usage_error(args, capsys):
    from indexcore.cli import main

    with pytest.raises(SystemExit) as caught:
        main(["rows", str(SAMPLE), "demo.orders", *args])
    assert caught.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {args[0]}" in err and "Traceback" not in err and "OverflowError" not in err


def test_a_deeply_nested_workload_query_is_refused_quickly():
    import time

    from indexcore.analysis.workload import parse_workload, scans

    for depth in (300, 6000):
        text = "SELECT * FROM " + "(SELECT * FROM " * depth + "demo.t WHERE a = 1" + ")" * depth
        start = time.process_time()
        found, skipped = scans(parse_workload(text), "demo.t", ["a"])
        assert time.process_time() - start < 5
        assert not found and len(skipped) == 1 and ("nests" in skipped[0]["reason"] or "longer" in skipped[0]["reason"])
    chain = "SELECT * FROM demo.t WHERE " + " AND ".join(f"a = {i}" for i in range(2000))
    found, skipped = scans(parse_workload(chain), "demo.t", ["a"])
    assert not skipped and found[0].where.count(" AND ") == 1999
    assert scans(parse_workload("SELECT * FROM demo.t WHERE " + "NOT " * 500 + "a = 1"), "demo.t", ["a"])[1]
    # the bounds are checked in the dialect that parses: a Spark string with a backslash escape still reads
    found, skipped = scans(parse_workload("SELECT * FROM demo.t WHERE s = 'it\\'s' AND a = 1"), "demo.t", ["a", "s"])
    assert not skipped and found[0].filters == {"s": frozenset({"equality"}), "a": frozenset({"equality"})}


def test_the_advisor_reports_a_nested_workload_query(capsys, tmp_path):
    from indexcore.cli import main

    workload = tmp_path / "w.sql"
    workload.write_text("SELECT * FROM demo.orders WHERE " + "(" * 300 + "status = 'PAID'" + ")" * 300 + ";\n"
                        "SELECT * FROM demo.orders WHERE status = 'PAID';\n")
    code = main(["advise", str(SAMPLE), "demo.orders", "--workload", str(workload), "--format", "json"])
    out = capsys.readouterr()
    assert code == 0 and "RecursionError" not in out.err + out.out
    assert "nests 300 levels deep" in out.out


def test_scratch_names_stay_in_the_scratch_directory():
    from indexcore.spark.jobs.what_if import scratch_name

    names = set()
    for column in ("device", "../../etc/passwd", "a/b", "a_b", "x" * 5000, "\x00\ud800", "..", "."):
        name = scratch_name("bucket-0/data-1.parquet", column, "bloom-filter")
        assert "/" not in name and "\x00" not in name and name not in (".", "..") and len(name) < 255
        assert name.startswith("data-1.parquet.") and name.endswith(".index")
        names.add(name)
    assert len(names) == 8  # names that clean up alike stay apart


# ---------------------------------------------------------------------------------------
# Item 5, the CLI: CSV cells are never formulas, table output never terminal controls

HOSTILE = ["=HYPERLINK(\"http://127.0.0.1:9/x\",\"y\")", "=cmd|' /C calc'!A0", "+1+1", "@SUM(A1)", "-2+3",
           "\tTAB", "\rCR", "-1", "plain", "\x1b]0;TITLE\x07\x1b[2J", "abc\u202edef", "\u2066iso\u2069", "x\x85y"]
HOSTILE_COLUMN = "n\x1b[31mame\u202e"


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """A table whose text values and one column name carry formulas, ANSI/OSC escapes and bidi overrides."""
    import pyarrow as pa

    from indexcore.write import TableWriter, make_schema

    wh = tmp_path_factory.mktemp("hostile")
    schema = make_schema([("k", "INT"), ("v", "STRING"), (HOSTILE_COLUMN, "STRING")], options={"bucket": "-1"})
    writer = TableWriter.create(str(wh), "db.t", schema)
    writer.write(pa.table({"k": pa.array(range(-1, len(HOSTILE) - 1), pa.int32()), "v": HOSTILE,
                           HOSTILE_COLUMN: HOSTILE[::-1]}))
    return str(wh)


def _cli(*args: str) -> tuple[int, str]:
    from indexcore.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(list(args))
    return code, out.getvalue()


def _neutral(text: str) -> str:
    import re

    number = re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", text)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") and not number else text


def test_csv_cells_that_start_a_formula_are_neutralised(hostile):
    import csv

    code, out = _cli("rows", hostile, "db.t", "--format", "csv")
    assert code == 0
    rows = list(csv.reader(io.StringIO(out)))
    assert rows[0][:3] == ["k", "v", HOSTILE_COLUMN]
    got = {r[0]: (r[1], r[2]) for r in rows[1:]}
    for i, value in enumerate(HOSTILE):
        assert got[str(i - 1)] == (_neutral(value), _neutral(HOSTILE[::-1][i])), value
    assert got["-1"][0] == "'=HYPERLINK(\"http://127.0.0.1:9/x\",\"y\")"  # the INT key -1 stays a number
    assert {r[1] for r in rows[1:]} >= {"'+1+1", "'@SUM(A1)", "-1", "'-2+3", "plain"}
    code, raw = _cli("rows", hostile, "db.t", "--format", "csv", "--csv-raw")
    rows = list(csv.reader(io.StringIO(raw)))
    assert sorted(r[1] for r in rows[1:]) == sorted(HOSTILE)


def test_table_output_shows_terminal_controls_escaped(hostile):
    code, out = _cli("rows", hostile, "db.t", "--format", "table", "--limit", "100")
    assert code == 0
    for raw in ("\x1b", "\x07", "\x85", "\u202e", "\u2066", "\u2069", "\r", "\t"):
        assert raw not in out, repr(raw)
    assert "\\x1b]0;TITLE\\x07\\x1b[2J" in out and "abc\\u202edef" in out and "\\u2066iso\\u2069" in out
    assert "n\\x1b[31mame\\u202e" in out  # the column name, in the header
    assert "x\\x85y" in out and "\\tTAB" in out
    code, js = _cli("rows", hostile, "db.t", "--format", "json")
    assert code == 0 and sorted(r["v"] for r in json.loads(js)["rows"]) == sorted(HOSTILE)


def test_nul_bytes_in_file_lists_and_file_arguments(tmp_path):
    """A NUL byte in a name read from metadata (a batch of heads) or given on the command line is
    that file's clear error, never ``ValueError: embedded null byte``."""
    from indexcore.cli import main
    from indexcore.io import Storage

    storage = Storage(str(SAMPLE))
    good = str(SAMPLE / "demo.db" / "orders" / "schema" / "schema-0")
    got = storage.read_prefixes([good, good.replace("schema-0", "sch\x00ema-0"), good], 4)
    assert got[0] == got[2] and isinstance(got[1], StorageError) and "NUL byte" in str(got[1])
    for args in (["advise", str(SAMPLE), "demo.orders", "--workload", f"{tmp_path}/w\x00.sql"],
                 ["probe", f"{tmp_path}/x\x00.bin", "--index-type", "bitmap", "--column-type", "INT",
                  "--where", "c = 1"]):
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            assert main(args) == 2, args
        assert "\\x00" in err.getvalue() and "Traceback" not in err.getvalue(), err.getvalue()


@pytest.mark.spark
def test_what_if_in_its_own_scratch_directory_reads_the_bucket_with_its_options(moto):
    """The temporary-directory branch of ``what_if`` hands the storage options on: with the
    operator's options (and none in the environment) every file of the bucket is built and measured."""
    from indexcore.spark import get_session
    from indexcore.spark.jobs.what_if import what_if

    endpoint, url = moto
    options = {k: v for k, v in _operator(endpoint).items() if k != "config_kwargs"}
    local = indexcore.open_warehouse(str(SAMPLE)).table("demo.orders")
    result = what_if(url, "demo.orders", "status", "bloom-filter", {"items": "100"}, ["status = 'PAID'"],
                     spark=get_session("local[1]"), storage_options=options)
    assert result["scratch_dir"] is None and not result["task_errors"], result["task_errors"]
    assert result["files"] == len(local.plan().files) > 0


def test_a_root_given_in_code_is_one_location_too():
    """``allowed_roots=["s3://"]`` would allow every bucket: refused as the setting is."""
    for root in ("s3://", "s3:///x", "simplecache::s3://lake/wh"):
        with pytest.raises(StorageError, match="not a valid allowed root"):
            indexcore.open_warehouse("s3://lake/wh", allowed_roots=[root])
    assert Roots(["memory:///wh", "memory://wh"]).check("memory://wh/x")
