"""advise on Spark without details (issue 29): the workload explain's tasks ship only the columns
advise reads, and the advice equals advise in one process; the driver's memory setting reaches a
local session, and results that do not fit the driver fail with a message naming it.

Real Spark ``local[2]``; the truth is the in-process explain and advise on the same tables (the
bundled sample, a conformance warehouse written by Paimon, a bulk-built sample of 2,000 files).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from advise_json import without_seconds

from indexcore import open_warehouse
from indexcore.analysis.advise import advise
from indexcore.config import settings
from indexcore.scan.decision_columns import CODED_FIELDS, INT_FIELDS
from indexcore.scan.explainer import explain
from indexcore.spark.jobs.metadata import spark_explain_workload
from indexcore.spark.jobs.planned import advise_on_spark
from indexcore.write.bulk_sample import build_large_bulk

pytestmark = [pytest.mark.spark]

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = str(ROOT / "sample_warehouse")
LARGE_WORKLOAD = [  # the bulk sample's large.events: every index kind, stats, partitions, IN, LIKE, OR
    "country = 'FR'", "device = 'ios' AND dt = '2024-06-01'", "user_id = 1990",
    "event_id = 'ev-0000000371-ea54'", "amount > 9990", "hr = 3", "country IN ('MX', 'GB') AND hr < 4",
    "event_id LIKE 'ev-00000003%'", "user_id BETWEEN 100 AND 120", "price > 999.5 OR country = 'DE'",
    "event_time >= TIMESTAMP '2024-06-01 00:10:00' AND event_time < TIMESTAMP '2024-06-01 00:30:00'",
    "no_such_column = 1"]
WORKLOADS = [  # (warehouse: None the sample, "large" the bulk sample, else under ../shared/conformance)
    (None, "demo.events", "-- weight: 3\nSELECT * FROM demo.events WHERE country = 'NZ';\n"
                          "country = 'NZ' OR user_id = 7;\nuser_id IN (3, 4) AND country <> 'US';\n"
                          "SELECT * FROM demo.events;\nno_such_column = 1;\ncountry = 'NZ'\n"),
    ("parquet", "append_with_bsi_bitmap_bloomfilter.append_with_bsi_bitmap_bloomfilter",
     "f1 = 100 OR f0 = 'Alice';\nf0 = 'Bob';\nf1 > 50\n"),
    ("large", "large.events", ";\n".join(LARGE_WORKLOAD) + "\n"),
]


@pytest.fixture(scope="module")
def spark():
    from indexcore.spark.session import get_session  # pyspark loads only for these tests

    return get_session("local[2]")


@pytest.fixture(scope="module")
def large(tmp_path_factory) -> str:
    """A bulk-built sample of 2,000 live files (bitmap, bloom filter, bsi and range-bitmap indexes)."""
    root = str(tmp_path_factory.mktemp("large-2000"))
    build_large_bulk(root, seed=7, files=2000)
    return root


def _root(request, where: str | None) -> str:
    if where is None:
        return SAMPLE
    if where == "large":
        return request.getfixturevalue("large")
    return str(request.getfixturevalue("conformance") / "warehouses" / where)


def test_lean_explanations_are_explains_columns(spark, large) -> None:
    """Each condition's lean explanation (no whole record per file) holds, file by file in explain's
    order, what explain in one process decides: every integer field and stage code, the stage that
    skipped it, its path, the index's answer, the raw index result (bitmaps decoded from their
    bytes) and the index kinds; and the same funnel, index use and problems."""
    table = open_warehouse(large).table("large.events")
    conditions = LARGE_WORKLOAD[:-1]
    lean = list(spark_explain_workload(large, "large.events", conditions, spark=spark, whole=False))
    assert len(lean) == len(conditions)
    bitmaps = 0
    for condition, got in zip(conditions, lean, strict=True):
        want = explain(table, condition)
        g, w = got.files, want.files
        assert len(g) == len(w) == table.plan_columns().num_files
        for name in INT_FIELDS:
            assert np.array_equal(g.ints(name), w.ints(name)), (condition, name)
        for name in CODED_FIELDS:
            assert np.array_equal(g.codes(name), w.codes(name)), (condition, name)
        assert list(g.skipped_by()) == list(w.skipped_by())
        assert list(g.objects("path")) == list(w.objects("path"))
        for name in ("raw_index_result", "index_decision", "matching_rows", "global_index_rows"):
            assert list(g.objects(name)) == list(w.objects(name)), (condition, name)
        assert list(g.index_types()) == [None if t is None else {c: list(k) for c, k in t.items()}
                                         for t in w.index_types()]
        assert got.funnel == want.funnel and got.index_used == want.index_used
        assert got.problems == want.problems and got.predicate == want.predicate
        bitmaps += sum(type(r).__name__ == "BitmapResult" for r in g.objects("raw_index_result"))
    assert bitmaps > 0  # the bitmap answers travelled as bytes and came back equal


@pytest.mark.parametrize("sample", [None, 0, 3])
@pytest.mark.parametrize("where,name,workload", WORKLOADS, ids=[w[1].split(".")[0] for w in WORKLOADS])
def test_advise_on_spark_without_details_as_in_process(spark, request, where, name, workload, sample) -> None:
    """advise with a master and without details (the explains lean: asked with ``whole=False``)
    gives the in-process advice: its whole JSON, what the CLI prints (timings aside)."""
    root = _root(request, where)
    want = advise(open_warehouse(root).table(name), workload, sample=sample)
    driver = open_warehouse(root).table(name)
    on = advise_on_spark(driver, root, "local[2]", spark=spark)
    asked: list[bool] = []

    def explain_all(conditions, sid, whole=True):
        asked.append(whole)
        return on["explain_all"](conditions, sid, whole)

    got = advise(driver, workload, sample=sample, **{**on, "explain_all": explain_all})
    assert asked == [False]
    assert without_seconds(got.to_json()) == without_seconds(want.to_json())


def _child(code: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT), **env})


def test_driver_memory_reaches_a_local_session(spark) -> None:
    """The ``spark_driver_memory`` setting is the local session's ``spark.driver.memory`` (the
    default here; 1200m in a fresh process, with half of it the results' cap), and a size the JVM
    would refuse is our error naming the setting, before Spark starts."""
    assert spark.conf.get("spark.driver.memory") == settings().spark_driver_memory
    read_back = ("from indexcore.spark.session import get_session\ns = get_session('local[1]')\n"
                 "print(s.conf.get('spark.driver.memory'), s.conf.get('spark.driver.maxResultSize'))\n"
                 "print(s.sparkContext.getConf().get('spark.driver.memory'))")
    out = _child(read_back, INDEXCORE_SPARK_DRIVER_MEMORY="1200m")
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["1200m", "600m", "1200m"]
    bad = _child("from indexcore.errors import SparkError\nfrom indexcore.spark.session import get_session\n"
                 "try:\n    get_session('local[1]')\nexcept SparkError as exc:\n    print(exc.message)",
                 INDEXCORE_SPARK_DRIVER_MEMORY="lots")
    assert "INDEXCORE_SPARK_DRIVER_MEMORY='lots' is not a JVM memory size" in bad.stdout, bad.stderr[-2000:]


def test_results_past_the_driver_say_what_to_raise() -> None:
    """A job whose results pass what the driver takes (1g of heap: 512 MiB of results; 16 tasks of
    40 MiB each) fails as our SparkMemoryError naming the setting and a bigger figure."""
    code = ("import os\nfrom indexcore.errors import SparkMemoryError\n"
            "from indexcore.spark.jobs.run import run_tasks\nfrom indexcore.spark.session import get_session\n"
            "try:\n    run_tasks(get_session('local[2]'), os.urandom, [40 << 20] * 16, 'big results')\n"
            "except SparkMemoryError as exc:\n    print('MEMORY', exc.message)")
    out = _child(code, INDEXCORE_SPARK_DRIVER_MEMORY="1g")
    # the results' cap or the heap, whichever the results reach first: the heap's OutOfMemoryError stops
    # the JVM's context (seen in a fresh-clone CI run and again on a quiet machine)
    assert out.stdout.startswith(("MEMORY big results: the job's results did not fit the Spark driver",
                                  "MEMORY big results: the Spark driver stopped during the job")), \
        out.stdout[-2000:] + out.stderr[-4000:]
    assert "set INDEXCORE_SPARK_DRIVER_MEMORY=2g (or more)" in out.stdout
