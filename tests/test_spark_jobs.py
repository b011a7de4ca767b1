"""Spark jobs against the single-process engine: evaluate == explain --verify, audit, what-if.

One local[2] session for the module; each test runs one or two small Spark jobs.
"""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

import pytest

from indexcore import open_warehouse
from indexcore.analysis.audit import ERROR, OK, audit_file, audit_table
from indexcore.errors import IndexCoreError
from indexcore.scan import explain
from indexcore.warehouse.data_file import read_data_file
from indexcore.write.datafile import build_file_index, build_file_index_container

pytest.importorskip("pyspark")
if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
    pytest.skip("Spark needs Java", allow_module_level=True)

from indexcore.spark.jobs.audit import audit  # noqa: E402
from indexcore.spark.jobs.evaluate import NO_USABLE_INDEX, evaluate  # noqa: E402
from indexcore.spark.jobs.run import JobCancelledError, run_tasks  # noqa: E402
from indexcore.spark.jobs.task_files import task_file  # noqa: E402
from indexcore.spark.jobs.what_if import what_if  # noqa: E402

SAMPLE = Path(__file__).resolve().parent.parent / "sample_warehouse"

CASES = [
    ("append_with_bitmap", "f0 = 'Alice' OR f1 = 20"),
    ("append_with_bitmap_v1", "f1 IN (10, 30) AND f2 IS NOT NULL"),
    ("append_with_bloomfilter", None),
    ("append_with_bsi", None),
    ("append_with_bsi_bitmap_bloomfilter", None),
    ("pk_with_bitmap_dv", "f0 = 'Alice' OR f0 = 'Bob'"),
    ("pk_table_scan_and_read_dv", None),
    ("pk_table_scan_and_read_dv", "f2 = 1 AND f3 > 0"),  # bucket pruning (fixed buckets, bucket-key f2)
]


@pytest.fixture(scope="module")
def spark():
    from indexcore.spark.session import get_session

    return get_session("local[2]")


@pytest.fixture(scope="module")
def parquet(conformance: Path) -> str:
    return str(conformance / "warehouses" / "parquet")


def _where(table) -> str:
    """A condition on the first indexed (else first non-key) column, with a value the data holds."""
    schema = table.schema()
    indexed = [c for k, v in schema.options.items() if k.startswith("file-index.") and k.endswith(".columns")
               for c in v.split(",")]
    column = indexed[0].strip() if indexed else schema.field_names[-1]
    rows = read_data_file(table.storage, table.plan().files[0], schema, schema, columns=[column])
    value = next(v for v in rows.column(column).to_pylist() if v is not None)
    literal = f"'{value}'" if isinstance(value, str) else repr(value)
    return f"{column} = {literal} OR {column} IS NULL"


def _strip(result: dict) -> dict:
    violations = [{k: v for k, v in viol.items() if k != "values"} for viol in result["violations"]]
    return {"files": result["files"], "funnel": result["funnel"], "violations": violations,
            "problems": result["problems"]}


@pytest.mark.parametrize(("name", "where"), CASES)
def test_evaluate_equals_explain_verify(spark, parquet: str, name: str, where: str | None) -> None:
    table = open_warehouse(parquet).table(f"{name}.{name}")
    where = where or _where(table)
    done = []
    result = evaluate(parquet, f"{name}.{name}", where, spark=spark, progress=lambda d, t, m: done.append((d, t)))
    want = explain(table, where, verify=True).to_json()
    assert _strip(result) == {k: want[k] for k in ("files", "funnel", "violations", "problems")}
    assert result["matching_rows"] == want["funnel"]["matching"]["rows"]
    assert result["task_errors"] == []
    assert done and done[-1][0] == done[-1][1] > 0
    fp = result["false_positives"]
    for f in result["files"]:
        assert f["matching_rows"] <= f["rows_after_dv"] or f["skipped_by"] is not None
    assert sum(v["false_positive_rows"] for v in fp.values()) == sum(
        f["rows_after_dv"] - f["matching_rows"] for f in result["files"] if f["skipped_by"] is None)


