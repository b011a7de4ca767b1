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

from indexcore.formats.base import REMAIN, SKIP, BitmapResult
from indexcore.formats.container import write_container
from indexcore.formats.registry import new_writer
from indexcore.scan import (
    FUNNEL_KEYS,
    Decision,
    FileDecision,
    Stage,
    bind_predicate,
    decide_files,
    explain,
    explanation,
    funnel,
)
from indexcore.scan.bucket import bucket_selector
from indexcore.scan.file_index import read_path_result
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
    "pk_table_scan_and_read_dv": ["f2 > 0", "f0 = 'Alex'", "f1 = 20", "f3 > 20", "f2 = 0",
                                  "f2 IN (0, 1) AND f1 = 10", "f2 = 1 OR f2 = 5"],
    "pk_table_with_dv_cardinality": ["f2 > 0", "f0 = 'Bob'"],
    "pk_table_with_alter_table": ["key_2 > 30", "c > 50"],
    "pk_table_scan_and_read_mor": ["f2 > 0", "f1 = 20", "f3 > 20", "f2 = 1", "f2 = 0 AND f0 = 'Bob'"],
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


def _counts(stage: dict) -> dict:
    return {"files": stage["files"], "rows": stage["rows"]}


def check_cost(ex) -> None:
    """Every stage's cost adds up, recomputed from the per-file records: kept + skipped = what
    the stage before kept (files, rows, data bytes); a stage's skipped files are those it pruned;
    index bytes are the file-index bytes at ``index`` and the DV bytes of the files read at ``read``."""
    funnel = ex.funnel
    stages = list(funnel)
    total = {"files": len(ex.files), "rows": sum(f.row_count for f in ex.files),
             "bytes": sum(f.file_size for f in ex.files)}
    assert {k: funnel["all"][k] for k in total} == total
    assert total["bytes"] > 0 or not ex.files
    for before, stage in zip(stages, stages[1:], strict=False):
        got, prev = funnel[stage], funnel[before]
        for what in ("files", "rows", "bytes"):
            assert got[what] + got[f"{what}_skipped"] == prev[what], (stage, what, funnel)
            assert got[f"{what}_skipped"] >= 0 or stage == "matching", (stage, what, funnel)
        if stage not in ("read", "matching"):
            pruned = [f for f in ex.files if f.skipped_by == stage]
            assert got["files_skipped"] == len(pruned), (stage, funnel)
            assert got["bytes_skipped"] == sum(f.file_size for f in pruned), (stage, funnel)
    read = [f for f in ex.files if f.read]
    assert funnel["read"]["bytes"] == sum(f.file_size for f in read)
    assert funnel["index"]["index_bytes"] == sum(f.bytes_read for f in ex.files)
    assert funnel["read"]["index_bytes"] == sum(f.dv_bytes for f in read)
    assert all(f.dv_bytes > 0 for f in read if f.dv_cardinality)


def _check_funnel(ex) -> None:
    funnel = ex.funnel
    assert _counts(funnel["all"]) == {"files": len(ex.files), "rows": sum(f.row_count for f in ex.files)}
    stages = ["all", "partition", "bucket", "level", "stats", "index", "read"] + (["matching"] if ex.verified else [])
    assert list(funnel) == stages
    for a, b in zip(stages, stages[1:], strict=False):
        assert funnel[b]["files"] <= funnel[a]["files"], (a, b, funnel)
        assert funnel[b]["rows"] <= funnel[a]["rows"], (a, b, funnel)
    read = [f for f in ex.files if f.read]
    assert _counts(funnel["read"]) == {"files": len(read), "rows": sum(f.rows_after_dv for f in read)}
    assert funnel["index"]["files"] == len(read)
    check_cost(ex)
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


