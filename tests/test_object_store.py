"""The explorer on a real S3 API (moto's server on 127.0.0.1) gives what it gives on local files.

One server per test session: the sample warehouse and the conformance warehouses are uploaded
to a bucket, then every CLI command, the inspect views and every app page are run on the
``s3://`` URL and on the local copy and compared (paths and I/O counters aside). Request counts
per index lookup are checked on the golden blobs with a source that reads ahead as an object
store does.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
from pathlib import Path

import fsspec
import pytest
from moto_s3 import KEY, SECRET, moto_s3
from warehouse_tables import CONFORMANCE, SAMPLE

from indexcore import views
from indexcore.cli import main
from indexcore.io import FileSource, Storage
from indexcore.warehouse.catalog import Warehouse

ROOT = Path(__file__).resolve().parent.parent
BUCKET = "lake"
IO_KEYS = {"bytes_read", "requests", "index_requests"}
PARQUET_STEP = 3
sys.path.insert(0, str(Path(__file__).resolve().parent))


@pytest.fixture(scope="session")
def s3():
    """(storage options, {name: (local path, s3 URL)}) with the warehouses in a moto bucket."""
    pytest.importorskip("s3fs")
    with moto_s3(BUCKET) as endpoint:
        options = {"endpoint_url": endpoint, "key": KEY, "secret": SECRET}
        fs = fsspec.filesystem("s3", skip_instance_cache=True, **options)
        warehouses = {}
        sources = {"sample": SAMPLE, "parquet": CONFORMANCE / "warehouses" / "parquet",
                   "mixed": CONFORMANCE / "warehouses" / "mixed"}
        for name, local in sources.items():
            if not local.is_dir():
                continue
            if name == "parquet":  # every third table of the big conformance warehouse keeps it quick
                for table in Warehouse(str(local)).tables()[::PARQUET_STEP]:
                    db, tbl = table.split(".", 1)
                    fs.put(f"{local}/{db}.db/{tbl}/", f"{BUCKET}/{name}/{db}.db/{tbl}/", recursive=True)
            else:
                fs.put(str(local) + "/", f"{BUCKET}/{name}/", recursive=True)
            warehouses[name] = (str(local.resolve()), f"s3://{BUCKET}/{name}")
        if "sample" not in warehouses:
            pytest.skip("sample_warehouse/ is missing")
        yield options, warehouses


def _opts(options: dict) -> list[str]:
    return [a for k, v in options.items() for a in ("--storage-option", f"{k}={v}")]


def _run(*args: str) -> tuple[int, dict]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main([*args, "--format", "json"])
    return code, json.loads(out.getvalue()) if out.getvalue().strip() else {}


def _strip(value, local: str, url: str):
    """The value with both roots written ``<wh>`` and the I/O counters dropped."""
    if isinstance(value, dict):
        return {k: _strip(v, local, url) for k, v in value.items() if k not in IO_KEYS}
    if isinstance(value, list | tuple):
        return [_strip(v, local, url) for v in value]
    if isinstance(value, str):
        bare = url.split("://", 1)[1]
        return value.replace(url, "<wh>").replace(bare, "<wh>").replace(local, "<wh>")
    return value


def _same(cmd: list[str], local: str, url: str, options: dict) -> dict:
    code_l, out_l = _run(cmd[0], local, *cmd[1:])
    code_s, out_s = _run(cmd[0], url, *cmd[1:], *_opts(options))
    assert code_l == code_s == 0, (cmd, code_l, code_s)
    assert _strip(out_s, local, url) == _strip(out_l, local, url), cmd
    return out_s


def test_tables_on_s3_is_not_empty(s3):
    options, whs = s3
    local, url = whs["sample"]
    out = _same(["tables"], local, url, options)
    assert out["tables"] == Warehouse(local).tables() and out["tables"]


def test_every_warehouse_command_matches_local(s3):
    options, whs = s3
    checked = 0
    for local, url in whs.values():
        for name in Warehouse(url, storage_options=options).tables():
            for cmd in (["snapshots", name], ["files", name], ["rows", name, "--limit", "20"],
                        ["bucket-index", name]):
                _same([cmd[0], *cmd[1:]], local, url, options)
            table = Warehouse(local).table(name)
            field = table.schema().fields[0]
            if not field.type.is_nested:
                out = _same(["explain", name, "--where", f"{field.name} IS NOT NULL", "--verify"],
                            local, url, options)
                assert out["violations"] in ("none", []), name
            checked += 1
    assert checked >= 4


def test_file_commands_on_s3_urls(s3):
    """``probe``, ``dv`` and ``inspect`` take an s3:// FILE with the same answers."""
    options, whs = s3
    local, url = whs["sample"]
    table = Warehouse(local).table("demo.events")
    plan = table.plan()
    index_file = next(lf.index_path for lf in plan.files if lf.index_path)
    dv_file = next((lf.dv_file_path for lf in plan.files if lf.dv_file_path), None)
    s3_path = index_file.replace(local, url)
    for cmd in (["inspect"],):
        code_l, out_l = _run(*cmd, index_file)
        code_s, out_s = _run(*cmd, s3_path, *_opts(options))
        assert code_l == code_s == 0
        assert _strip(out_s, local, url) == _strip(out_l, local, url)
    if dv_file is not None:
        code_l, out_l = _run("dv", dv_file)
        code_s, out_s = _run("dv", dv_file.replace(local, url), *_opts(options))
        assert code_l == code_s == 0
        assert _strip(out_s, local, url) == _strip(out_l, local, url)


