"""Vector (paimon-vindex) and full-text (paimon-ftindex) global indexes, opened and searched.

Tables are written by our writer with row tracking; the indexes are built by the libraries' own
writers and registered in the index manifest as Paimon's global-index build does, and also by
pypaimon 2.1 itself (Paimon's Python SDK, its own venv), whose searches must return what ours do.
Truth comes from construction (the vectors and texts we wrote), brute force (numpy), pypaimon,
and the Paimon-written files under ``external/``. Each library is also run hidden (its import fails in
a child process): the listing still works and a search is our clear error.
"""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import indexcore.analysis  # noqa: F401  (registers the views)
from indexcore.analysis.full_text import check_term, search_text
from indexcore.analysis.vector_search import recall_curve, search_vectors
from indexcore.errors import CorruptFileError, IndexCoreError
from indexcore.formats.ftindex import FullTextIndex
from indexcore.formats.vindex import VectorIndex
from indexcore.io import BytesSource, Storage
from indexcore.views import view
from indexcore.warehouse import Warehouse
from indexcore.warehouse.data import read_with_row_ids
from indexcore.warehouse.table import Table
from indexcore.write import TableWriter, make_schema

ROOT = Path(__file__).resolve().parent.parent
# run the CLI with one package hidden: importing it raises ImportError in that process
HIDDEN = "import sys; sys.modules[sys.argv[1]] = None; from indexcore.cli import main; sys.exit(main(sys.argv[2:]))"
ROW_TRACKING = {"row-tracking.enabled": "true", "data-evolution.enabled": "true", "bucket": "-1"}
DIM, ROWS = 8, 600
WORDS = ["apple", "banana", "cherry", "dolphin", "eagle", "falcon", "guitar", "harbor", "island", "jungle",
         "kettle", "lemon", "mango", "nectar", "orbit", "pepper"]


def _cli(*args: str, hide: str | None = None) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-c", HIDDEN, hide] if hide else [sys.executable, "-m", "indexcore"]
    return subprocess.run([*cmd, *args, "--format", "json"], cwd=ROOT, capture_output=True, text=True, timeout=300)


def _vectors() -> np.ndarray:
    rng = np.random.default_rng(7)
    centers = rng.normal(scale=4.0, size=(12, DIM))
    return (centers[rng.integers(0, 12, ROWS)] + rng.normal(size=(ROWS, DIM))).astype(np.float32)


def _ivf_flat(vectors: np.ndarray, nlist: int) -> bytes:
    vindex = pytest.importorskip("paimon_vindex", reason="paimon-vindex not installed (scripts/install.sh test)")
    training = vindex.VectorIndexTrainer.train({"index.type": "ivf_flat", "metric": "l2", "nlist": str(nlist)}, vectors)
    writer = vindex.VectorIndexWriter(training)
    writer.add_vectors(np.arange(len(vectors)), vectors)  # ids local to the file's row range
    out = io.BytesIO()
    writer.write(out)
    writer.close()
    return out.getvalue()