@pytest.mark.parametrize("name", sorted(CASES))
def test_kept_indexes_decide_as_fresh_ones(warehouse, name, monkeypatch):
    """``kept`` (the predicate suggestion's trials: heads and readers kept on the table) decides
    every file as reading each container afresh does; asked again, it reads no container head
    and opens no reader."""
    from indexcore.formats import container
    from indexcore.scan import explain_files
    from indexcore.warehouse.table import Table

    opened = []
    for owner, name_ in ((container, "open_reader"), (Table, "_head_hit")):
        real = getattr(owner, name_)
        monkeypatch.setattr(owner, name_, lambda *a, real=real, **k: opened.append(a) or real(*a, **k))
    table = _table(warehouse, name)
    files = table.plan().files
    consulted = 0
    for sql in CASES[name]:
        want = explain_files(table, sql, files)
        got = explain_files(table, sql, files, kept=True)
        strip = ("bytes_read", "requests")
        assert [{k: v for k, v in f.to_json().items() if k not in strip} for f in got.files] == \
            [{k: v for k, v in f.to_json().items() if k not in strip} for f in want.files], sql
        assert got.problems == want.problems, sql
        consulted += sum(f.raw_index_result is not None for f in got.files)
        opened.clear()
        again = explain_files(table, sql, files, kept=True)
        assert opened == [], sql
        assert [f.to_json()["index_decision"] for f in again.files] == \
            [f.to_json()["index_decision"] for f in got.files], sql
    assert consulted or not any(lf.has_file_index for lf in files)


@pytest.mark.parametrize(("name", "sql"), [("pk_table_scan_and_read_dv", "f2 = 1 AND f3 > 0"),
                                         ("pk_table_scan_and_read_mor", "f2 > 0"),
                                         ("append_with_bsi_bitmap_bloomfilter", "f1 IN (20, 500) OR f2 = 2")])
def test_decisions_in_parts_assemble_to_explain(warehouse, name, sql):
    """What the Spark evaluate job does, without Spark: each bucket decided apart (pickled as a
    task returns it), assembled by explain's own ``explanation`` into explain's funnel."""
    import pickle

    table = _table(warehouse, name)
    plan = table.plan()
    schema = table.schema()
    predicate, text = bind_predicate(table, schema, sql)
    buckets: dict = {}
    for lf in plan.files:
        buckets.setdefault((repr(lf.partition), lf.bucket), []).append(lf)
    parts = [pickle.loads(pickle.dumps(decide_files(table, pickle.loads(pickle.dumps(predicate)), files, schema,
                                                    verify=True)))
             for files in reversed(list(buckets.values()))]
    got = explanation(table.name, plan.snapshot.id, predicate, text, parts, verified=True, planned=plan.files)
    want = explain(table, sql, verify=True)
    assert got.to_json() == want.to_json()
    assert got.funnel == want.funnel == funnel(want.files, verified=True)
    assert all(f.index_decision in (None, REMAIN, SKIP) or isinstance(f.index_decision, BitmapResult)
               for f in got.files)


def _decision(path: str, stats: Decision, rows: int, matching: int, index=None) -> FileDecision:
    return FileDecision(path=path, partition={}, bucket=0, level=0, row_count=rows,
                        partition_decision=Decision.REMAIN, bucket_decision=Decision.REMAIN,
                        level_decision=Decision.REMAIN, stats_decision=stats, raw_index_result=index,
                        index_decision=index, index_types={}, index_location=None, dv_cardinality=0,
                        rows_after_dv=rows if index is None else 0, bytes_read=0, matching_rows=matching)


def test_a_decision_from_a_record_equals_the_dataclass_one():
    """``FileDecision.from_record`` (explain's quick constructor) fills the same defaults as the
    dataclass, gives each decision its own stats, and refuses what the dataclass refuses."""
    import dataclasses

    made = _decision("a", Decision.SKIP, 10, 4)
    record = {f.name: getattr(made, f.name) for f in dataclasses.fields(made)}
    for drop in ((), ("matching_rows", "notes", "stats", "pruning_index_types")):
        partial = {k: v for k, v in record.items() if k not in drop}
        quick, slow = FileDecision.from_record(partial), FileDecision(**partial)
        assert quick == slow and dataclasses.asdict(quick) == dataclasses.asdict(slow)
        assert quick.skipped_by is Stage.STATS
    a, b = (FileDecision.from_record({k: v for k, v in record.items() if k != "stats"}) for _ in range(2))
    assert a.stats is not b.stats
    with pytest.raises(TypeError):
        FileDecision.from_record({**record, "colour": "red"})
    with pytest.raises(TypeError):
        FileDecision.from_record({k: v for k, v in record.items() if k != "row_count"})