def test_inspect_views_match_local(s3):
    options, whs = s3
    for name_wh in ("sample", "mixed"):
        if name_wh not in whs:
            continue
        local, url = whs[name_wh]
        wl = Warehouse(local)
        ws = Warehouse(url, storage_options=options)
        assert ws.tables() == wl.tables()
        for name in wl.tables():
            tl, ts = wl.table(name), ws.table(name)
            for view in ("snapshots", "schemas", "manifests", "files", "file_indexes", "table_indexes",
                         "buckets", "partitions"):
                got = getattr(views.inspect(ts), view)().to_pylist()
                want = getattr(views.inspect(tl), view)().to_pylist()
                assert _strip(got, local, url) == _strip(want, local, url), (name, view)


def test_explain_prefetches_concurrently_and_reports_requests(s3):
    """On S3 the explain's walk reads from what was fetched in parallel; totals report requests."""
    from indexcore.scan import explain

    options, whs = s3
    local, url = whs["sample"]
    table = Warehouse(url, storage_options=options).table("demo.events")
    plan = table.plan()
    field = table.schema().fields[0].name
    before = table.storage.stats.snapshot()
    ex = explain(table, f"{field} IS NOT NULL")
    assert ex.requests == table.storage.stats.requests - before[1] > 0
    assert ex.bytes_read > 0
    indexed = [lf for lf in plan.files if lf.index_path]
    # one request per .index file and per DV file, made in the prefetch: the walk costs none
    dv_files = {lf.dv_file_path for lf in plan.files if lf.dv_file_path}
    assert ex.requests <= len(indexed) + len(dv_files)
    again = explain(table, f"{field} IS NOT NULL")
    assert again.requests == 0  # immutable files come from the warehouse's cache
    assert [f.to_json() | {"bytes_read": 0, "requests": 0} for f in again.files] == \
        [f.to_json() | {"bytes_read": 0, "requests": 0} for f in ex.files]


def test_latest_hint_is_never_cached(s3):
    options, whs = s3
    _, url = whs["sample"]
    storage = Storage(url, storage_options=options)
    path = f"{storage.root}/demo.db/events/snapshot/LATEST"
    first = storage.read_bytes(path)
    n = storage.stats.requests
    assert storage.read_bytes(path) == first
    assert storage.stats.requests == n + 1
    schema = f"{storage.root}/demo.db/events/schema/schema-0"
    storage.read_bytes(schema)
    n = storage.stats.requests
    storage.read_bytes(schema)
    assert storage.stats.requests == n


# ---------------------------------------------------------------------------------------
# Spark on the bucket


