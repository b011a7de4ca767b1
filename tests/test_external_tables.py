"""Every table under ``external/`` reads the rows its README or source test states.

Avro data files, BLOB columns in ``.blob`` files and descriptors, data-evolution tables whose
columns are spread over several files, the VECTOR type, deletion vectors, Mosaic (through paimon-mosaic;
without it, and for an ORC map with a null key, our own error: the process must not die).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from indexcore.errors import IndexCoreError
from indexcore.io import Storage
from indexcore.warehouse.data import read_table
from indexcore.warehouse.table import Table

ROOT = Path(__file__).resolve().parent.parent


def _table(external: Path, rel: str) -> Table:
    path = external / rel
    storage = Storage(str(path))
    return Table(storage, storage.root, path.name)


def _rows(external: Path, rel: str, snapshot: int | None = None) -> list[dict]:
    problems: list = []
    rows = read_table(_table(external, rel), snapshot, problems=problems).to_pylist()
    assert not [p for p in problems if "data file" in p.structure], problems
    return rows


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "indexcore", *args, "--format", "json"], cwd=ROOT,
                          capture_output=True, text=True, timeout=180)


CPP = "paimon-cpp"


def test_avro_tables(external):
    rows = _rows(external, f"{CPP}/avro/append_multiple.db/append_multiple", 1)
    assert len(rows) == 4
    assert len(_rows(external, f"{CPP}/avro/append_multiple.db/append_multiple")) == 7
    assert len(_rows(external, f"{CPP}/avro/append_simple.db/append_simple")) == 4
    (row,) = _rows(external, f"{CPP}/avro/append_with_multiple_map.db/append_with_multiple_map")
    assert row["f0"] == [(1, 10), (2, 20)] and row["f2"] == [("key1", "val1"), ("key2", "val2")]
    assert row["f3"] == [("123456", b"abcdef")]
    assert row["f7"][0][1]["f1"] == "row_str"
    ts = _rows(external, f"{CPP}/avro/append_with_multiple_ts_precision_and_timezone.db/"
                         "append_with_multiple_ts_precision_and_timezone")
    assert len(ts) == 3
    pk = _rows(external, f"{CPP}/avro/pk_with_multiple_type.db/pk_with_multiple_type")
    assert sorted(r["f7"] for r in pk) == ["Alice", "Bob", "Lucy", "Tony"]  # Emily deleted, Lucy added
    dv = _rows(external, f"{CPP}/avro/pk_table_scan_and_read_dv.db/pk_table_scan_and_read_dv")
    by_name = {r["f0"][:9]: r for r in dv}
    assert len(dv) == 8 and "Tony" not in by_name and by_name["Alice"]["f3"] == 19.1
    assert {"Bob", "Emily", "Alex", "David", "Lucy", "Paul", "Two roads"} <= set(by_name)


def test_avro_pk_table_via_cli(external):
    proc = _cli("rows", str(external / f"{CPP}/avro"), "pk_with_multiple_type.pk_with_multiple_type")
    assert proc.returncode == 0, proc.stderr
    assert sorted(r["f7"] for r in json.loads(proc.stdout)["rows"]) == ["Alice", "Bob", "Lucy", "Tony"]


@pytest.mark.parametrize("fmt", ["orc", "parquet"])
def test_blob_tables(external, fmt):
    rows = _rows(external, f"{CPP}/{fmt}/append_table_with_multi_blob.db/append_table_with_multi_blob")
    assert [(r["f1"], r["f2"], r["f4"]) for r in rows] == [(i, 10 * i, f"desc_{i}") for i in range(10)]
    assert [r["f5"] for r in rows] == [None, None] + [bytes([c]) * 1024 for c in b"CDEFGHIJ"]
    assert [r["f6"] for r in rows] == [None, b"b" * 2048, None] + [bytes([c]) * 2048 for c in b"defghij"]

    rows = _rows(external, f"{CPP}/{fmt}/blob_append_table_alter_table_with_cast_with_data_evolution.db/"
                           "blob_append_table_alter_table_with_cast_with_data_evolution")
    assert [r["f3"] for r in rows] == list(range(100, 200, 10))
    assert [r["blob"] for r in rows] == [b"Lily", b"Alice", b"Bob", b"Cindy", b"Dave", b"Apple", b"Banana",
                                         b"Cherry", b"Durian", b"Elderberry"]

    rows = _rows(external, f"{CPP}/{fmt}/blob_data_evolution_with_dense_stats.db/blob_data_evolution_with_dense_stats")
    assert [(r["f0"], r["f1"], r["f2"], r["f3"]) for r in rows] == [(b"Lily", 2, 102, 2.1), (b"Alice", 4, 104, 3.1)]

    rows = _rows(external, f"{CPP}/{fmt}/blob_desc_field.db/blob_desc_field")
    assert [r["f0"] for r in rows] == [1, 2, 3]
    assert [r["b2"] for r in rows] == [b"raw_2_0", b"raw_2_1", b"raw_2_2"]
    assert [r["b3"] for r in rows] == [b"raw_3_0", None, b"raw_3_2"]
    from indexcore.formats.blob_file import read_blob_descriptor

    desc = read_blob_descriptor(rows[0]["b0"])  # a descriptor field holds references, not payloads
    assert desc is not None and desc.uri.endswith("raw_blob/b0-row-0.bin") and desc.length == -1  # whole file
    assert rows[0]["b1"] is None and read_blob_descriptor(rows[1]["b1"]) is not None


@pytest.mark.parametrize("fmt", ["orc", "parquet"])
def test_pk_btree_tables(external, fmt):
    rel = f"{CPP}/{fmt}/pk_btree_e2e.db/pk_btree_e2e"
    counts = [len(_rows(external, rel, s)) for s in (1, 2, 3, 4, 5)]
    assert counts == [0, 2000, 2002, 2001, 2001]
    latest = {r["id"]: r for r in _rows(external, rel)}
    assert 10 not in latest and (latest[20]["score"], latest[20]["tag"]) == (77, "updated")
    assert sorted(i for i, r in latest.items() if r["score"] == 0 and i <= 1500) == list(range(30, 1501, 10))
    rel = f"{CPP}/{fmt}/pk_btree_partitioned_e2e.db/pk_btree_partitioned_e2e"
    assert [len(_rows(external, rel, s)) for s in (1, 2, 3, 4, 5)] == [0, 200, 202, 201, 201]
    latest = {(r["pt"], r["id"]): r for r in _rows(external, rel)}
    assert (1, 10) not in latest and (latest[(2, 10)]["score"], latest[(2, 10)]["tag"]) == (88, "updated")


def test_other_cpp_tables(external):
    rows = _rows(external, f"{CPP}/orc/pk_btree_source_meta.db/pk_btree_source_meta")
    assert sorted((r["id"], r["score"], r["tag"]) for r in rows) == [(1, 10, "first"), (2, 20, "second"),
                                                                      (3, 30, "third"), (4, 40, "fourth")]
    for fmt in ("orc", "parquet"):
        rows = _rows(external, f"{CPP}/{fmt}/append_with_btree_with_partition.db/append_with_btree_with_partition")
        assert len(rows) == 40
        for pt in (0, 1):
            assert sorted(r["col_int"] for r in rows if r["pt"] == pt) == [3 * i for i in range(20)]
        rows = _rows(external, f"{CPP}/{fmt}/pk_compact_lookup.db/pk_compact_lookup")
        assert sorted((r["f1"], r["f0"]) for r in rows) == [("Alice", 100), ("Bob", 200), ("Carol", 300),
                                                            ("Dave", 400), ("Eve", 500)]
        for name in ("append_with_rangebitmap", "append_with_rangebitmap_multi_chunk"):
            assert len(_rows(external, f"{CPP}/{fmt}/{name}.db/{name}")) == 8


def test_null_map_key_is_our_error_not_an_abort(external):
    problems: list = []
    table = _table(external, f"{CPP}/orc/nullable_map_key.db/nullable_map_key")
    read_table(table, problems=problems)
    (problem,) = [p for p in problems if p.structure == "data file"]
    assert "'attrs'" in problem.reason and "no nulls" in problem.reason and problem.path.endswith(".orc")
    proc = _cli("rows", str(external / f"{CPP}/orc"), "nullable_map_key.nullable_map_key")
    assert proc.returncode == 2 and "attrs" in proc.stderr and "Traceback" not in proc.stderr


def test_rust_tables(external):
    rows = _rows(external, "paimon-rust/pkvector/default.db/pk_vector_ivf_flat")
    assert sorted((r["id"], r["embedding"]) for r in rows) == [(i, [float(i), 0.0]) for i in range(5)]
    assert _table(external, "paimon-rust/pkvector/default.db/pk_vector_ivf_flat").schema() \
        .field("embedding").type.sql() == "VECTOR<FLOAT, 2>"
    assert sorted(r["id"] for r in _rows(external, "paimon-rust/datafusion/default.db/test_lumina_vector")) == \
        list(range(6))
    assert {0, 1, 2} <= {r["id"] for r in _rows(external, "paimon-rust/datafusion/default.db/test_java_vindex_vector")}
    fulltext = _table(external, "paimon-rust/datafusion/default.db/test_tantivy_fulltext")
    assert len(fulltext.snapshots()) == 2 and len(read_table(fulltext).to_pylist()) == 5


MOSAIC_TABLE = "paimon-rust/datafusion/default.db/test_mosaic_read"
# run a CLI command with an optional package hidden: its import raises ImportError
HIDDEN = "import sys; sys.modules[sys.argv[1]] = None; from indexcore.cli import main; sys.exit(main(sys.argv[2:]))"


def test_mosaic_table_reads_its_three_rows(external):
    """mosaic_tables.rs: (1, Alice, 10), (2, Bob, 20), (3, Carol, 30), through paimon-mosaic."""
    pytest.importorskip("mosaic", reason="paimon-mosaic not installed (scripts/install.sh test installs it)")
    table = _table(external, MOSAIC_TABLE)
    before = table.storage.stats.snapshot()
    rows = _rows(external, MOSAIC_TABLE)
    assert sorted((r["id"], r["name"], r["score"]) for r in rows) == [(1, "Alice", 10), (2, "Bob", 20),
                                                                        (3, "Carol", 30)]
    reread = read_table(table).to_pylist()
    assert len(reread) == 3 and table.storage.stats.snapshot()[0] > before[0]  # bytes came through our storage
    proc = _cli("rows", str(external / "paimon-rust/datafusion"), "default.test_mosaic_read")
    assert proc.returncode == 0, proc.stderr
    assert [r["name"] for r in json.loads(proc.stdout)["rows"]] == ["Alice", "Bob", "Carol"]


def test_mosaic_through_fsspec_and_verify(external, tmp_path):
    """The Mosaic file is read by ranged requests of our storage on any fsspec filesystem (here
    memory://), and explain --verify reads it: score > 15 holds for Bob and Carol."""
    pytest.importorskip("mosaic", reason="paimon-mosaic not installed (scripts/install.sh test installs it)")
    import fsspec

    src = external / MOSAIC_TABLE
    fs = fsspec.filesystem("memory")
    url = f"memory://{tmp_path.name}/default.db/test_mosaic_read"
    for f in src.rglob("*"):
        if f.is_file():
            fs.pipe(f"{url}/{f.relative_to(src).as_posix()}", f.read_bytes())
    storage = Storage(url)
    table = Table(storage, storage.root, "test_mosaic_read")
    assert [r["name"] for r in read_table(table).to_pylist()] == ["Alice", "Bob", "Carol"]
    data_file = next(f for f in src.rglob("*.mosaic"))
    assert storage.stats.bytes_read >= data_file.stat().st_size // 2 and storage.stats.requests > 1
    proc = _cli("explain", str(external / "paimon-rust/datafusion"), "default.test_mosaic_read", "--where",
                "score > 15", "--verify")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["matching_rows"] == 2 and not out["violations"] and not out["problems"]


def test_mosaic_files_of_the_library_writer_and_damage(external):
    """Row groups written by paimon-mosaic's own writer read back equal; a cut file is our error."""
    mosaic = pytest.importorskip("mosaic", reason="paimon-mosaic not installed (scripts/install.sh test installs it)")
    import io

    import pyarrow as pa

    from indexcore.errors import CorruptFileError
    from indexcore.formats.mosaic_file import read_mosaic
    from indexcore.io import BytesSource

    expected = pa.table({"k": pa.array(range(5000), pa.int64()), "s": pa.array([f"v{i % 97}" for i in range(5000)])})
    out = io.BytesIO()
    with mosaic.MosaicWriter(out, expected.schema, mosaic.WriterOptions(row_group_max_size=16 << 10)) as writer:
        for batch in expected.to_batches(max_chunksize=1000):
            writer.write(batch)
    writer_groups = writer.num_row_groups
    data = out.getvalue()
    assert writer_groups > 1 and read_mosaic(BytesSource(data, "w.mosaic")).equals(expected)
    assert read_mosaic(BytesSource(data, "w.mosaic"), ["s"]).column("s").equals(expected.column("s"))
    for cut in (len(data) // 2, 10):
        with pytest.raises(CorruptFileError, match="w.mosaic"):
            read_mosaic(BytesSource(data[:cut], "w.mosaic"))


@pytest.mark.spark
@pytest.mark.slow
def test_mosaic_in_spark_tasks(external):
    """A Spark task reads the Mosaic file too (spark-evaluate): 2 rows have score > 15."""
    pytest.importorskip("mosaic", reason="paimon-mosaic not installed (scripts/install.sh test installs it)")
    proc = subprocess.run([sys.executable, "-m", "indexcore", "spark-evaluate", str(external / "paimon-rust/datafusion"),
                           "default.test_mosaic_read", "--where", "score > 15", "--master", "local[1]",
                           "--format", "json"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    (f,) = json.loads(proc.stdout)["files"]
    assert f["matching_rows"] == 2 and not f["problems"]


def test_mosaic_without_the_package_is_a_clear_error(external):
    proc = subprocess.run([sys.executable, "-c", HIDDEN, "mosaic", "rows", str(external / "paimon-rust/datafusion"),
                           "default.test_mosaic_read", "--format", "json"], cwd=ROOT, capture_output=True,
                          text=True, timeout=180)
    assert proc.returncode == 2 and "paimon-mosaic" in proc.stderr and "Traceback" not in proc.stderr


def test_unknown_type_names_field_and_type(tmp_path):
    schema = tmp_path / "t" / "schema"
    schema.mkdir(parents=True)
    (schema / "schema-0").write_text(json.dumps({
        "version": 3, "id": 0, "fields": [{"id": 0, "name": "a", "type": "INT"},
                                          {"id": 1, "name": "shape", "type": "GEOMETRY"}],
        "partitionKeys": [], "primaryKeys": [], "options": {}}))
    storage = Storage(str(tmp_path / "t"))
    with pytest.raises(IndexCoreError, match="'shape'.*GEOMETRY"):
        Table(storage, storage.root, "t").schema()