def test_decisions_are_slotted_and_keep_their_stage_through_pickle_and_replace():
    """A decision holds no ``__dict__`` (explain keeps 50,000 of them); the stage that pruned it,
    worked out once, is worked out again after pickling (a Spark task's result) or ``replace``."""
    import dataclasses
    import pickle

    skipped = _decision("a", Decision.SKIP, 10, 4)
    kept = _decision("b", Decision.REMAIN, 10, 4)
    assert not hasattr(skipped, "__dict__") and not hasattr(skipped.stats, "__dict__")
    for f, stage in ((skipped, Stage.STATS), (kept, None)):
        assert f.skipped_by is stage and f.skipped_by is stage  # worked out, then kept
        back = pickle.loads(pickle.dumps(f))
        assert back == f and back.skipped_by is stage
    assert dataclasses.replace(skipped, stats_decision=Decision.REMAIN).skipped_by is None
    assert dataclasses.replace(kept, level_decision=Decision.SKIP).skipped_by is Stage.LEVEL


def test_funnel_counts_matching_rows_of_files_read_only():
    """A file pruned although it holds matching rows (a violation) is not in the matching stage."""
    files = [_decision("a", Decision.REMAIN, 10, 4), _decision("b", Decision.SKIP, 20, 3),
             _decision("c", Decision.REMAIN, 30, 2, index=SKIP)]
    assert [f.skipped_by for f in files] == [None, Stage.STATS, Stage.INDEX]
    assert files[1].pruned_before_index and not files[2].pruned_before_index
    got = funnel(files, verified=True)
    assert {k: _counts(v) for k, v in got.items()} == {
        "all": {"files": 3, "rows": 60}, "partition": {"files": 3, "rows": 60},
        "bucket": {"files": 3, "rows": 60}, "level": {"files": 3, "rows": 60},
        "stats": {"files": 2, "rows": 40}, "index": {"files": 1, "rows": 10},
        "read": {"files": 1, "rows": 10}, "matching": {"files": 1, "rows": 4}}
    # what each stage took away: b's 20 rows at stats, c's 30 at index, a's 6 non-matching rows
    assert [(v["files_skipped"], v["rows_skipped"]) for v in got.values()] == [
        (0, 0), (0, 0), (0, 0), (0, 0), (1, 20), (1, 30), (0, 0), (0, 6)]
    assert files[1].to_json(True)["stats_decision"] == "SKIP" and files[1].to_json()["skipped_by"] == "stats"
    assert json.dumps(files[2].to_json()["skipped_by"]) == '"index"'


def _funnel_by_definition(files, verified: bool) -> dict:
    """The funnel spelled out from :meth:`FileDecision.survives` and ``rows_at``, stage by stage."""
    stages = [s for s in Stage if s is not Stage.MATCHING or verified]
    if not any(f.global_index_decision is not None for f in files):
        stages.remove(Stage.GLOBAL_INDEX)
    out = {s.value: dict.fromkeys(FUNNEL_KEYS, 0) for s in stages}
    for f in files:
        before = Stage.ALL
        for s in stages:
            row = out[s.value]
            if f.survives(s):
                row["files"] += 1
                row["rows"] += f.rows_at(s)
                row["bytes"] += f.file_size
                row["rows_skipped"] += f.rows_at(before) - f.rows_at(s)
            elif f.survives(before):
                row["files_skipped"] += 1
                row["rows_skipped"] += f.rows_at(before)
                row["bytes_skipped"] += f.file_size
            before = s
    return out