@pytest.mark.spark
def test_spark_evaluate_and_audit_read_the_bucket(s3):
    options, whs = s3
    local, url = whs["sample"]
    table = Warehouse(local).table("demo.events")
    field = table.schema().fields[0].name
    for cmd in (["spark-evaluate", "demo.events", "--where", f"{field} IS NOT NULL", "--master", "local[2]"],
                ["audit", "demo.events", "--master", "local[2]"]):
        code_l, out_l = _run(cmd[0], local, *cmd[1:])
        code_s, out_s = _run(cmd[0], url, *cmd[1:], *_opts(options))
        assert code_l == code_s == 0, cmd
        assert "task_errors" not in out_s or out_s["task_errors"] in ([], "none"), out_s.get("task_errors")
        assert _strip(out_s, local, url) == _strip(out_l, local, url), cmd[0]


# ---------------------------------------------------------------------------------------
# App pages


def _page_content(at) -> list:
    """What a page shows: titles, metrics, messages and dataframes, in order."""
    out: list = []
    for kind in ("title", "header", "subheader", "metric", "error", "warning", "info", "dataframe", "table"):
        for el in getattr(at, kind, []):
            if kind == "metric":
                if "requests" not in el.label.lower():  # an I/O counter: differs by storage, as IO_KEYS
                    out.append((kind, el.label, el.value))
            elif kind in ("dataframe", "table"):
                frame = el.value.drop(columns=[c for c in el.value.columns if c in IO_KEYS])
                out.append((kind, frame.astype(str).to_dict("split")))
            else:
                out.append((kind, str(el.value)))
    return out


@pytest.fixture
def app_env(s3, monkeypatch):
    from streamlit.runtime.pages_manager import PagesManager

    original = PagesManager.__init__

    def init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        PagesManager.uses_pages_directory = False

    monkeypatch.setattr(PagesManager, "__init__", init)
    monkeypatch.delenv("INDEXCORE_ALLOWED_ROOTS", raising=False)
    return s3


PAGES = ["warehouse", "table", "bitmap", "bloom", "range", "deletion_vectors", "hash_index", "what_if", "spark"]


