"""A Spark master that cannot hurt the server: allowed masters, fast failure, fresh sessions.

The refusals happen before anything connects (no JVM needed); the session tests use a real
local Spark: a changed master gets a new session, a stopped context is replaced, and what-if
leaves no scratch directory behind, whether the job ends or fails.
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import tempfile
import threading
from pathlib import Path

import pytest

from indexcore.errors import IndexCoreError, SparkError
from indexcore.spark.jobs.plain import plain_dumps, plain_loads
from indexcore.spark.session import check_master, get_session

SAMPLE = Path(__file__).resolve().parent.parent / "sample_warehouse"



def test_only_allowed_masters(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("INDEXCORE_SPARK_MASTERS", raising=False)
    assert check_master("local[*]") == "local[*]"
    assert check_master("local[2]") == "local[2]"
    for bad in ("spark://127.0.0.1:7077", "sc://evil.example:15002", "yarn", "local[2]; rm -rf /"):
        with pytest.raises(SparkError, match="not allowed"):
            get_session(bad)
    monkeypatch.setenv("INDEXCORE_SPARK_MASTERS", "yarn,spark://10.0.0.*")
    assert check_master("spark://10.0.0.7:7077") == "spark://10.0.0.7:7077"
    with pytest.raises(SparkError, match="not allowed"):
        check_master("local[*]")


def test_unreachable_master_fails_fast_without_starting_spark(monkeypatch: pytest.MonkeyPatch, free_port) -> None:
    monkeypatch.setenv("INDEXCORE_SPARK_MASTERS", "local[*],spark://127.0.0.1:*,sc://127.0.0.1:*")
    monkeypatch.setenv("INDEXCORE_SPARK_CONNECT_TIMEOUT", "2")
    port = free_port()
    for url in (f"spark://127.0.0.1:{port}", f"sc://127.0.0.1:{port}"):
        with pytest.raises(SparkError, match="did not answer"):
            get_session(url)


def test_results_travel_as_plain_data_never_pickles() -> None:
    import datetime as dt
    import decimal

    value = {"files": [{"path": "a", "rows": (1, 2), "min": decimal.Decimal("1.50"), "raw": b"\x00\x01",
                        "at": dt.datetime(2024, 6, 1, 12), "nan": float("nan")}], (1, "k"): {3}}
    back = plain_loads(plain_dumps(value))
    assert back["files"][0]["rows"] == (1, 2) and back["files"][0]["raw"] == b"\x00\x01"
    assert back["files"][0]["min"] == decimal.Decimal("1.50") and back[(1, "k")] == {3}
    with pytest.raises(IndexCoreError, match="not plain data"):
        plain_loads(pickle.dumps({"x": 1}).decode("latin-1"))
    for evil in ("os:system", "subprocess:Popen", "indexcore.spark.jobs.plain:json"):
        with pytest.raises(IndexCoreError, match="not plain data"):
            plain_loads(json.dumps({"__indexcore__": "dataclass", "type": evil, "fields": {}}))
    from indexcore.scan import Decision

    decision = next(iter(Decision))
    assert plain_loads(plain_dumps([decision, (decision,)])) == [decision, (decision,)]


pyspark = pytest.importorskip("pyspark")
needs_java = pytest.mark.skipif(shutil.which("java") is None and not os.environ.get("JAVA_HOME"),
                                reason="Spark needs Java")


@needs_java
@pytest.mark.spark
def test_changed_master_gets_a_new_session_and_a_stopped_context_recovers() -> None:
    first = get_session("local[1]")
    assert first.sparkContext.master == "local[1]"
    second = get_session("local[2]")
    assert second.sparkContext.master == "local[2]"
    assert second.range(10).count() == 10
    second.sparkContext._jsc.sc().stop()  # the JVM side stops (a failed master does this)
    third = get_session("local[2]")
    assert third.range(7).count() == 7


def _whatif_dirs() -> set[str]:
    return {n for n in os.listdir(tempfile.gettempdir()) if n.startswith("indexcore-whatif-")}


@needs_java
@pytest.mark.spark
def test_what_if_leaves_no_scratch_dir_when_it_ends_or_fails() -> None:
    from indexcore.spark.jobs.what_if import what_if

    spark = get_session("local[2]")
    before = _whatif_dirs()
    result = what_if(str(SAMPLE), "demo.events", "device", "bloom-filter", {"items": "100"},
                          ["device = 'ios'"], spark=spark)
    assert result["files"] > 0 and result["scratch_dir"] is None
    assert _whatif_dirs() == before
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(IndexCoreError):
        what_if(str(SAMPLE), "demo.events", "device", "bloom-filter", {"items": "100"},
                     ["device = 'ios'"], spark=spark, cancel=cancel)
    assert _whatif_dirs() == before
