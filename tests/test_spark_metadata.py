"""The metadata work on Spark (plan with manifests read by tasks, census of index heads, explain,
health) equals the same work in one process, on real Spark ``local[2]``.

Tables: the bundled sample warehouse, conformance warehouses written by Paimon (skipped with a
reason when ``../shared/conformance`` is absent) and a bulk-built large sample of 2,000 files,
whose live-file count comes from its builder (what it wrote), not from our reader.
"""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path

import pyarrow as pa
import pytest
from advise_json import without_seconds

from indexcore import open_warehouse
from indexcore.analysis.advise import advise, index_inventory
from indexcore.analysis.health import health, table_health
from indexcore.cli import main
from indexcore.cli.commands.advise import run_advise
from indexcore.cli.main import build_parser
from indexcore.errors import PredicateError
from indexcore.formats.base import BitmapResult
from indexcore.scan.explainer import explain
from indexcore.spark.jobs.metadata import (
    live_file_estimate,
    metadata_master,
    partition_keys,
    seed_census,
    spark_census,
    spark_explain,
    spark_explain_columns,
    spark_explain_workload,
    spark_hash_int,
    spark_health,
    spark_health_view,
    spark_plan,
    spark_plan_and_census,
    spark_plan_columns,
)
from indexcore.spark.jobs.planned import advise_on_spark
from indexcore.spark.jobs.run import JobCancelledError
from indexcore.spark.jobs.what_if import what_if, what_if_measure
from indexcore.views.census import file_indexes
from indexcore.views.census_rows import plain
from indexcore.views.system import files as files_view
from indexcore.write.bulk_sample import build_large_bulk

pytestmark = [pytest.mark.spark]

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = str(ROOT / "sample_warehouse")
# a condition per sample table, on an indexed column where there is one
SAMPLE_TABLES = {
    "demo.events": "country = 'NZ' OR user_id = 7",
    "demo.orders": "status = 'shipped'",
    "demo.users": "user_id = 3",
    "demo.daily_events": "country = 'NZ'",
    "demo.faulty": "country = 'NZ'",
    "demo.releases": "id = 1",
}
CONFORMANCE_TABLES = [  # (format folder, table, condition)
    ("parquet", "pk_table_scan_and_read_dv", "f3 = 11.1 OR f3 IS NULL"),
    ("parquet", "append_with_bsi_bitmap_bloomfilter", "f1 = 100 OR f0 = 'Alice'"),
    ("parquet", "append_with_global_index_with_partition", "f3 = 11.1"),
    ("parquet", "append_with_empty_partition_with_empty_value", "f3 = 12.1"),
    ("orc", "pk_09_with_dv", None),
]
LARGE_FILES = 2000


@pytest.fixture(scope="module")
def spark():
    from indexcore.spark.session import get_session  # pyspark loads only for these tests

    return get_session("local[2]")


@pytest.fixture(scope="module")
def large(tmp_path_factory) -> tuple[str, dict]:
    """A large sample of 2,000 live files, bulk built, with its builder's summary."""
    root = str(tmp_path_factory.mktemp("large-2000"))
    return root, build_large_bulk(root, seed=7, files=LARGE_FILES)


def _same_explain(got, want) -> None:
    """Per-file decisions, funnel and problems equal (whole-explain I/O totals depend on what each
    process's cache already held, so they are not compared)."""
    got, want = got.to_json(), want.to_json()
    assert got["files"] == want["files"]
    assert got["funnel"] == want["funnel"]
    assert got["problems"] == want["problems"]
    assert (got["table"], got["snapshot"], got["where"]) == (want["table"], want["snapshot"], want["where"])


def _same_options(spark, root: str, name: str, where: str, **options) -> dict:
    """Explain on Spark with explain's options equals explain in this process: files, funnel,
    problems and, verified, verify's violations and matching rows; returns the Spark JSON."""
    got = spark_explain(root, name, where, spark=spark, **options)
    want = explain(open_warehouse(root).table(name), where, **options)
    _same_explain(got, want)
    assert got.violations == want.violations
    assert got.verified == want.verified == bool(options.get("verify"))
    return got.to_json()