def _texts() -> list[str]:
    rng = np.random.default_rng(3)
    return [" ".join(WORDS[j] for j in rng.choice(len(WORDS), size=3, replace=False)).capitalize() + "."
            for _ in range(200)]


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory) -> Path:
    """db.vec: 600 rows in two files, ivf-flat over rows 0..399 (8 lists) and 400..499 (4 lists),
    500..599 not indexed. db.docs: 200 texts, a paimon-ftindex file over rows 0..149."""
    root = tmp_path_factory.mktemp("vector_fulltext")
    x = _vectors()
    schema = make_schema([("id", "INT"), ("embedding", "ARRAY<FLOAT>")], options=ROW_TRACKING)
    w = TableWriter.create(str(root), "db.vec", schema)
    for lo, hi in ((0, 350), (350, ROWS)):
        w.write(pa.table({"id": pa.array(range(lo, hi), pa.int32()),
                          "embedding": pa.array(x[lo:hi].tolist(), pa.list_(pa.float32()))}))
    w.add_global_index("ivf-flat", _ivf_flat(x[:400], 8), "embedding", (0, 399))
    w.add_global_index("ivf-flat", _ivf_flat(x[400:500], 4), "embedding", (400, 499))

    ftindex = pytest.importorskip("paimon_ftindex", reason="paimon-ftindex not installed (scripts/install.sh test)")
    texts = _texts()
    schema = make_schema([("id", "INT"), ("content", "STRING")], options=ROW_TRACKING)
    w = TableWriter.create(str(root), "db.docs", schema)
    w.write(pa.table({"id": pa.array(range(200), pa.int32()), "content": pa.array(texts)}))
    writer = ftindex.FullTextIndexWriter()
    for i, text in enumerate(texts[:150]):
        writer.add_document(i, text)
    out = io.BytesIO()
    writer.write(out)
    writer.close()
    w.add_global_index("full-text", out.getvalue(), "content", (0, 149))
    return root


def _table(root: Path, name: str) -> Table:
    return Warehouse(str(root)).table(name)


def _exact(x: np.ndarray, q: np.ndarray, k: int) -> list[int]:
    d = ((x.astype(np.float64) - q.astype(np.float64)) ** 2).sum(1)
    return [int(i) for i in np.argsort(d, kind="stable")[:k]]


def test_writer_tracks_row_ids(warehouse):
    table = _table(warehouse, "db.vec")
    assert sorted((lf.file.first_row_id, lf.file.row_count) for lf in table.plan().files) == [(0, 350), (350, 250)]
    snap = json.loads((warehouse / "db.db" / "vec" / "snapshot" / "snapshot-4").read_text())
    assert snap["nextRowId"] == ROWS and snap["indexManifest"] and snap["deltaRecordCount"] == 0
    rows = read_with_row_ids(table, columns=["id"])
    assert rows.column("id").to_pylist() == rows.column("_ROW_ID").to_pylist() == list(range(ROWS))


@pytest.mark.parametrize("metric", ["l2", "inner_product", "cosine"])
def test_full_width_equals_brute_force_for_each_metric(metric):
    """At every list probed an ivf-flat search is exact: it equals brute force for each metric."""
    vindex = pytest.importorskip("paimon_vindex")
    from indexcore.formats.vindex import exact_search

    x = np.random.default_rng(9).normal(size=(400, DIM)).astype(np.float32)
    writer = vindex.VectorIndexWriter(vindex.VectorIndexTrainer.train({"index.type": "ivf_flat", "metric": metric,
                                                                       "nlist": "4"}, x))
    writer.add_vectors(np.arange(400), x)
    out = io.BytesIO()
    writer.write(out)
    index = VectorIndex(BytesSource(out.getvalue(), f"{metric}.index"))
    assert index.info.metric == metric
    queries = np.random.default_rng(10).normal(size=(10, DIM)).astype(np.float32)
    found = [[i for i, _ in hits] for hits in index.search(queries, 5, width=4)]
    assert found == exact_search(x, queries, 5, metric).tolist()


def test_probed_list_sizes_are_the_clusters_we_made():
    """Eight far-apart clusters of 10, 20, ... 80 vectors: an 8-list IVF index puts each in its own list."""
    pytest.importorskip("paimon_vindex")
    rng = np.random.default_rng(2)
    sizes = [10 * (i + 1) for i in range(8)]
    centers = np.eye(8, DIM) * 1000.0
    x = np.concatenate([c + rng.normal(size=(n, DIM)) for c, n in zip(centers, sizes, strict=True)]).astype(np.float32)
    index = VectorIndex(BytesSource(_ivf_flat(x, 8), "clusters.index"))
    assert index.probe_lists(x, np.arange(len(x))) == (sorted(sizes, reverse=True), 0)


