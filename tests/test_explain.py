"""``explain``: Paimon's per-file pruning on the conformance warehouses, checked against the data.

Ground truth is twofold: the rows each table's README says were written (positions of the
single data file of the small index tables), and the rows a batch read returns.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from pyroaring import BitMap

from indexcore.evaluate.explain import FileDecision, explain, read_path_result
from indexcore.formats import new_writer
from indexcore.formats.base import REMAIN, SKIP, BitmapResult
from indexcore.formats.container import write_container
from indexcore.warehouse import Warehouse
from indexcore.warehouse.data import read_table

ROOT = Path(__file__).resolve().parent.parent

CASES = {
    "append_with_bitmap": ["f0 = 'Bob'", "f1 = 20 AND f2 = 1", "f2 IS NULL", "f0 IN ('Alice', 'Tony') OR f1 = 10",
                           "f1 <> 10", "f0 = 'Nobody'", "f3 > 15", "f2 IS NOT NULL AND f0 <> 'Bob'"],
    "append_with_bitmap_v1": ["f0 = 'Bob'", "f1 = 20 AND f2 = 1", "f2 IS NULL", "f0 NOT IN ('Bob', 'Tony')"],
    "append_with_bitmap_no_embedding": ["f0 = 'Emily'", "f1 = 10 OR f2 = 0", "f0 IS NULL"],
    "append_with_bloomfilter": ["f0 = 'Bob'", "f1 = 300", "f3 = 14.1", "f0 = 'Carl'", "f1 IN (20, 1000)"],
    "append_with_bsi": ["f1 > 100", "f2 < 0", "f4 IS NULL", "f1 BETWEEN 50 AND 200", "f2 >= 1 AND f1 <= 300"],
    "append_with_bsi_bitmap_bloomfilter": ["f1 > 100", "f2 < 0", "f4 IS NULL", "f0 = 'Bob' AND f1 = 100",
                                           "f1 IN (20, 500) OR f2 = 2", "f1 IS NULL", "f3 = 14.1"],
    "append_with_bitmap_alter_table": ["f4 = 'Alice'", "f1 = 10", "f5 = 100", "f5 IS NULL", "f1 > 15 AND f4 <> 'Bob'"],
    "append_table_with_alter_table": ["e > 600", "a = 15", "key0 = 1 AND d IS NULL"],
    "data_evolution_with_index": ["f2 = 104", "f2 > 150", "f0 = 'Bob'"],
    "pk_with_bitmap_dv": ["f0 = 'Alice'", "f1 = 20", "key < 3", "f2 IS NULL", "f0 = 'Lucy'"],
    "pk_table_scan_and_read_dv": ["f2 > 0", "f0 = 'Alex'", "f1 = 20", "f3 > 20"],
    "pk_table_with_dv_cardinality": ["f2 > 0", "f0 = 'Bob'"],
    "pk_table_with_alter_table": ["key_2 > 30", "c > 50"],
    "pk_table_scan_and_read_mor": ["f2 > 0", "f1 = 20", "f3 > 20"],
}
# Tables whose visible rows are exactly the rows of the files read, minus deletion vectors.
NO_MERGE = {t for t in CASES if not t.startswith("pk_") or "_dv" in t or t in (
    "pk_with_bitmap_dv", "pk_table_with_alter_table")} - {"data_evolution_with_index"}


@pytest.fixture(scope="module")
def warehouse(conformance: Path) -> Warehouse:
    return Warehouse(str(conformance / "warehouses" / "parquet"))


def _table(wh: Warehouse, name: str):
    return wh.table(f"{name}.{name}")


def readme_rows(conformance: Path, name: str) -> list[list]:
    """The rows of snapshot 1 of an 8-row index table, in the order written (= file positions)."""
    text = (conformance / "warehouses" / "parquet" / f"{name}.db" / name / "README").read_text()
    rows = []
    for line in text.splitlines():
        if not line.startswith("Add: "):
            continue
        cells = []
        for cell in line[5:].split(","):
            cell = cell.strip()
            if cell == "null":
                cells.append(None)
            elif cell.lstrip("-").isdigit():
                cells.append(int(cell))
            else:
                try:
                    cells.append(float(cell))
                except ValueError:
                    cells.append(cell)
        rows.append(cells)
        if len(rows) == 8:
            break
    return rows


def _check_funnel(ex) -> None:
    funnel = ex.funnel
    assert funnel["all"] == {"files": len(ex.files), "rows": sum(f.row_count for f in ex.files)}
    stages = ["all", "partition", "level", "stats", "index", "read"] + (["matching"] if ex.verified else [])
    for a, b in zip(stages, stages[1:], strict=False):
        assert funnel[b]["files"] <= funnel[a]["files"], (a, b, funnel)
        assert funnel[b]["rows"] <= funnel[a]["rows"], (a, b, funnel)
    read = [f for f in ex.files if f.read]
    assert funnel["read"] == {"files": len(read), "rows": sum(f.rows_after_dv for f in read)}
    assert funnel["index"]["files"] == len(read)
    for f in ex.files:
        assert f.rows_after_dv <= f.row_count - f.dv_cardinality or isinstance(f.index_decision, BitmapResult)
        if isinstance(f.index_decision, BitmapResult):
            assert f.rows_after_dv == len(f.index_decision.bitmap) < f.row_count
        if f.index_decision is None:
            assert not f.read or not f.raw_index_result


@pytest.mark.parametrize("name", sorted(CASES))
def test_verify_never_drops_a_matching_row(warehouse, name):
    table = _table(warehouse, name)
    for sql in CASES[name]:
        for all_files in (False, True):
            ex = explain(table, sql, verify=True, all_files=all_files)
            assert ex.violations == [], (sql, ex.violations)
            assert ex.problems == [], (sql, ex.problems)
            _check_funnel(ex)
            assert all(f.matching_rows is not None for f in ex.files)
            if name in NO_MERGE:
                # what the read path keeps holds every visible matching row
                expected = read_table(table, predicate=ex.predicate).num_rows
                assert ex.funnel["matching"]["rows"] == expected, sql
            for f in ex.files:
                if f.read and isinstance(f.index_decision, BitmapResult):
                    assert f.matching_rows <= len(f.index_decision.bitmap)


@pytest.mark.parametrize("name", ["append_with_bitmap", "append_with_bitmap_v1", "append_with_bitmap_no_embedding",
                                  "append_with_bsi_bitmap_bloomfilter"])
def test_equal_on_bitmap_column_yields_the_matching_rows(warehouse, conformance, name):
    rows = readme_rows(conformance, name)
    table = _table(warehouse, name)
    for value in sorted({r[0] for r in rows if r[0] is not None}) + ["Nobody"]:
        ex = explain(table, f"f0 = '{value}'", verify=True)
        (f,) = ex.files
        expected = [i for i, r in enumerate(rows) if r[0] == value]
        assert f.matching_rows == len(expected)
        if not expected:
            assert f.skipped_by in ("stats", "index")
            continue
        assert f.stats_decision == "REMAIN"
        assert isinstance(f.raw_index_result, BitmapResult)
        assert list(f.raw_index_result.bitmap) == expected
        assert list(f.index_decision.bitmap) == expected
        assert f.rows_after_dv == len(expected)
        assert f.bytes_read > 0
        assert f.index_types["f0"][-1] == "bitmap" or "bitmap" in f.index_types["f0"]


def test_bsi_range_matches_readme(warehouse, conformance):
    rows = readme_rows(conformance, "append_with_bsi")
    table = _table(warehouse, "append_with_bsi")
    for sql, test in (("f1 > 100", lambda v: v is not None and v > 100),
                      ("f2 < 0", lambda v: v is not None and v < 0)):
        col = 1 if sql.startswith("f1") else 2
        (f,) = explain(table, sql).files
        assert list(f.index_decision.bitmap) == [i for i, r in enumerate(rows) if test(r[col])]
        assert f.index_location == "file" and f.index_types == {"f1": ["bsi"], "f2": ["bsi"], "f4": ["bsi"]}


def test_deletion_vector_is_removed_from_the_index_answer(warehouse, conformance):
    rows = readme_rows(conformance, "pk_with_bitmap_dv")
    deleted = {0, 4}  # README: keys 0 and 4 deleted; key == position in the compacted file
    table = _table(warehouse, "pk_with_bitmap_dv")
    for value in ("Alice", "Lucy", "Bob"):
        ex = explain(table, f"f0 = '{value}'", verify=True)
        (f,) = ex.files
        written = [i for i, r in enumerate(rows) if r[1] == value]
        visible = [i for i in written if i not in deleted]
        assert f.dv_cardinality == 2
        assert list(f.raw_index_result.bitmap) == written
        if visible:
            assert list(f.index_decision.bitmap) == visible
        else:
            assert f.index_decision is SKIP and not f.read
        assert f.matching_rows == len(visible)
        assert ex.violations == []


def test_partition_level_and_bucket(warehouse):
    table = _table(warehouse, "pk_table_scan_and_read_dv")
    ex = explain(table, "f1 = 20 AND f2 > 0", verify=True)
    for f in ex.files:
        assert (f.partition_decision == "REMAIN") == (f.partition == {"f1": 20})
        assert (f.level_decision == "SKIP") == (f.level == 0)
    assert ex.funnel["partition"]["files"] == sum(1 for f in ex.files if f.partition == {"f1": 20})
    only = explain(table, "f2 > 0", partition="f1=10", bucket=1)
    assert only.files and all(f.partition == {"f1": 10} and f.bucket == 1 for f in only.files)
    level0 = [f for f in only.files if f.level == 0]
    assert level0 and all(f.skipped_by == "level" for f in level0)


def test_read_path_result_follows_file_index_evaluator():
    assert read_path_result(REMAIN, 10) is REMAIN
    assert read_path_result(SKIP, 10) is SKIP
    assert read_path_result(BitmapResult(BitMap()), 10) is SKIP
    assert read_path_result(BitmapResult(BitMap(range(10))), 10) is REMAIN
    assert read_path_result(BitmapResult(BitMap([1, 2])), 10) == BitmapResult(BitMap([1, 2]))
    # a bitmap equal to "all rows minus the deletion vector" is no better than REMAIN
    assert read_path_result(BitmapResult(BitMap(range(1, 10))), 10, BitMap([0])) is REMAIN
    assert read_path_result(BitmapResult(BitMap([0, 3])), 10, BitMap([3])) == BitmapResult(BitMap([0]))
    assert read_path_result(BitmapResult(BitMap([3])), 10, BitMap([3])) is SKIP
    # a 64-bit deletion vector is never combined with the index bitmap (apache/paimon#9141)
    assert read_path_result(BitmapResult(BitMap([0, 3])), 10, BitMap([3]), bitmap64=True) is REMAIN
    assert read_path_result(BitmapResult(BitMap([1])), 2**31) is REMAIN


def _copy_table(conformance: Path, tmp_path: Path, name: str) -> Warehouse:
    src = conformance / "warehouses" / "parquet" / f"{name}.db"
    shutil.copytree(src, tmp_path / f"{name}.db")
    return Warehouse(str(tmp_path))


def _stale_bsi(table) -> None:
    """Swap in an index whose f1 was built from different values (row 0: 100 -> 101)."""
    lf = table.plan().files[0]
    writer = new_writer("bsi", table.schema().field("f1").type, {})
    for v in (101, 200, 300, 50, 500, 100, None, 20):
        writer.write(v)
    Path(lf.index_path).write_bytes(write_container([("f1", [("bsi", writer.serialized_bytes())])]))


def _stale_bitmap(table) -> None:
    """Swap in an index whose f0 was built with row 1 'Bob' written as 'Bobby'."""
    lf = table.plan().files[0]
    writer = new_writer("bitmap", table.schema().field("f0").type, {})
    for v in ("Alice", "Bobby", "Emily", "Tony", "Lucy", "Bob", "Tony", "Alice"):
        writer.write(v)
    Path(lf.index_path).write_bytes(write_container([("f0", [("bitmap", writer.serialized_bytes())])]))


@pytest.mark.parametrize("name, stale, sql, column", [
    ("append_with_bsi", _stale_bsi, "f1 = 100", "f1"),
    ("append_with_bitmap_no_embedding", _stale_bitmap, "f0 = 'Bob' AND f1 = 10", "f0"),
])
def test_stale_index_is_a_violation(conformance, tmp_path, name, stale, sql, column):
    wh = _copy_table(conformance, tmp_path, name)
    table = _table(wh, name)
    assert explain(table, sql, verify=True).violations == []
    stale(table)
    table = _table(Warehouse(str(tmp_path)), name)
    ex = explain(table, sql, verify=True)
    (f,) = ex.files
    assert f.matching_rows == 2
    assert len(ex.violations) == 1
    (v,) = ex.violations
    assert v["path"] == f.path and v["column"] == column
    assert "drops 1 of 2 matching rows" in v["reason"]


@pytest.mark.parametrize("damage", ["missing", "truncated"])
def test_unreadable_index_is_a_problem_not_an_error(conformance, tmp_path, damage):
    name = "append_with_bitmap_no_embedding"
    wh = _copy_table(conformance, tmp_path, name)
    table = _table(wh, name)
    index_path = Path(table.plan().files[0].index_path)
    if damage == "missing":
        index_path.unlink()
    else:
        index_path.write_bytes(index_path.read_bytes()[:20])
    ex = explain(table, "f0 = 'Bob'", verify=True)
    (f,) = ex.files
    assert f.index_decision is REMAIN and f.read
    assert f.problems and f.problems[0].path == str(index_path)
    assert ex.problems == list(f.problems)
    assert f.matching_rows == 2 and ex.violations == []

    out = subprocess.run([sys.executable, "-m", "indexcore", "explain", str(tmp_path), f"{name}.{name}",
                          "--where", "f0 = 'Bob'", "--format", "json"], capture_output=True, text=True,
                         cwd=ROOT, check=False)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["problems"] and result["problems"][0]["path"] == str(index_path)
    assert result["files"][0]["index_decision"] == "REMAIN"


def test_cli_json_shape(conformance):
    wh = str(conformance / "warehouses" / "parquet")
    out = subprocess.run([sys.executable, "-m", "indexcore", "explain", wh, "pk_with_bitmap_dv.pk_with_bitmap_dv",
                          "--where", "f0 = 'Alice'", "--verify", "--format", "json"],
                         capture_output=True, text=True, cwd=ROOT, check=False)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert set(result) >= {"files", "funnel", "violations", "problems"}
    (f,) = result["files"]
    assert set(f) >= {"path", "partition", "bucket", "stats_decision", "index_decision", "raw_index_result",
                      "rows_after_dv", "bytes_read", "matching_rows"}
    assert f["raw_index_result"] == {"rows": [0, 7]} and f["index_decision"] == {"rows": [7]}
    assert f["stats_decision"] == "REMAIN" and f["rows_after_dv"] == 1 and f["matching_rows"] == 1
    assert result["funnel"]["read"] == {"files": 1, "rows": 1}
    assert result["violations"] == [] and result["problems"] == []

    table = subprocess.run([sys.executable, "-m", "indexcore", "explain", wh, "append_with_bitmap.append_with_bitmap",
                            "--where", "f1 = 20"], capture_output=True, text=True, cwd=ROOT, check=False)
    assert table.returncode == 0 and "funnel" in table.stdout
    bad = subprocess.run([sys.executable, "-m", "indexcore", "explain", wh, "append_with_bitmap.append_with_bitmap",
                          "--where", "nope = 1"], capture_output=True, text=True, cwd=ROOT, check=False)
    assert bad.returncode == 2 and "nope" in bad.stderr


def test_to_frame_and_json(warehouse):
    ex = explain(_table(warehouse, "pk_table_scan_and_read_dv"), "f2 > 0", verify=True)
    frame = ex.to_frame()
    assert len(frame) == len(ex.files)
    assert list(frame["skipped_by"].fillna("")) == [f.skipped_by or "" for f in ex.files]
    js = json.loads(json.dumps(ex.to_json()))
    assert [f["path"] for f in js["files"]] == [f.path for f in ex.files]
    assert all(isinstance(f, FileDecision) for f in ex.files)


def test_wrong_stats_are_a_violation_naming_the_column(warehouse, monkeypatch):
    """Stats that claim f0 only holds 'Zed' prune a file with two 'Bob' rows: flagged on f0."""
    import indexcore.evaluate.explain as module

    real = module.stats_map

    def lying(*args, **kwargs):
        out = real(*args, **kwargs)
        if "f0" in out:
            out["f0"] = ("Zed", "Zed", 0)
        return out

    monkeypatch.setattr(module, "stats_map", lying)
    ex = explain(_table(warehouse, "append_with_bitmap"), "f0 = 'Bob' AND f1 = 10", verify=True)
    (f,) = ex.files
    assert f.stats_decision == "SKIP" and f.matching_rows == 2
    assert ex.violations == [{"path": f.path, "column": "f0",
                              "reason": "stats pruned a file with 2 matching rows"}]
