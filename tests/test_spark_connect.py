"""Spark jobs over Spark Connect against the single-process engine and the classic session.

One real Connect server for the module: PySpark's bundled ``sbin/start-connect-server.sh``
in the foreground, on 127.0.0.1 and a free port, ``local[2]`` behind it. The client connects
through ``get_session("sc://127.0.0.1:PORT")``, the URL a user gives; the jobs then run as
``mapInPandas`` over pickled task records in the server's Python workers.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from indexcore import open_warehouse
from indexcore.analysis.audit import OK, audit_file, audit_table
from indexcore.errors import IndexCoreError
from indexcore.scan import explain

pytest.importorskip("pyspark")
if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
    pytest.skip("Spark needs Java", allow_module_level=True)

from indexcore.spark.jobs.audit import audit  # noqa: E402
from indexcore.spark.jobs.evaluate import evaluate  # noqa: E402
from indexcore.spark.jobs.run import JobCancelledError, run_tasks  # noqa: E402
from indexcore.spark.jobs.what_if import what_if  # noqa: E402
from indexcore.spark.progress import spark_context  # noqa: E402
from indexcore.spark.session import get_session  # noqa: E402

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module", autouse=True)
def _allow_local_connect():
    """The operator allows the local Connect server this module starts (for this module only:
    set at import, it would narrow every other module's masters to these)."""
    mp = pytest.MonkeyPatch()
    mp.setenv("INDEXCORE_SPARK_MASTERS", "local[*],local[1],local[2],sc://127.0.0.1:*")
    yield
    mp.undo()

SAMPLE = Path(__file__).resolve().parent.parent / "sample_warehouse"
START_SECONDS = 90



def _listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
        return True
    except OSError:
        return False


@pytest.fixture(scope="module")
def connect_url(tmp_path_factory: pytest.TempPathFactory, free_port):
    """``sc://127.0.0.1:PORT`` of a Connect server started for this module (stopped after it)."""
    import pyspark

    home = os.path.dirname(pyspark.__file__)
    script = os.path.join(home, "sbin", "start-connect-server.sh")
    if not os.path.isfile(script):
        pytest.skip(f"no Spark Connect launcher at {script}")
    work = tmp_path_factory.mktemp("connect-server")
    port = free_port()
    env = {k: v for k, v in os.environ.items()
           if k not in ("SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED", "SPARK_LOCAL_REMOTE",
                        "SPARK_CONNECT_AUTHENTICATE_TOKEN")}
    env.update(SPARK_HOME=home, SPARK_PID_DIR=str(work), SPARK_LOG_DIR=str(work),
               PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    log_path = work / "server.log"
    with open(log_path, "wb") as log:
        server = subprocess.Popen(
            [script, "--wait", "--master", "local[2]",
             "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
             "--conf", f"spark.connect.grpc.binding.port={port}",
             "--conf", "spark.ui.enabled=false",
             "--conf", f"spark.executorEnv.PYSPARK_PYTHON={sys.executable}"],
            env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + START_SECONDS
        while not _listening(port):
            if server.poll() is not None or time.monotonic() > deadline:
                tail = log_path.read_text(errors="replace")[-1500:]
                pytest.skip(f"Spark Connect server did not start on 127.0.0.1:{port}: {tail}")
            time.sleep(0.2)
        yield f"sc://127.0.0.1:{port}"
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGTERM)
            try:
                server.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
                server.wait()


@pytest.fixture(scope="module")
def remote(connect_url: str):
    spark = get_session(connect_url)
    yield spark
    spark.stop()


@pytest.fixture(scope="module")
def parquet(conformance: Path) -> str:
    return str(conformance / "warehouses" / "parquet")


def _sample() -> str:
    if not (SAMPLE / "demo.db" / "events" / "snapshot").is_dir():
        pytest.skip(f"sample warehouse not built at {SAMPLE}")
    return str(SAMPLE)


def _strip(result: dict) -> dict:
    violations = [{k: v for k, v in viol.items() if k != "values"} for viol in result["violations"]]
    return {"files": result["files"], "funnel": result["funnel"], "violations": violations,
            "problems": result["problems"]}


def _table(parquet: str, name: str) -> tuple[str, str]:
    return (_sample(), name) if name.startswith("demo.") else (parquet, f"{name}.{name}")


def test_session_is_connect(remote, connect_url: str) -> None:
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    assert isinstance(remote, ConnectSession)
    assert remote.conf.get("spark.sql.session.timeZone") == "UTC"
    assert spark_context(remote) is None  # jobs take the mapInPandas path
    assert get_session(connect_url) is remote


@pytest.mark.parametrize(("name", "where"), [
    ("pk_with_bitmap_dv", "f0 = 'Alice' OR f0 = 'Bob'"),
    ("append_with_bitmap", "f0 = 'Alice' OR f1 = 20"),
    ("demo.events", "country = 'DE' AND amount > 100"),
])
def test_evaluate_equals_explain_verify(remote, parquet: str, name: str, where: str) -> None:
    root, table_name = _table(parquet, name)
    seen: list[tuple[int, int, str]] = []
    result = evaluate(root, table_name, where, spark=remote, progress=lambda d, t, m: seen.append((d, t, m)))
    want = explain(open_warehouse(root).table(table_name), where, verify=True).to_json()
    assert result["task_errors"] == []
    assert _strip(result) == {k: want[k] for k in ("files", "funnel", "violations", "problems")}
    assert result["matching_rows"] == want["funnel"]["matching"]["rows"]
    assert seen[0][0] == 0 and seen[0][2] == "starting"
    assert seen[-1][0] == seen[-1][1] > 0 and seen[-1][2] == "done"


@pytest.mark.parametrize("name", ["pk_with_bitmap_dv", "demo.events"])
def test_audit_equals_single_process(remote, parquet: str, name: str) -> None:
    root, table_name = _table(parquet, name)
    seen: list[tuple[int, int, str]] = []
    report = audit(root, table_name, spark=remote, progress=lambda d, t, m: seen.append((d, t, m)))
    table = open_warehouse(root).table(table_name)
    plan = table.plan()
    local = [f.to_dict() for lf in plan.files for f in audit_file(table, lf, plan)] + \
        [f.to_dict() for f in audit_table(table, plan)]
    assert report["task_errors"] == []
    assert report["files_audited"] == len(plan.files)
    assert sorted(map(str, report["findings"])) == sorted(str(f) for f in local if f["severity"] != OK)
    assert report["checks_passed"] == sum(1 for f in local if f["severity"] == OK)
    assert seen[0][0] == 0 and seen[0][2] == "starting"
    assert seen[-1][0] == seen[-1][1] > 0 and seen[-1][2] == "done"


def test_connect_beside_classic_session(remote, parquet: str, tmp_path: Path) -> None:
    """A classic session in the same process gives the same evaluate and what-if results."""
    classic = get_session("local[2]")
    assert spark_context(classic) is not None
    name, where = "pk_with_bitmap_dv.pk_with_bitmap_dv", "f0 = 'Bob'"
    assert evaluate(parquet, name, where, spark=remote) == evaluate(parquet, name, where, spark=classic)
    name = "append_with_bitmap.append_with_bitmap"
    args = (parquet, name, "f3", "bloom-filter", {"items": "100", "fpp": "0.01"}, ["f3 = 12.1", "f3 = 99.5"])
    over_connect = what_if(*args, spark=remote, scratch_dir=str(tmp_path / "connect"))
    over_classic = what_if(*args, spark=classic, scratch_dir=str(tmp_path / "classic"))
    assert over_connect["task_errors"] == [] and over_connect["files"] > 0
    assert over_connect["predicates"] == over_classic["predicates"]
    assert over_connect["total_size"] == over_classic["total_size"]
    assert sorted(os.listdir(tmp_path / "connect")) == sorted(os.listdir(tmp_path / "classic"))


def _slow_task():
    """A task function the server's workers unpickle by value (they cannot import this module):
    sleeps, then leaves a marker file when it got to the end."""
    def slow(spec: dict) -> dict:
        time.sleep(spec["seconds"])
        if spec.get("markers"):
            Path(spec["markers"], str(spec["i"])).touch()
        return {"i": spec["i"]}
    return slow


def test_cancel_over_connect(remote, tmp_path: Path) -> None:
    """Cancelling interrupts the tagged operation before its tasks end; the session stays usable."""
    cancel = threading.Event()

    def progress(done: int, total: int, message: str) -> None:
        if message == "starting":
            threading.Timer(1.0, cancel.set).start()

    specs = [{"i": i, "seconds": 2, "markers": str(tmp_path)} for i in range(6)]
    with pytest.raises(JobCancelledError, match="cancelled"):
        run_tasks(remote, _slow_task(), specs, "indexcore test cancel", progress, cancel)
    assert len(os.listdir(tmp_path)) < len(specs)  # local[2]: the last waves never ran
    assert remote.getTags() == set()
    assert run_tasks(remote, _slow_task(), [{"i": 7, "seconds": 0}], "indexcore test after cancel") == [{"i": 7}]


def test_failed_job_is_an_indexcore_error(remote) -> None:
    with pytest.raises(IndexCoreError, match="Spark job failed"):
        run_tasks(remote, _slow_task(), [{"i": 0}], "indexcore test failure")


@pytest.mark.parametrize(("name", "where"), [("pk_with_bitmap_dv", "f0 = 'Alice'"), ("demo.events", "country = 'NZ'")])
def test_metadata_jobs_equal_single_process(remote, parquet: str, name: str, where: str) -> None:
    """Plan, census and explain (verified, every file index consulted) with manifests read by tasks
    over Connect (Arrow and JSON back, no pickles) equal one process."""
    from indexcore.spark.jobs.metadata import spark_census, spark_explain, spark_plan
    from indexcore.views.census import file_indexes
    from indexcore.views.census_rows import plain
    from indexcore.views.system import files

    root, table_name = _table(parquet, name)
    table = open_warehouse(root).table(table_name)
    assert spark_plan(root, table_name, spark=remote).table.equals(files(table))
    # equal values (the shared text columns' dictionaries may differ: one process's are the plan's)
    assert plain(spark_census(root, table_name, spark=remote).table).equals(plain(file_indexes(table)))
    got = spark_explain(root, table_name, where, spark=remote, verify=True, all_files=True).to_json()
    want = explain(table, where, verify=True, all_files=True).to_json()
    keys = ("files", "funnel", "problems", "violations")
    assert {k: got[k] for k in keys} == {k: want[k] for k in keys}