@pytest.fixture
def stale(parquet: str, tmp_path: Path) -> tuple[str, str]:
    """A copy of pk_with_bitmap_dv whose live file's .index was built from other f0 values."""
    src = Path(parquet) / "pk_with_bitmap_dv.db"
    shutil.copytree(src, tmp_path / "pk_with_bitmap_dv.db")
    root = str(tmp_path)
    table = open_warehouse(root).table("pk_with_bitmap_dv.pk_with_bitmap_dv")
    schema = table.schema()
    lf = table.plan().files[0]
    rows = read_data_file(table.storage, lf, schema, schema)
    f0 = ["Zed" if v == "Bob" else v for v in rows.column("f0").to_pylist()]
    rows = rows.set_column(rows.schema.get_field_index("f0"), "f0", __import__("pyarrow").array(f0))
    with open(lf.index_path, "wb") as fh:
        fh.write(build_file_index_container(rows, schema))
    return root, "pk_with_bitmap_dv.pk_with_bitmap_dv"


def test_stale_index_is_a_violation(spark, stale: tuple[str, str]) -> None:
    root, name = stale
    result = evaluate(root, name, "f0 = 'Bob'", spark=spark)
    want = explain(open_warehouse(root).table(name), "f0 = 'Bob'", verify=True).to_json()
    assert _strip(result) == {k: want[k] for k in ("files", "funnel", "violations", "problems")}
    assert want["violations"] != []
    # the pruned file's matching rows are ground truth, not rows the read path returns
    assert result["matching_rows"] > result["funnel"]["matching"]["rows"] == 0
    v = result["violations"][0]
    assert v["column"] == "f0" and v["values"] == [{"column": "f0", "op": "equal", "literals": ["Bob"]}]
    assert result["files"][0]["matching_rows"] > 0 and result["files"][0]["index_decision"] == "SKIP"

    report = audit(root, name, spark=spark)
    errors = [f for f in report["findings"] if f["severity"] == ERROR]
    assert {(f["column"], f["check"]) for f in errors} >= {("f0", "value-coverage"), ("f0", "stale-values")}
    assert not report["health"]["table"][0]["healthy"]
    table = open_warehouse(root).table(name)
    plan = table.plan()
    local = [f.to_dict() for lf in plan.files for f in audit_file(table, lf, plan)] + \
        [f.to_dict() for f in audit_table(table, plan)]
    assert sorted(map(str, report["findings"])) == sorted(str(f) for f in local if f["severity"] != OK)


def test_what_if_bloom_on_unindexed_column(spark, parquet: str, tmp_path: Path) -> None:
    name = "append_with_bitmap.append_with_bitmap"
    table = open_warehouse(parquet).table(name)
    schema = table.schema()
    scratch = tmp_path / "scratch"
    wheres = ["f3 = 12.1", "f3 = 99.5"]
    result = what_if(parquet, name, "f3", "bloom-filter", {"items": "100", "fpp": "0.01"}, wheres,
                          spark=spark, scratch_dir=str(scratch))
    sizes = 0
    for lf in table.plan().files:
        values = read_data_file(table.storage, lf, schema, schema, columns=["f3"]).column("f3").to_pylist()
        sizes += len(build_file_index(values, schema.field("f3").type, "bloom-filter",
                                      {"items": "100", "fpp": "0.01"}))
    assert result["total_size"] == sizes and result["task_errors"] == []
    assert sorted(os.listdir(scratch)) == sorted(os.path.basename(f["scratch_file"]) for f in result["file_results"])
    present, absent = result["predicates"]
    assert present["hypothetical_pruned_files"] == 0 and present["current_pruned_files"] == 0
    assert absent["hypothetical_pruned_files"] == absent["files"] - absent["stats_pruned_files"]
    data_bytes = sum(lf.file.file_size for lf in table.plan().files)
    assert present["file_size"] == absent["file_size"] == data_bytes
    assert present["current_bytes"] == present["hypothetical_bytes"] == data_bytes
    assert present["hypothetical_index_bytes"] == sizes  # read for every file to decide
    assert absent["hypothetical_bytes"] == 0
    # a file the stats already pruned costs neither data bytes nor the new index's bytes
    kept = absent["files"] - absent["stats_pruned_files"]
    assert absent["current_bytes"] == (data_bytes if kept else 0)
    assert absent["hypothetical_index_bytes"] == (sizes if kept else 0)
    with pytest.raises(IndexCoreError):
        what_if(parquet, name, "f3", "bloom-filter", {}, wheres, spark=spark,
                     scratch_dir=os.path.join(parquet, "scratch"))