def _check(spark, root: str, name: str, where: str | None) -> dict:
    """Plan, census, health and explain of one table on Spark against one process; returns counts."""
    table = open_warehouse(root).table(name)
    plan = spark_plan(root, name, spark=spark)
    want = files_view(table)
    assert plan.table.schema == want.schema
    assert plan.table.equals(want), f"{name}: Spark plan differs"
    assert set(plan.problems) == set(table.plan_columns().problems)
    assert plan.snapshot_id == (table.plan().snapshot.id if table.plan().snapshot else None)

    # the census on Spark, kept on a table nothing of the one-process run is kept on; health reads it
    fresh = open_warehouse(root).table(name)
    sid = seed_census(fresh, root, "local[2]", spark=spark)
    census = fresh.caches.derived.peek(("view", "file_indexes", sid)) if sid is not None else None
    # equal values; the dictionaries of the shared text columns differ (one process: the plan's own)
    assert sid is None or plain(census).equals(plain(file_indexes(table))), f"{name}: Spark census differs"
    assert table_health(fresh, sid) == table_health(table)
    assert fresh.caches.derived.peek(("view", "file_indexes", sid)) is census  # health did not redo it

    # health measured in tasks, only its parts back: equal, and the driver planned no data file (a
    # listed global index is checked from the index manifest alone)
    driver = open_warehouse(root).table(name)
    assert spark_health(driver, root, "local[2]", spark=spark) == table_health(table), f"{name}: Spark health differs"
    if sid is not None:
        assert ("columns", sid) not in driver.caches.plans and sid not in driver.caches.plans

    if where is not None:
        _same_explain(spark_explain(root, name, where, spark=spark), explain(table, where))
    return {"files": plan.table.num_rows, "tasks": plan.tasks}


@pytest.mark.parametrize(("name", "where"), list(SAMPLE_TABLES.items()))
def test_sample_tables(spark, name: str, where: str | None) -> None:
    got = _check(spark, SAMPLE, name, where)
    assert got["files"] > 0


@pytest.mark.parametrize(("fmt", "db", "where"), CONFORMANCE_TABLES)
def test_conformance_tables(spark, conformance: Path, fmt: str, db: str, where: str | None) -> None:
    root = conformance / "warehouses" / fmt
    if not (root / f"{db}.db").is_dir():
        pytest.skip(f"conformance table {fmt}/{db} is absent")
    _check(spark, str(root), f"{db}.{db}", where)


def test_large_sample(spark, large) -> None:
    """2,000 bulk-built files: equal results, plan order kept across many groups, and the live files
    the builder wrote (its summary) found by the tasks."""
    root, summary = large
    tables = summary["tables"]
    for name, where in (("events", "country = 'NZ' OR event_id = '17'"), ("orders", "status = 'shipped'"),
                        ("users", None)):
        got = _check(spark, root, f"large.{name}", where)
        assert got["files"] == tables[name]["data_files"]
        assert got["tasks"] > 2
    assert sum(t["data_files"] for t in tables.values()) == LARGE_FILES


def test_each_group_is_one_task(spark) -> None:
    """The key each group is shuffled under lands in its own partition by Spark's own hash
    partitioning (``repartition(n, col)`` and ``spark_partition_id``, not our hash): one group per
    second-stage task. The groups' own numbers did not (on ``local[2]``, 4 groups: 0, 1 and 3 in
    one partition)."""
    from pyspark.sql import functions as F  # pyspark: an optional dependency

    values = [0, 1, -1, 42, 2**31 - 1, -2**31, 123_456]
    hashed = spark.createDataFrame([(v,) for v in values], "k int").select(F.hash("k")).collect()
    assert [r[0] for r in hashed] == [spark_hash_int(v) for v in values]
    for n in (1, 2, 3, 4, 5, 8, 16, 33):
        keys = partition_keys(n)
        rows = (spark.createDataFrame([(k,) for k in keys], "k int").repartition(n, "k")
                .select("k", F.spark_partition_id().alias("p")).collect())
        assert {k: p for k, p in rows} == {k: i for i, k in enumerate(keys)}, n
    old = (spark.createDataFrame([(k,) for k in range(4)], "k int").repartition(4, "k")
           .select(F.spark_partition_id()).distinct().count())
    assert old < 4  # what the group numbers as keys gave