@pytest.mark.parametrize("verified", [False, True])
@pytest.mark.parametrize("global_index", [False, True])
def test_funnel_agrees_with_its_definition_on_random_decisions(verified, global_index):
    """The funnel walks each file once, up to the stage that prunes it; what it counts is the
    definition's: per stage, files kept (survives) and what the stage took away (rows_at)."""
    import dataclasses
    import random

    rng = random.Random(11)
    decisions = list(Decision)
    files = []
    for i in range(400):
        rows = rng.randint(0, 50)
        index = rng.choice([None, REMAIN, SKIP, BitmapResult(BitMap(range(rng.randint(0, rows))))])
        f = _decision(f"f{i}", rng.choice(decisions), rows, rng.randint(0, rows), index)
        kept_rows = rng.randint(0, rows) if global_index and rng.random() < 0.7 else None
        files.append(dataclasses.replace(
            f, partition_decision=rng.choice(decisions), bucket_decision=rng.choice(decisions),
            level_decision=rng.choice(decisions), file_size=rng.randint(1, 10_000),
            global_index_rows=kept_rows,
            global_index_decision=None if kept_rows is None else Decision.of(kept_rows > 0),
            rows_after_dv=max(rows - rng.randint(0, 5), 0) if index is None else f.rows_after_dv))
    want = _funnel_by_definition(files, verified)
    assert funnel(files, verified) == {k: {**v, "index_bytes": 0, "index_requests": 0} for k, v in want.items()}
    assert sum(v["files_skipped"] for v in want.values()) > 0


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
    from indexcore.scan import explain_files

    (kept,) = explain_files(table, "f0 = 'Bob'", table.plan().files, kept=True).files
    assert kept.index_decision is REMAIN and kept.read and kept.problems[0].path == str(index_path)

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
    assert set(f) >= {"path", "partition", "bucket", "bucket_decision", "stats_decision", "index_decision",
                      "raw_index_result", "rows_after_dv", "bytes_read", "matching_rows"}
    assert f["bucket_decision"] == "REMAIN"  # pk_with_bitmap_dv's predicate pins no bucket key
    assert f["raw_index_result"] == {"rows": [0, 7]} and f["index_decision"] == {"rows": [7]}
    assert f["stats_decision"] == "REMAIN" and f["rows_after_dv"] == 1 and f["matching_rows"] == 1
    assert {k: result["funnel"]["read"][k] for k in ("files", "rows")} == {"files": 1, "rows": 1}
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
    assert list(frame["bucket_decision"]) == [f.bucket_decision for f in ex.files]
    assert list(frame["skipped_by"].fillna("")) == [f.skipped_by or "" for f in ex.files]
    js = json.loads(json.dumps(ex.to_json()))
    assert [f["path"] for f in js["files"]] == [f.path for f in ex.files]
    assert all(isinstance(f, FileDecision) for f in ex.files)


def test_wrong_stats_are_a_violation_naming_the_column(warehouse, monkeypatch):
    """Stats that claim f0 only holds 'Zed' prune a file with two 'Bob' rows: flagged on f0."""
    import indexcore.scan.stats as module

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


# ---------------------------------------------------------------------------------------------
# Bucket pruning (fixed buckets)

FIXED_BUCKET = ["pk_table_scan_and_read_dv", "pk_table_scan_and_read_mor", "pk_09", "append_09",
                "append_complex_data", "pk_dv_index_in_data_no_external"]


def _key_buckets(table, key: str) -> dict:
    """Key value -> the buckets whose live data files hold it, as Paimon wrote them."""
    import pyarrow.parquet as pq

    out: dict = {}
    for lf in table.plan().files:
        for value in pq.read_table(lf.path, columns=[key]).column(0).to_pylist():
            if value is not None:
                out.setdefault(value, set()).add(lf.bucket)
    return out


@pytest.mark.parametrize("name", FIXED_BUCKET)
def test_bucket_key_equality_keeps_the_bucket_holding_the_key(warehouse, name):
    table = _table(warehouse, name)
    schema = table.schema()
    assert schema.bucket > 1 and len(schema.bucket_keys) == 1
    key = schema.bucket_keys[0]
    held = _key_buckets(table, key)
    assert len({b for bs in held.values() for b in bs}) > 1, "the table should use several buckets"
    for value, buckets in held.items():
        ex = explain(table, f"{key} = {value}", verify=True)
        kept = {f.bucket for f in ex.files if f.bucket_decision == "REMAIN"}
        assert kept == buckets, (value, kept, buckets)
        assert ex.violations == [], ex.violations
        assert all(f.skipped_by == "bucket" for f in ex.files if f.bucket_decision == "SKIP")
        _check_funnel(ex)
        assert ex.funnel["bucket"]["files"] == sum(1 for f in ex.files if f.skipped_by not in ("partition", "bucket"))
    # IN over keys of two different buckets keeps both
    by_bucket: dict[int, object] = {}
    for value, buckets in sorted(held.items()):
        if len(buckets) == 1:
            by_bucket.setdefault(next(iter(buckets)), value)
    (b1, v1), (b2, v2) = sorted(by_bucket.items())[:2]
    ex = explain(table, f"{key} IN ({v1}, {v2})", verify=True)
    assert {f.bucket for f in ex.files if f.bucket_decision == "REMAIN"} == {b1, b2}
    assert ex.violations == []
    # a conjunct on another column keeps the selection; an OR with another column drops it
    other = next(f.name for f in schema.fields if f.name != key and f.name not in schema.partition_keys)
    ex = explain(table, f"{key} = {v1} AND {other} IS NOT NULL", verify=True)
    assert {f.bucket for f in ex.files if f.bucket_decision == "REMAIN"} == {b1} and ex.violations == []
    ex = explain(table, f"{key} = {v1} OR {other} IS NULL")
    assert all(f.bucket_decision == "REMAIN" for f in ex.files)