def _render(url: str, table: str, page: str, options: dict, monkeypatch):
    """The page on ``url``; ``options`` bound to it by the operator (a browser sets none)."""
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("INDEXCORE_WAREHOUSE", url)
    monkeypatch.setenv("INDEXCORE_ROOT_OPTIONS", json.dumps({url: options} if options else {}))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.session_state["table"] = table
    at.run()
    at.switch_page(f"pages/{page}.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.mark.slow
def test_every_page_matches_local(app_env, monkeypatch):
    options, whs = app_env
    local, url = whs["sample"]
    for page in PAGES:
        for table in ("demo.events", "demo.orders"):
            shown_l = _page_content(_render(local, table, page, {}, monkeypatch))
            shown_s = _page_content(_render(url, table, page, options, monkeypatch))
            assert not [c for c in shown_s if c[0] == "error"], (page, shown_s)
            assert _strip(shown_s, local, url) == _strip(shown_l, local, url), (page, table)


# ---------------------------------------------------------------------------------------
# Requests per lookup on the golden blobs (a source that reads ahead, as on an object store)


def _golden_lookups(prefix: str):
    from golden_vectors import SINGLE, leaf_of

    from indexcore.types import parse_type

    if not SINGLE.is_dir():
        pytest.skip("golden vectors not found")
    for js in sorted(SINGLE.glob(f"{prefix}__*.json")):
        vec = json.loads(js.read_text())
        dtype = parse_type(vec["column"]["type"])
        for p in vec["predicates"]:
            if p["predicate"]["op"] in ("equal", "isNull", "notEqual"):
                yield vec, dtype, SINGLE / vec["bin_file"], leaf_of(dtype, p["predicate"])


@pytest.mark.parametrize("prefix,hint,limit", [
    ("bitmap_v1", 64 << 10, 2), ("bitmap_v2", 64 << 10, 3), ("bitmap_v2_blk256", 64 << 10, 3),
    ("bitmap_v1", 1 << 10, 3), ("bitmap_v2", 1 << 10, 3),
    ("range_bitmap", 64 << 10, 3), ("range_bitmap_chunk64", 64 << 10, 3),
    ("bsi", 64 << 10, 1), ("bloom_i5000_f005", 64 << 10, 1)])
def test_requests_per_lookup_on_golden_blobs(prefix, hint, limit):
    from indexcore.formats.registry import open_reader

    local = fsspec.filesystem("file")
    seen = 0
    for vec, dtype, path, leaf in _golden_lookups(prefix):
        source = FileSource(local, str(path), readahead=hint)
        open_reader(vec["index_type"], dtype, source, vec.get("options") or {}).visit(leaf)
        # a 1 KiB hint reads a head bigger than it in one more request (extend once)
        assert source.stats.requests <= limit, (path.name, leaf, source.stats.requests)
        seen += 1
    assert seen > 0


@pytest.mark.parametrize("version,limit", [(1, 3), (2, 3)])
def test_requests_per_lookup_on_100k_string_bitmaps(conformance, version, limit):
    """Paimon's 100k-row string bitmaps: head (+ one extension for V1's big dictionary), V2's block, the bitmap."""
    from indexcore.expr import Leaf
    from indexcore.formats.bitmap.reader import BitmapReader
    from indexcore.types import parse_type

    path = conformance / "file_index" / f"bitmap-index-v{version}"
    expected = json.loads((conformance / "file_index" / "expected.json").read_text())["equal"]
    for value, rows in expected.items():
        source = FileSource(fsspec.filesystem("file"), str(path), readahead=64 << 10)
        reader = BitmapReader(parse_type("STRING"), source, {})
        assert sorted(reader.visit(Leaf("equal", "c", (value,))).bitmap) == rows
        assert source.stats.requests <= limit, (version, value, source.stats.requests)


def test_container_head_and_blobs_in_one_request(golden):
    from indexcore.formats.container import read_container

    meta = json.loads((golden / "container" / "container_a.json").read_text())
    path = golden / "container" / meta["file"]
    source = FileSource(fsspec.filesystem("file"), str(path), readahead=64)
    container = read_container(source)
    head_requests = source.stats.requests
    assert head_requests <= 2  # a 64-byte hint: the prefix window, then the head once
    columns = container.head.columns()
    container.prefetch(columns)
    assert source.stats.requests == head_requests + 1
    for e in container.head.entries:
        if not e.empty:
            container.blob(e).read_all()
    assert source.stats.requests == head_requests + 1
    big = FileSource(fsspec.filesystem("file"), str(path), readahead=64 << 10)
    c = read_container(big)
    c.prefetch(c.head.columns())
    for e in c.head.entries:
        if not e.empty:
            c.blob(e).read_all()
    # the head in the 64 KiB window, then every blob past it in one more request
    assert big.stats.requests == (1 if big.size <= 64 << 10 else 2)


def test_dv_ranges_of_one_file_in_one_request(golden):
    from indexcore.formats.deletion_vector import DeletionVectorMeta, read_deletion_vectors

    for path in sorted((golden / "dv").glob("*.index")):
        meta = json.loads(path.with_suffix(".json").read_text())
        metas = [DeletionVectorMeta(e["data_file"], e["offset"], e["length"], e["cardinality"])
                 for e in meta["deletion_vectors"]]
        source = FileSource(fsspec.filesystem("file"), str(path), readahead=64 << 10)
        dvs = read_deletion_vectors(source, metas, bitmap64=meta["bitmap64"])
        assert source.stats.requests == 1
        assert sorted(dvs) == sorted(m.data_file for m in metas)
        for m in metas:
            one = FileSource(fsspec.filesystem("file"), str(path), readahead=64 << 10)
            read_deletion_vectors(one, [m], bitmap64=meta["bitmap64"])
            assert one.stats.requests == 1


def test_allowed_protocol_env_is_honoured(s3, monkeypatch):
    options, whs = s3
    _, url = whs["sample"]
    monkeypatch.setenv("INDEXCORE_ALLOWED_PROTOCOLS", "file")
    from indexcore.errors import StorageError

    with pytest.raises(StorageError, match="not allowed"):
        Warehouse(url, allowed_roots=[url], storage_options=options)
    monkeypatch.delenv("INDEXCORE_ALLOWED_PROTOCOLS")
    assert Warehouse(url, allowed_roots=[url], storage_options=options).tables()
    assert os.environ.get("INDEXCORE_ALLOWED_PROTOCOLS") is None


def test_memory_url_matches_local():
    """``memory://`` (fsspec's in-memory filesystem) answers as the local copy does."""
    mem = fsspec.filesystem("memory")
    for path in SAMPLE.rglob("*"):
        if path.is_file():
            mem.pipe(f"/ic-sample/{path.relative_to(SAMPLE).as_posix()}", path.read_bytes())
    try:
        local, url = str(SAMPLE.resolve()), "memory://ic-sample"
        assert Warehouse(url).tables() == Warehouse(local).tables()
        for cmd in (["files", "demo.orders"], ["explain", "demo.orders", "--where", "status = 'shipped'", "--verify"]):
            code_l, out_l = _run(cmd[0], local, *cmd[1:])
            code_m, out_m = _run(cmd[0], url, *cmd[1:])
            assert code_l == code_m == 0
            assert _strip(out_m, local, "memory:///ic-sample") == _strip(out_l, local, "memory:///ic-sample")
    finally:
        mem.rm("/ic-sample", recursive=True)


# ---------------------------------------------------------------------------------------
# probe, every view (show), time travel, advise / diff / check on the bucket


def _run_any(*args: str) -> tuple[int, dict, str]:
    """Exit code, JSON output (or {}), and the error line of one CLI run."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([*args, "--format", "json"])
    return code, json.loads(out.getvalue()) if out.getvalue().strip() else {}, err.getvalue()


def _same_any(cmd: list[str], local: str, url: str, options: dict, times: bool = False) -> tuple[int, dict]:
    """The command on the bucket answers as on the local copy: same exit code, output and error.

    ``times``: the rows carry ``create_time`` from the storage's own clock (a branch folder's),
    which the upload changes: present on both sides, then left out of the comparison.
    """
    code_l, out_l, err_l = _run_any(cmd[0], local, *cmd[1:])
    code_s, out_s, err_s = _run_any(cmd[0], url, *cmd[1:], *_opts(options))
    assert code_s == code_l, (cmd, code_l, code_s, err_s)
    if times:
        for out in (out_l, out_s):
            for row in out.get("rows", []):
                assert row.pop("create_time") is not None, (cmd, row)
    assert _strip(out_s, local, url) == _strip(out_l, local, url), cmd
    assert _strip(err_s, local, url) == _strip(err_l, local, url), cmd
    return code_s, out_s


@pytest.fixture(scope="session")
def s3_golden(s3):
    """(local golden folder, its s3:// URL) with the single blobs and containers probe reads uploaded."""
    options, _ = s3
    golden = CONFORMANCE / "golden"
    if not golden.is_dir():
        pytest.skip(f"golden vectors not found at {golden}")
    fs = fsspec.filesystem("s3", skip_instance_cache=True, **options)
    for sub in ("single", "container"):
        fs.put(f"{golden / sub}/", f"{BUCKET}/golden/{sub}/", recursive=True)
    return str(golden.resolve()), f"s3://{BUCKET}/golden"


PROBE_VECTORS = ["bitmap_v1__string__edge", "bitmap_v2__date__edge", "range_bitmap__bigint__highcard",
                 "bsi__dec20_4__unique", "bloom_i100_f001__string__lowcard"]


def test_probe_on_s3_matches_local(s3, s3_golden):
    """``probe`` on an s3:// golden blob and an s3:// container answers as on the local file (and as Paimon)."""
    from indexcore.expr import predicate_from_json, predicate_to_sql
    from indexcore.types import parse_type

    options, _ = s3
    local, url = s3_golden
    for vid in PROBE_VECTORS:
        meta = json.loads(Path(local, "single", f"{vid}.json").read_text(encoding="utf-8"))
        schema = {"c": parse_type(meta["column"]["type"])}
        args = ["--index-type", meta["index_type"], "--column-type", meta["column"]["type"]]
        for key, value in meta["options"].items():
            args += ["--option", f"{key}={value}"]
        cases = [c for c in meta["predicates"]
                 if "\x00" not in predicate_to_sql(predicate_from_json(c["predicate"], schema), schema)]
        for case in cases:
            args += ["--where", predicate_to_sql(predicate_from_json(case["predicate"], schema), schema)]
        code_l, out_l, _ = _run_any("probe", f"{local}/single/{meta['bin_file']}", *args)
        code_s, out_s, err = _run_any("probe", f"{url}/single/{meta['bin_file']}", *args, *_opts(options))
        assert code_l == code_s == 0, (vid, err)
        assert out_s["results"] == out_l["results"] and len(out_s["results"]) == len(cases) > 0, vid
        assert _strip(out_s, local, url) == _strip(out_l, local, url), vid
    meta = json.loads(Path(local, "container", "container_a.json").read_text(encoding="utf-8"))
    schema = {f["name"]: parse_type(f["type"]) for f in meta["row_type"]}
    args = ["--schema", ", ".join(f"{f['name']} {f['type']}" for f in meta["row_type"])]
    for case in meta["predicates"]:
        args += ["--where", predicate_to_sql(predicate_from_json(case["predicate"], schema), schema)]
    code_l, out_l, _ = _run_any("probe", f"{local}/container/{meta['file']}", *args)
    code_s, out_s, err = _run_any("probe", f"{url}/container/{meta['file']}", *args, *_opts(options))
    assert code_l == code_s == 0, err
    assert len(out_s["results"]) == len(meta["predicates"])
    assert _strip(out_s, local, url) == _strip(out_l, local, url)


def test_every_view_matches_local(s3):
    """``show 'db.t$VIEW'`` gives the same rows on s3:// as locally, for every view and table."""
    from indexcore.views import VIEWS

    options, whs = s3
    shown = 0
    for name_wh in ("sample", "mixed"):
        if name_wh not in whs:
            continue
        local, url = whs[name_wh]
        for table in Warehouse(local).tables():
            for view_name in VIEWS:
                code, out = _same_any(["show", f"{table}${view_name}"], local, url, options,
                                      times=view_name == "branches")
                shown += code == 0 and bool(out.get("rows"))
    assert shown >= 20


def test_time_travel_on_s3(s3):
    """``--tag``, ``--snapshot`` and ``$branch_NAME`` read the same snapshot on the bucket."""
    options, whs = s3
    local, url = whs["sample"]
    _, tags = _same_any(["show", "demo.releases$tags"], local, url, options)
    assert {r["tag_name"] for r in tags["rows"]} >= {"v1", "v2"}
    _, branches = _same_any(["show", "demo.releases$branches"], local, url, options, times=True)
    assert "dev" in {r["branch_name"] for r in branches["rows"]}
    seen = set()
    for ref, extra in (("demo.releases", ["--tag", "v1"]), ("demo.releases", ["--tag", "v2"]),
                       ("demo.releases", []), ("demo.releases$branch_dev", [])):
        code, out = _same_any(["show", f"{ref}$files", *extra], local, url, options)
        assert code == 0 and out["rows"], (ref, extra)
        seen.add(json.dumps(_strip(out["rows"], local, url), sort_keys=True))
        code, out = _same_any(["files", ref, *extra], local, url, options)
        assert code == 0, (ref, extra)
    assert len(seen) >= 3  # the tags, the latest and the branch are not all the same snapshot
    code, _ = _same_any(["show", "demo.releases$files", "--tag", "nosuch"], local, url, options)
    assert code == 2


def test_advise_diff_check_match_local(s3, tmp_path):
    options, whs = s3
    local, url = whs["sample"]
    table = Warehouse(local).table("demo.orders")
    workload = tmp_path / "w.sql"
    workload.write_text("-- name: shipped\nstatus = 'shipped';\n-- name: notnull\n"
                        f"{table.schema().fields[0].name} IS NOT NULL;\n")
    code, out = _same_any(["advise", "demo.orders", "--workload", str(workload), "--sample", "2"],
                          local, url, options)
    assert code == 0 and out
    code, out = _same_any(["diff", "demo.events", "--from", "1", "--to", "3"], local, url, options)
    assert code == 0 and out
    code, out = _same_any(["diff", "demo.orders", "--from", "1", "--workload", str(workload)], local, url, options)
    assert code == 0 and out
    code, _ = _same_any(["diff", "demo.events", "--from", "99"], local, url, options)
    assert code == 2
    rules = tmp_path / "rules.txt"
    rules.write_text("configured-indexes\ndv-density max=0.9\nbloom-fpp max=0.5\n")
    code, out = _same_any(["check", "demo.events", "--rules", str(rules)], local, url, options)
    assert code == 0 and out["passed"] is True
    code, out = _same_any(["check", "demo.faulty", "--rules", str(rules)], local, url, options)
    assert code == 1 and out["passed"] is False