# (table, condition, explain's options): every option, alone and together, over buckets of a
# primary-key table (stats decided per bucket), partitions, and files pruned before their index
SAMPLE_OPTIONS = [
    ("demo.users", "user_id = 3", {"verify": True}),
    ("demo.users", "user_id = 3 OR user_id = 8", {"partition": "region=eu", "bucket": 1, "verify": True}),
    ("demo.events", "country = 'NZ' OR user_id = 7", {"partition": {"dt": "2024-06-02"}, "all_files": True}),
    ("demo.orders", "status = 'shipped'", {"bucket": 2, "all_files": True, "verify": True}),
    ("demo.faulty", "country = 'NZ'", {"verify": True}),
]


@pytest.mark.parametrize(("name", "where", "options"), SAMPLE_OPTIONS)
def test_explain_options_on_sample(spark, name: str, where: str, options: dict) -> None:
    out = _same_options(spark, SAMPLE, name, where, **options)
    assert out["files"], f"{name}: no file explained"
    if "bucket" in options:
        assert {f["bucket"] for f in out["files"]} == {options["bucket"]}


def test_explain_of_no_file(spark) -> None:
    """A bucket no file is in: no file and the empty funnel, as in one process; a partition key the
    table lacks is the same error, before Spark starts."""
    out = _same_options(spark, SAMPLE, "demo.events", "country = 'NZ'", bucket=99)
    assert out["files"] == [] and out["funnel"]["all"]["files"] == 0
    with pytest.raises(PredicateError, match="not a partition key"):
        spark_explain(SAMPLE, "demo.events", "country = 'NZ'", spark=spark, partition="nope=1")


@pytest.mark.parametrize(("fmt", "db", "where", "options"), [
    ("parquet", "pk_table_scan_and_read_dv", "f3 = 11.1 OR f3 IS NULL", {"verify": True, "all_files": True}),
    ("parquet", "append_with_global_index_with_partition", "f3 = 11.1", {"verify": True}),
    ("parquet", "append_with_bsi_bitmap_bloomfilter", "f1 = 100 OR f0 = 'Alice'", {"verify": True, "bucket": 0}),
])
def test_explain_options_on_conformance(spark, conformance: Path, fmt: str, db: str, where: str,
                                        options: dict) -> None:
    root = conformance / "warehouses" / fmt
    if not (root / f"{db}.db").is_dir():
        pytest.skip(f"conformance table {fmt}/{db} is absent")
    _same_options(spark, str(root), f"{db}.{db}", where, **options)


def test_explain_options_on_large_sample(spark, large) -> None:
    """The bulk sample: a partition's files verified, and one bucket of every partition with every
    file index consulted; the files chosen are those the builder wrote there."""
    root, _summary = large
    table = open_warehouse(root).table("large.events")
    specs = [p[1] for p in table.plan_columns().partitions]
    out = _same_options(spark, root, "large.events", "country = 'NZ' OR event_id = '17'",
                        partition={k: str(v) for k, v in specs[0].items()}, verify=True)
    assert {tuple(sorted(f["partition"].items())) for f in out["files"]} == {tuple(sorted(specs[0].items()))}
    out = _same_options(spark, root, "large.events", "country = 'NZ'", bucket=1, all_files=True)
    assert out["files"] and {f["bucket"] for f in out["files"]} == {1}