def test_cancel_before_start(spark, parquet: str) -> None:
    cancel = threading.Event()
    cancel.set()
    name = "append_with_bitmap.append_with_bitmap"
    # a pre-set cancel either stops the job or arrives after its only task: never a wrong answer
    try:
        result = evaluate(parquet, name, "f0 = 'Bob'", spark=spark, cancel=cancel)
    except IndexCoreError as exc:
        assert "cancelled" in str(exc)
    else:
        assert result["matching_rows"] == 2


def test_cancel_running_job(spark) -> None:
    """Cancel from the progress callback once the first task is done: the job stops early."""
    import time

    def slow(spec: dict) -> dict:
        time.sleep(spec["seconds"])
        return {"i": spec["i"]}

    specs = [{"i": i, "seconds": 1.5} for i in range(12)]
    cancel = threading.Event()
    seen: list[tuple[int, int]] = []

    def progress(done: int, total: int, message: str) -> None:
        seen.append((done, total))
        if done >= 1:
            cancel.set()

    with pytest.raises(JobCancelledError, match="cancelled"):
        run_tasks(spark, slow, specs, "indexcore test cancel", progress, cancel)
    assert cancel.is_set()
    assert max(d for d, _ in seen) < len(specs)  # stopped before the remaining tasks ran
    # the session stays usable after a cancelled job
    assert run_tasks(spark, slow, [{"i": 7, "seconds": 0}], "indexcore test after cancel") == [{"i": 7}]


def test_task_records_pickle_without_the_table(parquet: str) -> None:
    """Planned files go to tasks as plain records: stats decoded, nothing that needs the Table."""
    import pickle

    table = open_warehouse(parquet).table("pk_with_bitmap_dv.pk_with_bitmap_dv")
    for lf in table.plan().files:
        shipped = pickle.loads(pickle.dumps(task_file(lf)))
        assert shipped == lf
        assert shipped.file.value_stats.min_values == lf.file.value_stats.min_values
        assert shipped.file.key_stats.null_counts == lf.file.key_stats.null_counts
        bare = pickle.loads(pickle.dumps(task_file(lf, stats=False)))
        assert bare.path == lf.path and bare.deletion_vector == lf.deletion_vector


def test_sample_faulty_table(spark) -> None:
    if not (SAMPLE / "demo.db" / "faulty" / "snapshot").is_dir():
        pytest.skip(f"sample warehouse not built at {SAMPLE}")
    root, name = str(SAMPLE), "demo.faulty"
    report = audit(root, name, spark=spark)
    assert report["task_errors"] == []
    errors = {f["check"]: f for f in report["findings"] if f["severity"] == ERROR}
    assert "index-decodes" in errors and "index-missing" in errors
    assert errors["index-decodes"]["path"] != errors["index-missing"]["path"]
    plan = open_warehouse(root).table(name).plan()
    assert report["files_audited"] == len(plan.files)
    result = evaluate(root, name, "country = 'DE'", spark=spark)
    want = explain(open_warehouse(root).table(name), "country = 'DE'", verify=True).to_json()
    assert _strip(result) == {k: want[k] for k in ("files", "funnel", "violations", "problems")}


def test_false_positives_blame_only_an_index_that_could_skip(spark) -> None:
    """``country = 'NZ' OR user_id = 42``: user_id has no index, so no file index can skip a file
    and the rows read that do not match are not blamed on country's bitmap (issue 14)."""
    result = evaluate(str(SAMPLE), "demo.events", "country = 'NZ' OR user_id = 42", spark=spark)
    fp = result["false_positives"]
    assert set(fp) == {NO_USABLE_INDEX}
    wasted = sum(f["rows_after_dv"] - f["matching_rows"] for f in result["files"] if f["skipped_by"] is None)
    assert fp[NO_USABLE_INDEX]["false_positive_rows"] == wasted > 0
    assert all(f["pruning_index_types"] == [] for f in result["files"])

    alone = evaluate(str(SAMPLE), "demo.events", "country = 'NZ' AND user_id = 42", spark=spark)
    kept = [f for f in alone["files"] if f["skipped_by"] is None]
    assert all(f["pruning_index_types"] == ["bitmap"] for f in kept)
    assert set(alone["false_positives"]) <= {"bitmap"}