def _int_schema(bucket: int = 20, **options):
    from indexcore.write import make_schema

    return make_schema([("a", "INT"), ("b", "INT"), ("c", "INT"), ("d", "STRING")],
                       options={"bucket": str(bucket), "bucket-key": "a,b,c", **options})


def _buckets(schema, sql, total=20):
    from indexcore.expr import parse_where

    selector = bucket_selector(schema, parse_where(sql, schema.row_type()))
    return None if selector is None else selector.buckets(total)


def test_bucket_selector_follows_paimon():
    """Buckets from Paimon's own ``BucketSelectorTest`` (3 INT keys, 20 buckets), and its rules."""
    s = _int_schema()
    assert _buckets(s, "a = 0 AND b = 1 AND c = 2") == {11}
    assert _buckets(s, "a IN (5, 6, 7) AND b = 1 AND c = 2") == {7, 14, 10}
    assert _buckets(s, "(a = 5 OR a = 6 OR a = 7) AND b = 1 AND c = 2") == {7, 14, 10}
    assert _buckets(s, "a IN (5, 6, 7, NULL) AND b = 1 AND c = 2") == {7, 14, 10}
    assert _buckets(s, "a IN (5, 6, 7) AND b IN (1, 8) AND c = 2") == {7, 17, 14, 9, 10, 19}
    assert _buckets(s, "a IN (5, 6, 7) AND b = 1 AND c = 2 AND d = 'x'") == {7, 14, 10}
    assert _buckets(s, "a IN (5, 6) AND a IN (6, 7) AND b = 1 AND c = 2") == {14}  # intersection
    assert _buckets(s, "a = 0 AND b = 1") is None  # not every key pinned
    assert _buckets(s, "a <> 0 AND b = 1 AND c = 2") is None
    assert _buckets(s, "(a = 5 OR b = 6) AND b = 1 AND c = 2") is None
    assert _buckets(s, "a = 5 AND a = 6 AND b = 1 AND c = 2") is None  # contradiction: no pruning
    assert _buckets(s, "(a = 0 AND b = 1 AND c = 2) OR d = 'x'") is None
    many = ", ".join(str(i) for i in range(11))
    assert _buckets(s, f"a IN ({many}) AND b IN ({many}) AND c IN (1, 2, 3, 4, 5, 6, 7, 8)") is not None  # 968
    assert _buckets(s, f"a IN ({many}) AND b IN ({many}) AND c IN ({many})") is None  # > 1000 rows
    assert _buckets(_int_schema(bucket=-1), "a = 0 AND b = 1 AND c = 2") is None
    assert _buckets(_int_schema(**{"bucket-function.type": "mod"}), "a = 0 AND b = 1 AND c = 2") is None


SAMPLE = ROOT / "sample_warehouse"


def test_sample_orders_bucket_pruning():
    if not (SAMPLE / "demo.db" / "orders").is_dir():
        pytest.skip(f"sample warehouse not built at {SAMPLE}")
    table = Warehouse(str(SAMPLE)).table("demo.orders")
    assert table.schema().bucket == 4
    held = _key_buckets(table, "order_id")
    single = {}
    for value, buckets in sorted(held.items()):
        if len(buckets) == 1:
            single.setdefault(next(iter(buckets)), value)
    assert len(single) == 4
    for bucket, value in single.items():
        ex = explain(table, f"order_id = {value}", verify=True)
        assert {f.bucket for f in ex.files if f.bucket_decision == "REMAIN"} == {bucket}
        assert ex.violations == [] and ex.funnel["matching"]["rows"] >= 1
    (b1, v1), (b2, v2) = sorted(single.items())[:2]
    ex = explain(table, f"order_id IN ({v1}, {v2})", verify=True)
    assert {f.bucket for f in ex.files if f.bucket_decision == "REMAIN"} == {b1, b2}
    assert ex.violations == []


# ---------------------------------------------------------------------------------------
# The whole cost: bytes and rows per stage, index bytes, per-file statistics


def _warehouses(conformance: Path) -> list[Path]:
    return [ROOT / "sample_warehouse"] + sorted(p for p in (conformance / "warehouses").iterdir() if p.is_dir())