def test_explain_columns_are_aggregates_without_records(spark, large) -> None:
    """spark_explain_columns brings back Arrow rows and the funnel summed over them; the funnel and
    every row equal explain's in this process, record by record."""
    root, _summary = large
    where = "country = 'NZ' OR event_id = '17'"
    got = spark_explain_columns(root, "large.events", where, spark=spark)
    want = explain(open_warehouse(root).table("large.events"), where)
    assert isinstance(got.files, pa.Table) and got.files.num_rows == len(want.files)
    assert got.funnel == want.funnel
    assert got.files.column("path").to_pylist() == [f.path for f in want.files]
    assert got.files.column("skipped_by").to_pylist() == [None if f.skipped_by is None else f.skipped_by.value
                                                          for f in want.files]
    assert got.files.column("bytes_read").to_pylist() == [f.bytes_read for f in want.files]
    assert got.files.column("index_decision").to_pylist() == [
        None if f.index_decision is None else f"{len(f.index_decision.bitmap)} rows"
        if isinstance(f.index_decision, BitmapResult) else f.index_decision.to_json() for f in want.files]
    assert [f.to_json() for f in got.decisions()] == [f.to_json() for f in want.files]


def test_unreadable_manifest_is_the_same_problem(spark, tmp_path: Path) -> None:
    """A manifest that cannot be decoded is a problem on Spark as in one process, and the files of
    the other manifests are still planned."""
    shutil.copytree(Path(SAMPLE) / "demo.db" / "events", tmp_path / "demo.db" / "events")
    root = str(tmp_path)
    table = open_warehouse(root).table("demo.events")
    victim = table.plan().manifests[0].file_name
    (tmp_path / "demo.db" / "events" / "manifest" / victim).write_bytes(b"not an avro file")
    table = open_warehouse(root).table("demo.events")
    want = table.plan_columns()
    assert any(p.structure == "manifest" for p in want.problems)
    got = spark_plan(root, "demo.events", spark=spark)
    assert set(got.problems) == set(want.problems)
    assert got.table.equals(files_view(table))


def test_health_on_spark(spark) -> None:
    """spark_health is table_health measured in tasks; ``$health`` from it is the one-process view."""
    table = open_warehouse(SAMPLE).table("demo.faulty")
    want = table_health(table)
    assert want.unusable and want.items  # unusable files and items to carry back
    assert spark_health(open_warehouse(SAMPLE).table("demo.faulty"), SAMPLE, "local[2]", spark=spark) == want
    assert spark_health_view(open_warehouse(SAMPLE).table("demo.faulty"), SAMPLE, "local[2]", spark=spark).equals(
        health(table))


def test_advise_inventory_from_the_spark_census(spark) -> None:
    """advise's inventory of existing indexes (what ``advise --master`` measures them on) read from the
    census run on Spark equals the one-process inventory."""

    def inventory(table) -> list:
        groups, problems = index_inventory(table)
        return [(g.column, g.index_type, g.configured, g.live_files, g.bytes, sorted(g.blobs), sorted(g.missing),
                 len(g.wrong_column)) for g in groups] + [problems]

    fresh = open_warehouse(SAMPLE).table("demo.events")
    seed_census(fresh, SAMPLE, "local[2]", spark=spark)
    assert inventory(fresh) == inventory(open_warehouse(SAMPLE).table("demo.events"))


ADVISE_WORKLOADS = [  # (warehouse under ../shared/conformance or None: the sample, table, workload)
    (None, "demo.events", "-- weight: 3\nSELECT * FROM demo.events WHERE country = 'NZ';\n"
                          "country = 'NZ' OR user_id = 7;\nuser_id IN (3, 4) AND country <> 'US';\n"
                          "SELECT * FROM demo.events;\nno_such_column = 1;\ncountry = 'NZ'\n"),
    ("parquet", "append_with_bsi_bitmap_bloomfilter.append_with_bsi_bitmap_bloomfilter",
     "f1 = 100 OR f0 = 'Alice';\nf0 = 'Bob';\nf1 > 50\n"),
]