def test_list_probing_is_bounded_by_its_setting(warehouse, monkeypatch):
    monkeypatch.setenv("INDEXCORE_VECTOR_PROBE_VECTORS", "200")
    rows = sorted(view(_table(warehouse, "db.vec"), "vector_indexes").to_pylist(), key=lambda r: r["row_range_start"])
    assert rows[0]["list_sizes"] is None and "INDEXCORE_VECTOR_PROBE_VECTORS" in rows[0]["problem"]
    assert sum(rows[1]["list_sizes"]) == 100 and rows[1]["problem"] is None


PYPAIMON_ROW_IDS = r"""
import json, sys
from pypaimon import CatalogFactory
table = CatalogFactory.create({"warehouse": sys.argv[1]}).get_table(sys.argv[2])
builder = table.new_read_builder().with_projection(["id", "_ROW_ID"])
rows = builder.new_read().to_arrow(builder.new_scan().plan().splits())
print(json.dumps(sorted(zip(rows.column("_ROW_ID").to_pylist(), rows.column("id").to_pylist()))))
"""


@pytest.mark.parametrize("name", ["db.vec", "db.docs"])
def test_pypaimon_reads_the_row_ids_we_write(warehouse, name):
    """pypaimon 2.1 (a foreign reader) sees the same row ids as ours, with the global indexes committed."""
    venv = ROOT / ".venv-pypaimon" / "bin" / "python"
    if not venv.exists():
        pytest.skip("pypaimon venv missing (scripts/install.sh test creates .venv-pypaimon)")
    proc = subprocess.run([str(venv), "-c", PYPAIMON_ROW_IDS, str(warehouse), name], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    theirs = [tuple(p) for p in json.loads(proc.stdout.strip().splitlines()[-1])]
    ours = read_with_row_ids(_table(warehouse, name), columns=["id"])
    assert theirs == list(zip(ours.column("_ROW_ID").to_pylist(), ours.column("id").to_pylist(), strict=True))
    assert len(theirs) == (ROWS if name == "db.vec" else 200)


PYPAIMON_BUILD_AND_SEARCH = r"""
import json, sys
from pypaimon import CatalogFactory
from pypaimon.globalindex.create_global_index import create_global_index
catalog = CatalogFactory.create({"warehouse": sys.argv[1]})
queries, words = json.loads(sys.argv[2]), json.loads(sys.argv[3])
create_global_index(catalog.get_table("db.vec"), "embedding", "ivf-flat",
                    options={"ivf-flat.nlist": "8", "ivf-flat.metric": "l2", "ivf-flat.dimension": "8"})
create_global_index(catalog.get_table("db.docs"), "content", "full-text")
vec, docs, out = catalog.get_table("db.vec"), catalog.get_table("db.docs"), {"vector": [], "text": {}}
for q in queries:
    r = vec.new_vector_search_builder().with_limit(10).with_vector_column("embedding").with_query_vector(q).execute_local()
    out["vector"].append(sorted(r.results()))
for w in words:
    r = docs.new_full_text_search_builder().with_limit(1000).with_query(
        "content", json.dumps({"match": {"terms": w}})).execute_local()
    out["text"][w] = sorted(r.results())
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def pypaimon_indexed(tmp_path_factory) -> tuple[Path, dict, list]:
    """Our tables, indexed by pypaimon 2.1 (Paimon's Python SDK) with paimon-vindex and
    paimon-ftindex in its own venv, and what its own searches return."""
    venv = ROOT / ".venv-pypaimon" / "bin" / "python"
    probe = subprocess.run([str(venv), "-c", "import paimon_vindex, paimon_ftindex"], capture_output=True) \
        if venv.exists() else None
    if probe is None or probe.returncode != 0:
        pytest.skip("pypaimon venv without paimon-vindex/paimon-ftindex (scripts/install.sh test installs them)")
    root = tmp_path_factory.mktemp("pypaimon_indexed")
    x, texts = _vectors(), _texts()
    w = TableWriter.create(str(root), "db.vec", make_schema([("id", "INT"), ("embedding", "ARRAY<FLOAT>")],
                                                            options=ROW_TRACKING))
    w.write(pa.table({"id": pa.array(range(ROWS), pa.int32()), "embedding": pa.array(x.tolist(), pa.list_(pa.float32()))}))
    w = TableWriter.create(str(root), "db.docs", make_schema([("id", "INT"), ("content", "STRING")], options=ROW_TRACKING))
    w.write(pa.table({"id": pa.array(range(200), pa.int32()), "content": pa.array(texts)}))
    queries = np.random.default_rng(13).normal(scale=4.0, size=(4, DIM)).round(3).tolist()
    proc = subprocess.run([str(venv), "-c", PYPAIMON_BUILD_AND_SEARCH, str(root), json.dumps(queries),
                           json.dumps(["cherry", "orbit", "pepper"])], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return root, json.loads(proc.stdout.strip().splitlines()[-1]), queries


def test_indexes_pypaimon_builds_read_and_search_alike(pypaimon_indexed):
    root, theirs, queries = pypaimon_indexed
    vec, docs = _table(root, "db.vec"), _table(root, "db.docs")
    (row,) = view(vec, "vector_indexes").to_pylist()
    assert (row["index_type"], row["status"], row["vectors"], row["lists"], sum(row["list_sizes"]), row["coverage"]) == \
        ("ivf-flat", "opened", ROWS, 8, ROWS, 1.0)
    assert row["file"].startswith("vector-ivf-flat-global-index-")
    x = _vectors()
    for q, found in zip(queries, theirs["vector"], strict=True):
        assert sorted(search_vectors(vec, q, k=10).column("_ROW_ID").to_pylist()) == found  # same width choice
        assert search_vectors(vec, q, k=10, width=8).column("_ROW_ID").to_pylist() == \
            _exact(x, np.asarray(q, np.float32), 10)
    (ft,) = view(docs, "full_text_indexes").to_pylist()
    assert (ft["index_type"], ft["searchable"], ft["documents"]) == ("full-text", True, 200)
    for word, found in theirs["text"].items():
        assert sorted(search_text(docs, word, limit=None).column("_ROW_ID").to_pylist()) == found
        assert check_term(docs, word)["agrees"]


def test_vector_indexes_view(warehouse):
    rows = sorted(view(_table(warehouse, "db.vec"), "vector_indexes").to_pylist(), key=lambda r: r["row_range_start"])
    assert [(r["status"], r["kind"], r["dimension"], r["metric"]) for r in rows] == [("opened", "ivf_flat", DIM, "l2")] * 2
    assert [(r["vectors"], r["lists"], r["rows_in_range"], r["table_rows"]) for r in rows] == [(400, 8, 400, ROWS),
                                                                                               (100, 4, 100, ROWS)]
    for r in rows:  # every vector sits in exactly one probed list
        assert sum(r["list_sizes"]) == r["vectors"] and r["unplaced"] == 0 and r["lists_found"] <= r["lists"]
        assert r["list_min"] == min(r["list_sizes"]) and r["list_max"] == max(r["list_sizes"])
        assert r["list_imbalance"] == pytest.approx(r["list_max"] / (r["vectors"] / r["lists_found"]))
    assert [r["coverage"] for r in rows] == [400 / ROWS, 100 / ROWS]
    assert all(r["file"].startswith("vector-ivf-flat-global-index-") for r in rows)  # pypaimon's names


def test_search_at_full_width_equals_exact_search(warehouse):
    table, x = _table(warehouse, "db.vec"), _vectors()
    rng = np.random.default_rng(11)
    for q in rng.normal(scale=4.0, size=(5, DIM)).astype(np.float32):
        got = search_vectors(table, q.tolist(), k=10, width=8)  # widths clip to each file's lists
        assert got.column("_ROW_ID").to_pylist() == _exact(x[:500], q, 10)  # rows 500.. are not indexed
        assert got.column("id").to_pylist() == got.column("_ROW_ID").to_pylist()
        assert got.column("rank").to_pylist() == list(range(1, 11))


def test_recall_is_monotone_in_width_and_exact_at_full_width(warehouse):
    curve = recall_curve(_table(warehouse, "db.vec"), k=10, sample=40, target=0.9)
    by_file: dict[str, list[dict]] = {}
    for r in curve["rows"]:
        by_file.setdefault(r["file"], []).append(r)
    assert len(by_file) == 2
    for name, rows in by_file.items():
        widths, recalls = [r["width"] for r in rows], [r["recall"] for r in rows]
        assert widths == sorted(widths) and recalls == sorted(recalls), rows
        assert recalls[-1] == 1.0 and all(r["queries"] == 40 and r["k"] == 10 for r in rows)
        assert all(r["recall_low"] <= r["recall"] <= r["recall_high"] for r in rows)
        reach = curve["reaches"][name]
        assert reach == next(r["width"] for r in rows if r["recall"] >= 0.9)


def test_cli_vector_search(warehouse):
    x = _vectors()
    q = [float(v) for v in x[17] + 0.01]
    proc = _cli("search", str(warehouse), "db.vec", "--vector", json.dumps(q), "--k", "5", "--width", "8", "--recall",
                "--sample", "10")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert [r["_ROW_ID"] for r in out["rows"]] == _exact(x[:500], np.asarray(q, np.float32), 5)
    assert out["rows"][0]["id"] == 17 and out["recall"]["sample"] == 10
    bad = _cli("search", str(warehouse), "db.vec", "--vector", "[1, 2]")
    assert bad.returncode == 2 and "8 values" in bad.stderr and "Traceback" not in bad.stderr
    bad = _cli("search", str(warehouse), "db.vec", "--vector", "not json")
    assert bad.returncode == 2 and "JSON list" in bad.stderr


def test_vector_without_the_package(warehouse):
    proc = _cli("search", str(warehouse), "db.vec", "--vector", json.dumps([0.0] * DIM), hide="paimon_vindex")
    assert proc.returncode == 2 and "paimon-vindex" in proc.stderr and "Traceback" not in proc.stderr
    proc = _cli("show", str(warehouse), "db.vec$vector_indexes", hide="paimon_vindex")
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)["rows"]
    assert {r["status"] for r in rows} == {"listed"} and all("paimon-vindex" in r["problem"] for r in rows)


def test_full_text_view_search_and_scan_check(warehouse):
    table, texts = _table(warehouse, "db.docs"), _texts()
    (row,) = view(table, "full_text_indexes").to_pylist()
    assert row["searchable"] and row["layout"] == "paimon-ftindex v1" and row["documents"] == 150
    assert row["rows_in_range"] == 150 and row["coverage"] == 150 / 200 and row["text_fields"] == ["text"]
    for word in ("cherry", "harbor", "mango"):
        expected = {i for i, t in enumerate(texts[:150]) if word in re.findall(r"\w+", t.lower())}
        check = check_term(table, word)
        assert check["agrees"] and check["index_rows"] == check["scan_rows"] == len(expected) > 0
        found = search_text(table, word, limit=None)
        assert set(found.column("_ROW_ID").to_pylist()) == expected
        assert all(word in c.lower() for c in found.column("content").to_pylist())
    both = search_text(table, "cherry mango", limit=None)  # a match query: any of the words
    assert set(both.column("_ROW_ID").to_pylist()) == {i for i, t in enumerate(texts[:150])
                                                      if {"cherry", "mango"} & set(t.lower().rstrip(".").split())}
    phrase = search_text(table, '{"match": {"terms": "cherry mango", "operator": "and"}}', limit=None)
    assert set(phrase.column("_ROW_ID").to_pylist()) == {i for i, t in enumerate(texts[:150])
                                                        if {"cherry", "mango"} <= set(t.lower().rstrip(".").split())}
    with pytest.raises(IndexCoreError, match="not understood"):
        search_text(table, '{"nonsense": 1}')


def test_cli_text_search(warehouse):
    proc = _cli("search", str(warehouse), "db.docs", "--text", "lemon", "--k", "3", "--check")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert len(out["rows"]) == 3 and all("lemon" in r["content"].lower() for r in out["rows"])
    assert out["check"]["agrees"] and out["check"]["index_rows"] >= 3


def test_full_text_without_the_package(warehouse):
    proc = _cli("search", str(warehouse), "db.docs", "--text", "lemon", hide="paimon_ftindex")
    assert proc.returncode == 2 and "paimon-ftindex" in proc.stderr and "Traceback" not in proc.stderr
    proc = _cli("show", str(warehouse), "db.docs$full_text_indexes", hide="paimon_ftindex")
    assert proc.returncode == 0, proc.stderr
    (row,) = json.loads(proc.stdout)["rows"]
    assert row["documents"] == 150 and not row["searchable"] and "paimon-ftindex" in row["problem"]


def test_damaged_index_files_are_our_errors(warehouse):
    pytest.importorskip("paimon_vindex")
    data = _ivf_flat(_vectors()[:50], 2)
    with pytest.raises(CorruptFileError):
        VectorIndex(BytesSource(data[: len(data) // 2], "half.index")).search([0.0] * DIM, 3, width=2)
    ft = next((warehouse / "db.db" / "docs" / "index").glob("*.index")).read_bytes()
    with pytest.raises(CorruptFileError):
        FullTextIndex(BytesSource(ft[:200], "short.index"))


@pytest.mark.parametrize("kind,magic", [("ivf_pq", "QPVI"), ("ivf_sq", "QSVI"), ("ivf_rq", "QRVI"), ("diskann", "DANN")])
def test_other_vindex_kinds_open_and_search(kind, magic):
    vindex = pytest.importorskip("paimon_vindex")
    from indexcore.formats.detect import detect
    from indexcore.formats.vindex import exact_search

    x = np.random.default_rng(5).normal(size=(1000, 16)).astype(np.float32)
    options = {"index.type": kind, "metric": "l2"} | ({} if kind == "diskann" else {"nlist": "8"})
    writer = vindex.VectorIndexWriter(vindex.VectorIndexTrainer.train(options | ({"pq.m": "8"} if kind == "ivf_pq" else {}), x))
    writer.add_vectors(np.arange(1000), x)
    out = io.BytesIO()
    writer.write(out)
    source = BytesSource(out.getvalue(), f"{kind}.index")
    assert magic in detect(source).detected_by
    index = VectorIndex(source)
    assert (index.info.index_type, index.info.dimension, index.info.total_vectors) == (kind, 16, 1000)
    queries = x[:20] + 0.01
    exact = exact_search(x, queries, 10, "l2")
    widths = [10, 40, 160] if kind == "diskann" else [1, 2, 8]
    recalls = [np.mean([len({i for i, _ in got} & set(want.tolist())) / 10
                        for got, want in zip(index.search(queries, 10, w), exact, strict=True)]) for w in widths]
    assert recalls[0] < recalls[-1] and recalls[-1] >= 0.8, recalls  # quantized kinds are approximate
    sizes, unplaced = index.probe_lists(x, np.arange(1000))
    assert (sum(sizes), unplaced) == ((0, 0) if kind == "diskann" else (1000, 0))


def _external(external: Path, name: str) -> Table:
    path = external / "paimon-rust/datafusion/default.db" / name
    storage = Storage(str(path))
    return Table(storage, storage.root, name)


def test_paimon_written_vector_indexes(external):
    pytest.importorskip("paimon_vindex")
    table = _external(external, "test_java_vindex_vector")
    (row,) = view(table, "vector_indexes").to_pylist()
    assert (row["status"], row["kind"], row["dimension"], row["vectors"], row["lists"], row["list_sizes"]) == \
        ("opened", "ivf_flat", 4, 6, 1, [6])
    rows = read_with_row_ids(table, columns=["embedding"])
    x = np.asarray(rows.column("embedding").to_pylist(), np.float64)
    ids = rows.column("_ROW_ID").to_pylist()
    for q in (np.zeros(4), x[3] + 0.05, np.full(4, 2.0)):
        got = search_vectors(table, q.tolist(), k=3, width=1).to_pylist()
        exact = sorted(((x - q) ** 2).sum(1))[:3]  # ties are possible: compare distances, then each row's own
        assert [r["distance"] for r in got] == pytest.approx(exact, rel=1e-5, abs=1e-5)
        for r in got:
            assert r["distance"] == pytest.approx(((x[ids.index(r["_ROW_ID"])] - q) ** 2).sum(), rel=1e-5, abs=1e-5)
    assert {0, 1, 2} <= set(search_vectors(table, q.tolist(), k=6).column("_ROW_ID").to_pylist())
    (lumina,) = view(_external(external, "test_lumina_vector"), "vector_indexes").to_pylist()
    assert lumina["status"] == "listed" and lumina["dimension"] == 4 and "magic" in lumina["problem"]


def test_paimon_written_tantivy_archive_is_listed(external):
    (row,) = view(_external(external, "test_tantivy_fulltext"), "full_text_indexes").to_pylist()
    assert row["documents"] == 5 and not row["searchable"] and row["layout"].startswith("tantivy archive")


def test_global_indexes_page_searches(warehouse, open_page, monkeypatch):
    from test_app import _metric, _no_failure

    monkeypatch.setenv("INDEXCORE_WAREHOUSE", str(warehouse))
    monkeypatch.delenv("INDEXCORE_ALLOWED_ROOTS", raising=False)
    at = open_page("global_indexes", "db.vec")
    _no_failure(at)
    assert _metric(at, "Index files") == "2"
    x = _vectors()
    at.number_input(key="vector_width").set_value(8)
    at.text_input(key="vector_query").set_value(json.dumps([float(v) for v in x[42]])).run()
    _no_failure(at)
    hits = next(df.value for df in at.dataframe if "distance" in df.value.columns)
    assert hits["_ROW_ID"].tolist() == _exact(x[:500], x[42], 10) and hits["_ROW_ID"].iloc[0] == 42
    at.checkbox(key="vector_recall").check().run()
    _no_failure(at)
    assert any(m.label.startswith("Width for recall") for m in at.metric)

    at = open_page("global_indexes", "db.docs")
    at.text_input(key="text_query").set_value("kettle").run()
    _no_failure(at)
    expected = sum("kettle" in t.lower() for t in _texts()[:150])
    assert _metric(at, "Index matches") == _metric(at, "Scan matches") == str(expected)
    assert _metric(at, "Index agrees with scan") == "yes"


def test_global_indexes_page_on_paimon_written_indexes(external, open_page, monkeypatch):
    from test_app import _no_failure

    pytest.importorskip("paimon_vindex")
    monkeypatch.setenv("INDEXCORE_WAREHOUSE", str(external / "paimon-rust/datafusion"))
    monkeypatch.delenv("INDEXCORE_ALLOWED_ROOTS", raising=False)
    at = open_page("global_indexes", "default.test_java_vindex_vector")
    _no_failure(at)
    at.text_input(key="vector_query").set_value("[0, 0, 0, 0]").run()
    _no_failure(at)
    hits = next(df.value for df in at.dataframe if "distance" in df.value.columns)
    assert len(hits) == 6 and hits["_ROW_ID"].iloc[0] == 1  # [0.9, 0.1, 0, 0]: 0.82 from the origin, the others 1.0
    at.text_input(key="vector_query").set_value("[0, 0]").run()
    assert not at.exception and any("4 values" in e.value for e in at.error)  # our message, the page goes on

    at = open_page("global_indexes", "default.test_tantivy_fulltext")
    _no_failure(at)
    listed = next(df.value for df in at.dataframe if "documents" in df.value.columns)
    assert listed["documents"].tolist() == [5] and not listed["searchable"].any()