def test_cost_adds_up_on_every_table(conformance):
    """On the sample and every conformance table: read + skipped = what the stage before kept,
    for files, rows and data bytes, under a predicate that prunes (the What-if page's suggestion)."""
    from indexcore.errors import IndexCoreError
    from indexcore.frames.suggestion import suggest_predicate

    checked = pruned = 0
    for root in _warehouses(conformance):
        wh = Warehouse(str(root))
        for name in wh.tables():
            try:
                table = wh.table(name)
                sql = suggest_predicate(table)["sql"]
                ex = explain(table, sql)
            except IndexCoreError:
                continue  # a deliberately broken table: its own tests cover it
            check_cost(ex)
            checked += 1
            pruned += any(v["bytes_skipped"] for v in ex.funnel.values())
    assert checked >= 40 and pruned >= 10, (checked, pruned)


def test_cost_of_the_global_index_stage(external):
    root = external / "paimon-cpp/parquet/append_with_btree_with_partition.db"
    table = Warehouse(str(root.parent)).table("append_with_btree_with_partition.append_with_btree_with_partition")
    ex = explain(table, "col_int = 15", verify=True)
    check_cost(ex)
    stage = ex.funnel["global_index"]
    assert stage["index_bytes"] > 0 and stage["index_requests"] > 0
    assert stage["rows"] == 2 and stage["rows_skipped"] == ex.funnel["stats"]["rows"] - 2
    # the rows the global index dropped stay dropped at the file-index stage
    assert ex.funnel["index"]["rows"] <= stage["rows"]


def _parquet_stats(path: str, column: str) -> tuple:
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    values = pq.read_table(path, columns=[column]).column(column)
    bounds = pc.min_max(values)
    return bounds["min"].as_py(), bounds["max"].as_py(), values.null_count


@pytest.mark.parametrize(("root", "name", "sql"), [
    ("sample", "demo.events", "country = 'NZ' AND user_id > 40"),
    ("parquet", "append_with_bitmap.append_with_bitmap", "f0 = 'Bob' OR f1 > 10"),
    ("parquet", "append_with_bsi.append_with_bsi", "f1 > 100 AND f2 < 0"),
    ("parquet", "pk_table_scan_and_read_dv.pk_table_scan_and_read_dv", "f0 = 'Alex' AND f2 > 0"),
])
def test_stats_beside_the_decision_are_the_data_files_own(conformance, root, name, sql):
    """The min / max / null count shown per file equal what pyarrow computes from the file's rows."""
    base = ROOT / "sample_warehouse" if root == "sample" else conformance / "warehouses" / root
    table = Warehouse(str(base)).table(name)
    ex = explain(table, sql)
    columns = sorted(ex.predicate.fields())
    checked = 0
    for f in ex.files[:6]:
        assert sorted(f.stats) == columns
        for col in columns:
            low, high, nulls = _parquet_stats(f.path, col)
            assert f.stats[col] == {"min": low, "max": high, "null_count": nulls}, (f.path, col)
            checked += 1
    assert checked >= len(columns)
    frame = ex.to_frame()
    for col in columns:
        assert list(frame[f"{col} min"]) == [f.stats[col]["min"] for f in ex.files]
        assert list(frame[f"{col} nulls"]) == [f.stats[col]["null_count"] for f in ex.files]
    # the stats columns sit right after the stats decision
    after = list(frame.columns)[list(frame.columns).index("stats_decision") + 1:][:3 * len(columns)]
    assert after == [f"{c} {s}" for c in ex.files[0].stats for s in ("min", "max", "nulls")]


def test_cli_json_files_carry_stats_and_cost(conformance):
    wh = str(conformance / "warehouses" / "parquet")
    out = subprocess.run([sys.executable, "-m", "indexcore", "explain", wh, "append_with_bsi.append_with_bsi",
                          "--where", "f1 > 100", "--format", "json"], capture_output=True, text=True, cwd=ROOT,
                         check=False)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    (f,) = result["files"]
    low, high, nulls = _parquet_stats(f["path"], "f1")
    assert f["stats"] == {"f1": {"min": low, "max": high, "null_count": nulls}}
    assert f["file_size"] == Path(f["path"]).stat().st_size
    read = result["funnel"]["read"]
    assert read["bytes"] + sum(v["bytes_skipped"] for v in result["funnel"].values()) == f["file_size"]
    assert result["funnel"]["index"]["index_bytes"] == f["bytes_read"] > 0