@pytest.mark.parametrize("where,name,workload", ADVISE_WORKLOADS, ids=[w[1] for w in ADVISE_WORKLOADS])
def test_advise_explains_its_queries_on_spark(spark, request, where, name, workload) -> None:
    """advise with its queries explained in one Spark job (``spark_explain_workload``: manifests
    read and every query decided in tasks) gives the in-process advice, whole JSON with details
    (timings aside); the job explained each distinct condition, the bad one an error as in-process."""
    root = SAMPLE if where is None else str(request.getfixturevalue("conformance") / "warehouses" / where)
    want = advise(open_warehouse(root).table(name), workload, sample=0, details=True)
    explained: list = []

    def explain_all(conditions, snapshot_id, whole=True):
        for ex in spark_explain_workload(root, name, conditions, snapshot_id=snapshot_id, spark=spark):
            explained.append(ex)
            yield ex

    got = advise(open_warehouse(root).table(name), workload, sample=0, details=True, explain_all=explain_all)
    assert without_seconds(got.to_json(details=True)) == without_seconds(want.to_json(details=True))
    assert len(explained) == len(want.runs) and any(r.explain_json for r in want.runs)
    assert [isinstance(ex, PredicateError) for ex in explained] == [r.error is not None for r in want.runs]


def _text_bytes(values) -> int:
    """The address of a text array's character bytes (one chunk)."""
    chunk = values.chunk(0) if isinstance(values, pa.ChunkedArray) else values
    return chunk.buffers()[2].address


def _planned_nothing(table) -> bool:
    """``table`` keeps no plan of any snapshot, objects or columns (nothing planned in this process)."""
    return len(table.caches.plans) == 0


@pytest.mark.parametrize("where,name,workload", ADVISE_WORKLOADS, ids=[w[1] for w in ADVISE_WORKLOADS])
def test_advise_on_spark_plans_nothing_here(spark, request, where, name, workload) -> None:
    """advise with a master (``advise_on_spark``: the census, the plan's columns and every query's
    explain from Spark jobs) gives the in-process advice, whole JSON with details (timings aside),
    and this process kept no plan; the plan's columns from Spark equal the in-process ones."""
    root = SAMPLE if where is None else str(request.getfixturevalue("conformance") / "warehouses" / where)
    here = open_warehouse(root).table(name)
    want = advise(here, workload, sample=0, details=True)
    columns, census = spark_plan_and_census(root, name, spark=spark)
    assert columns.files.equals(here.plan_columns().files) and columns.partitions == here.plan_columns().partitions
    assert plain(census).equals(plain(file_indexes(here)))
    # the census's paths are the plan's own column (its dictionary), as one process makes it: no copy
    if census.num_rows:
        assert _text_bytes(census.column("file_path").chunk(0).dictionary) == _text_bytes(columns.files.column("path"))
    assert spark_plan_columns(root, name, spark=spark).files.equals(columns.files)
    driver = open_warehouse(root).table(name)
    got = advise(driver, workload, sample=0, details=True, **advise_on_spark(driver, root, "local[2]", spark=spark))
    assert without_seconds(got.to_json(details=True)) == without_seconds(want.to_json(details=True))
    assert _planned_nothing(driver)
    assert not _planned_nothing(here)  # the check can fail: in process advise keeps its plan


def test_advise_on_spark_samples_as_in_process(spark) -> None:
    """With a sample (strata by partition, files made from the Spark plan's rows as they are drawn)
    and candidates measured on every file by Spark what-if jobs on the same planned files, advise
    on Spark equals advise in process measured the same way."""
    workload = ADVISE_WORKLOADS[0][2]
    here = open_warehouse(SAMPLE).table("demo.events")
    want = advise(here, workload, sample=2, details=True,
                  measure=what_if_measure(SAMPLE, "demo.events", "local[2]"))
    driver = open_warehouse(SAMPLE).table("demo.events")
    got = advise(driver, workload, sample=2, details=True,
                 **advise_on_spark(driver, SAMPLE, "local[2]", measure=True, spark=spark))
    assert without_seconds(got.to_json(details=True)) == without_seconds(want.to_json(details=True))
    assert _planned_nothing(driver)