def test_pruning_index_types_follow_file_index_folding():
    """An index kind can skip a file only where FileIndexPredicate's folding lets its answer through."""
    from indexcore.expr import parse_where
    from indexcore.scan.file_index import pruning_index_types
    from indexcore.types import parse_type

    row = {"c": parse_type("STRING"), "u": parse_type("INT"), "n": parse_type("INT")}
    indexes = {"c": ["bitmap"], "n": ["bloom-filter", "bsi"]}

    def kinds(sql: str) -> tuple[str, ...]:
        return pruning_index_types(parse_where(sql, row), indexes)

    assert kinds("c = 'NZ' OR u = 42") == ()  # an OR branch on an unindexed column
    assert kinds("c = 'NZ' AND u = 42") == ("bitmap",)
    assert kinds("c = 'NZ' OR n = 4") == ("bitmap", "bloom-filter", "bsi")
    assert kinds("n > 4") == ("bsi",)  # a bloom filter answers no range
    assert kinds("u > 4") == ()


@pytest.mark.parametrize("name", ["append_with_bitmap_no_embedding", "append_with_bsi_bitmap_bloomfilter"])
def test_each_index_file_is_one_request_and_a_large_one_reads_ranged(warehouse, name, monkeypatch):
    """A ``.index`` file is read whole in one request and evaluated from memory, counting the bytes
    its head parser and readers use as a ranged read does: the decisions and bytes of a run where
    every file is "too large" to read whole (ranged reads, several requests each) are the same."""
    from indexcore.scan import file_index

    table = _table(warehouse, name)
    sizes = {lf.path: Path(lf.index_path).stat().st_size for lf in table.plan().files
             if lf.index_path and lf.file.embedded_index is None}
    for sql in CASES[name]:
        whole = explain(table, sql, all_files=True)
        on_disk = [f for f in whole.files if f.index_location == "file"]
        assert on_disk, sql
        # one request for a small file; a larger one (a 3 MB file here) keeps its first window
        assert all(f.requests == 1 if sizes[f.path] <= file_index.WHOLE_INDEX_BYTES else f.requests >= 1
                   for f in on_disk), [(f.path, f.requests, sizes[f.path]) for f in on_disk]
        with monkeypatch.context() as m:
            m.setattr(file_index, "WHOLE_INDEX_BYTES", 16)  # every file larger: first window kept, rest ranged
            ranged = explain(table, sql, all_files=True)
        strip = ("requests",)
        assert [{k: v for k, v in f.to_json().items() if k not in strip} for f in whole.files] == \
            [{k: v for k, v in f.to_json().items() if k not in strip} for f in ranged.files], sql
        assert sum(f.requests for f in ranged.files) > len(on_disk), sql
        assert whole.problems == ranged.problems == [], sql


def test_read_path_result_agrees_with_its_definition_on_random_answers():
    """``FileIndexEvaluator`` by definition (every row minus the deletion vector is the selection,
    the answer is cut to it, REMAIN when it holds every row or the whole selection, SKIP when
    empty) on random answers, with and without a deletion vector and rows past the file."""
    import random

    rng = random.Random(30)
    for _ in range(2_000):
        rows = rng.randrange(0, 40)
        raw = BitMap(rng.sample(range(rows + 3), rng.randrange(0, rows + 3)) if rng.random() < 0.2
                     else rng.sample(range(max(rows, 1)), rng.randrange(0, max(rows, 1))))
        deleted = BitMap(rng.sample(range(max(rows, 1)), rng.randrange(0, max(rows, 1)))) if rng.random() < 0.5 else None
        selection = BitMap(range(rows)) - (deleted or BitMap())
        cut = raw & selection
        want = REMAIN if len(raw) == rows or cut == selection else SKIP if not cut else BitmapResult(cut)
        got = read_path_result(BitmapResult(BitMap(raw)), rows, deleted)
        assert got == want if not isinstance(want, BitmapResult) else got.bitmap == want.bitmap, (rows, raw, deleted)