def test_census_on_an_object_store_reads_manifests_side_by_side(spark, large, monkeypatch) -> None:
    """On an object store (``bench/lean_s3.py``, 30 ms per request) the first-stage tasks fetch
    their manifests at once, as one process plans (each read one at a time: at most one manifest
    request per running task, 2 on ``local[2]``), and the census equals the local one."""
    import os
    import subprocess
    import sys
    import urllib.request

    pytest.importorskip("s3fs")
    for k, v in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                 "AWS_DEFAULT_REGION": "us-east-1"}.items():
        monkeypatch.setenv(k, v)
    root, _summary = large
    table = open_warehouse(root).table("large.events")
    manifests = len(table.plan_head().manifests)
    assert manifests >= 8
    want = plain(file_indexes(table)).drop_columns(["file_path", "index_file_path"])
    proc = subprocess.Popen([sys.executable, str(ROOT / "bench" / "lean_s3.py"), root, "--delay", "0.03",
                             "--skip-suffix", ".parquet", "--skip-suffix", ".orc"], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        endpoint = f"http://127.0.0.1:{json.loads(proc.stdout.readline())['port']}"
        opts = {"endpoint_url": endpoint, "key": "testing", "secret": "testing"}
        got = spark_census("s3://lake", "large.events", spark=spark, storage_options=opts)
        with urllib.request.urlopen(endpoint + "/__bench_stats") as r:
            most = json.loads(r.read())["most_in_flight"]
    finally:
        proc.kill()
        proc.wait()
    assert plain(got.table).drop_columns(["file_path", "index_file_path"]).equals(want)
    assert most.get("manifest", 0) > 2, most


def test_what_if_measure_packs_the_files_once_per_run(monkeypatch, spark) -> None:
    """advise's what-if callback with a master makes each live file's task copy once for the run,
    not once per candidate; each candidate's result equals :func:`what_if` run alone (which plans
    and packs the files itself)."""
    import indexcore.spark.jobs.what_if as what_if_module

    made = []
    real = what_if_module.task_file
    monkeypatch.setattr(what_if_module, "task_file", lambda lf, stats=True: made.append(lf.path) or real(lf, stats))
    candidates = [("country", "bloom-filter", {"items": "100"}, ["country = 'NZ'"]),
                  ("user_id", "bitmap", {}, ["user_id = 7", "user_id = 3"]),
                  ("device", "bloom-filter", {}, ["device = 'ios'"])]
    measure = what_if_measure(SAMPLE, "demo.events", "local[2]")
    got = [measure(*c) for c in candidates]
    files = len(open_warehouse(SAMPLE).table("demo.events").plan().files)
    assert len(made) == len(set(made)) == files > 3
    for (column, kind, options, wheres), result in zip(candidates, got, strict=True):
        alone = what_if(SAMPLE, "demo.events", column, kind, options, wheres, spark=spark)
        assert result == alone
    assert len(made) == files * (1 + len(candidates))  # each lone what_if packs its own


def test_the_spark_census_groups_as_the_one_process_census(spark, large) -> None:
    """The census read on Spark (many tasks, each its own dictionaries) comes back with each text
    column one chunk over one dictionary: grouped by column, kind, storage and error, counted by
    file, it gives what the one-process census gives."""
    from indexcore.views.census import census_files
    from indexcore.views.census_rows import FILE_INDEXES, SHARED_TEXT

    root = large[0]
    fresh = open_warehouse(root).table("large.events")
    sid = seed_census(fresh, root, "local[2]", spark=spark)
    census = fresh.caches.derived.peek(("view", "file_indexes", sid))
    mine = file_indexes(open_warehouse(root).table("large.events"))
    assert census.schema == FILE_INDEXES and census.num_rows == mine.num_rows > 2000
    keys = ["column_name", "index_type", "storage_type", "error"]
    for name in [*keys, "file_path"]:
        assert census.schema.field(name).type == SHARED_TEXT and census[name].num_chunks == 1, name

    def grouped(t: pa.Table) -> list:
        got = t.group_by(keys, use_threads=False).aggregate([("index_size_in_bytes", "sum"), ("file_name", "count")])
        return sorted(plain(got).to_pylist(), key=str)

    assert grouped(census) == grouped(mine) == grouped(plain(mine))
    kinds = sorted(k for k in set(plain(mine)["index_type"].to_pylist()) if k)
    assert [census_files(census, [k]) for k in kinds] == [census_files(mine, [k]) for k in kinds]


def test_live_file_rows_are_the_plans_files(monkeypatch, large) -> None:
    """advise's files from plan columns (made alone as asked for, a block of rows once several of it
    are; few kept) are the snapshot's live files in plan order: each index, negative index, slice,
    iteration and lookup by path gives the file the object plan gives at that place, files made
    alone, kept blocks and files past what is kept alike."""
    import indexcore.spark.jobs.planned as planned

    monkeypatch.setattr(planned, "_BLOCK", 64)
    monkeypatch.setattr(planned, "_KEEP_FILES", 128)
    table = open_warehouse(large[0]).table("large.events")
    want = table.plan().files
    facts = planned.planned_of_columns(table, table.plan_columns())
    rows = facts.files
    assert len(rows) == len(want) > 64 * 4
    key = [(lf.path, lf.partition, lf.bucket, lf.file.row_count, lf.file.file_size, lf.index_path) for lf in want]

    def keys(files) -> list:
        return [(lf.path, lf.partition, lf.bucket, lf.file.row_count, lf.file.file_size, lf.index_path) for lf in files]

    assert keys(rows) == key
    picks = [5, 700, 3, len(want) - 1, 130, 5, 64, 63]
    assert keys(rows[i] for i in picks) == [key[i] for i in picks]
    assert keys([rows[-1]]) == [key[-1]] and keys(rows[60:70]) == key[60:70]
    # a block's files asked for one by one, backwards: made alone until enough are asked, then the block
    assert keys(rows[i] for i in range(191, 127, -1)) == key[191:127:-1]
    assert keys(rows[i] for i in range(128, 192)) == key[128:192]
    assert keys(facts.by_path[key[i][0]] for i in picks) == [key[i] for i in picks]
    assert facts.index_of[key[700][0]] == 700 and facts.table_bytes == sum(k[4] for k in key)
    with pytest.raises(IndexError):
        rows[len(want)]


def test_progress_and_cancel(spark) -> None:
    seen: list[tuple[int, int]] = []
    spark_census(SAMPLE, "demo.events", spark=spark, progress=lambda d, t, m: seen.append((d, t)))
    assert seen and seen[-1][0] == seen[-1][1] > 0
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(JobCancelledError):
        spark_plan(SAMPLE, "demo.events", spark=spark, cancel=cancel)


def test_routing_by_live_files(monkeypatch) -> None:
    """``--master`` wins; else Spark from INDEXCORE_SPARK_METADATA_FILES live files (0: never)."""
    table = open_warehouse(SAMPLE).table("demo.events")
    live = len(table.plan().files)
    assert live_file_estimate(table) == live
    assert metadata_master(table, None, "local[2]") == "local[2]"
    monkeypatch.delenv("INDEXCORE_SPARK_METADATA_FILES", raising=False)
    assert metadata_master(table) is None
    monkeypatch.setenv("INDEXCORE_SPARK_METADATA_FILES", str(live + 1))
    assert metadata_master(table) is None
    monkeypatch.setenv("INDEXCORE_SPARK_MASTER", "local[2]")
    monkeypatch.setenv("INDEXCORE_SPARK_METADATA_FILES", str(live))
    assert metadata_master(table) == "local[2]"


def _cli(capsys, *args: str):
    code = main([*args, "--format", "json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    return json.loads(out.out)


def test_cli_master(spark, capsys) -> None:
    """``explain``, ``show`` and ``health`` with ``--master`` print what they print without it."""
    where = SAMPLE_TABLES["demo.events"]
    on = _cli(capsys, "explain", SAMPLE, "demo.events", "--where", where, "--master", "local[2]")
    off = _cli(capsys, "explain", SAMPLE, "demo.events", "--where", where)
    assert {k: on[k] for k in ("files", "funnel", "problems")} == {k: off[k] for k in ("files", "funnel", "problems")}
    for view in ("files", "file_indexes", "health"):
        assert _cli(capsys, "show", SAMPLE, f"demo.events${view}", "--master", "local[2]") == \
            _cli(capsys, "show", SAMPLE, f"demo.events${view}")
    assert _cli(capsys, "health", SAMPLE, "demo.orders", "--master", "local[2]") == \
        _cli(capsys, "health", SAMPLE, "demo.orders")
    narrowed = ("--verify", "--partition", "dt=2024-06-02", "--all-files")
    on = _cli(capsys, "explain", SAMPLE, "demo.events", "--where", where, "--master", "local[2]", *narrowed)
    off = _cli(capsys, "explain", SAMPLE, "demo.events", "--where", where, *narrowed)
    keys = ("files", "funnel", "problems", "violations", "matching_rows")
    assert {k: on[k] for k in keys} == {k: off[k] for k in keys}
    assert on["files"] and all(f["partition"] == {"dt": "2024-06-02"} for f in on["files"])


def test_cli_advise_master(spark, capsys, tmp_path) -> None:
    """``advise --master`` (census, the plan's columns, every query's explain and the candidates on
    Spark) prints what ``advise`` prints in one process, timings aside, and its process kept no plan
    of the table (the same command in one process keeps one)."""
    wl = tmp_path / "workload.sql"
    wl.write_text(ADVISE_WORKLOADS[0][2])
    args = ("advise", SAMPLE, "demo.events", "--workload", str(wl), "--details", "--sample", "0")
    on = _cli(capsys, *args, "--master", "local[2]")
    off = _cli(capsys, *args)
    assert without_seconds(on) == without_seconds(off)
    for master, planned in ((["--master", "local[2]"], False), ([], True)):
        parsed = build_parser().parse_args([*args, *master])
        parsed.storage_options = None
        table = open_warehouse(SAMPLE).table("demo.events")
        assert without_seconds(run_advise(parsed, table)) == without_seconds(off)
        assert _planned_nothing(table) is not planned


def test_what_if_packs_advises_plan_rows_not_file_copies(large) -> None:
    """Of advise's files from plan columns, what-if's task groups are plan rows (no object per file
    at the driver): the same files in the same order as the object packing's groups, the schema ids
    the objects give, and a group's shipped rows make the same task copies as the objects."""
    import numpy as np

    from indexcore.spark.jobs.planned import planned_of_columns
    from indexcore.spark.jobs.run import file_groups
    from indexcore.spark.jobs.tables import schema_ids
    from indexcore.spark.jobs.task_files import task_file
    from indexcore.spark.jobs.what_if import _task_files, packed_files

    table = open_warehouse(large[0]).table("large.events")
    planned = planned_of_columns(table, table.plan_columns())
    objects = list(table.plan().files)
    groups = packed_files(table, planned, 4)
    want = file_groups(objects, 4, whole_buckets=False)
    assert len(groups) == len(want) == 4
    schema = table.read_schema(None, planned.snapshot)
    for (ids, rows), files in zip(groups, want, strict=True):
        assert isinstance(rows, np.ndarray)
        assert [objects[i].path for i in rows.tolist()] == [lf.path for lf in files]
        assert ids == schema_ids(table, files, schema.id)
        shipped = _task_files(planned, rows).live_files(table)
        assert shipped == [task_file(lf, stats=False) for lf in files]