@pytest.mark.parametrize("name", sorted(CASES))
def test_explain_keeps_its_records_as_columns_until_they_are_listed(warehouse, name, monkeypatch):
    """In process, explain keeps its records as columns (issue 30 item 1): no FileDecision is made
    until a caller lists the files. The funnel summed over the columns equals the object funnel
    of the decisions made from each record as explain made them before (``from_record`` on a
    copy of each record, taken as the columns take it); the decisions listed equal those, with
    the same stats, index kinds and JSON, through indexing, slicing and pickling too."""
    import pickle

    from indexcore.scan.decision_columns import DecisionColumns
    from indexcore.spark.jobs.plain import plain_dumps, plain_loads

    quick = FileDecision.from_record
    extend = DecisionColumns.extend
    made: list[int] = []
    want: list[FileDecision] = []
    monkeypatch.setattr(DecisionColumns, "extend",
                        lambda self, records: (want.extend(quick(dict(r)) for r in records), extend(self, records)))
    monkeypatch.setattr(FileDecision, "from_record", classmethod(lambda cls, r: (made.append(1), quick(r))[1]))
    table = _table(warehouse, name)
    for verify, sql in [(False, s) for s in CASES[name]] + [(True, CASES[name][0])]:
        want.clear()
        made.clear()
        ex = explain(table, sql, verify=verify)
        assert isinstance(ex.files, DecisionColumns) and len(ex.files) == len(want) > 0
        assert ex.funnel == funnel(want, verified=verify)
        assert not made  # the funnel and the problems came from the columns
        assert ex.files.problems() == [p for f in want for p in f.problems]
        assert ex.files[-1] == want[-1] and ex.files[:2] == want[:2]
        listed = list(ex.files)
        assert made and listed == want
        assert [f.to_json(verify) for f in listed] == [f.to_json(verify) for f in want]
        assert [(f.stats.types, f.stats.values, f.index_types, f.partition, f.skipped_by) for f in listed] == \
            [(f.stats.types, f.stats.values, f.index_types, f.partition, f.skipped_by) for f in want]
        back = pickle.loads(pickle.dumps(ex))
        assert back.files == want and back.to_json() == ex.to_json()
        listed_before = list(want)  # decide_files below adds its own records to ``want``
        plain = plain_loads(plain_dumps(decide_files(table, ex.predicate, table.plan().files, table.read_schema(None, None),
                                                     verify=verify)))  # a Spark Connect task's result
        assert plain.files == listed_before
        assert back.to_frame().equals(ex.to_frame())


def test_decision_columns_hold_a_fraction_of_the_objects_memory():
    """20,000 decided records of a bitmap-indexed column kept as columns take under half the
    memory of their FileDecision objects (what explain kept per file before), measured by
    tracemalloc after the records are gone; the values both keep as they are (paths, stats
    values, results) are made before the count."""
    import gc
    import tracemalloc

    from indexcore.scan.decision_columns import DecisionColumns
    from indexcore.scan.records import StatsCells
    from indexcore.types import parse_type

    n = 20_000
    types = {"f0": parse_type("STRING")}
    paths = [f"/w/t/bucket-0/data-{i}.parquet" for i in range(n)]
    partition, text = {}, ""
    mins = [f"a{i % 50}" for i in range(n)]

    def records():
        return [{"path": paths[i], "partition": partition, "partition_text": text, "bucket": 0, "level": 0,
                 "row_count": 1000 + i, "partition_decision": Decision.REMAIN, "bucket_decision": Decision.REMAIN,
                 "level_decision": Decision.REMAIN, "stats_decision": Decision.REMAIN, "raw_index_result": REMAIN,
                 "index_decision": REMAIN, "index_types": {"f0": ["bitmap"]}, "index_location": paths[i],
                 "dv_cardinality": 0, "rows_after_dv": 1000 + i, "bytes_read": 4000 + i, "requests": 1,
                 "problems": (), "notes": (), "global_index_decision": None, "global_index_rows": None,
                 "file_size": 100_000 + i, "dv_bytes": 0, "stats": StatsCells(types, {"f0": (mins[i], mins[i], 0)}),
                 "pruning_index_types": ("bitmap",)} for i in range(n)]

    def held(build) -> int:
        gc.collect()
        tracemalloc.start()
        batch = records()  # what the stages make per file during explain
        kept = build(batch)
        del batch
        gc.collect()
        size = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        assert len(kept) == n
        return size

    def columns(batch):
        out = DecisionColumns()
        for at in range(0, n, 1000):
            out.extend(batch[at:at + 1000])
        return out

    objects = held(lambda batch: [FileDecision.from_record(r) for r in batch])
    assert held(columns) < objects / 2
