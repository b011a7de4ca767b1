"""A Spark standalone master (``spark://``), started here from PySpark's own jars: a classic master
beyond ``local[...]`` whose driver is this process (client mode), so the driver's heap setting
(``INDEXCORE_SPARK_DRIVER_MEMORY``) reaches it too, and a job runs on the cluster's executor."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _spark_class() -> Path:
    pyspark = pytest.importorskip("pyspark")
    path = Path(pyspark.__file__).parent / "bin" / "spark-class"
    if not path.exists():
        pytest.skip(f"PySpark has no {path}")
    return path


def _wait_for(log: Path, text: str, proc: subprocess.Popen, deadline: float) -> None:
    """Until ``text`` is in ``log`` (the daemon's own word that it is ready), else fail with its log."""
    while time.monotonic() < deadline:
        got = log.read_text(errors="replace") if log.exists() else ""
        if text in got:
            return
        if proc.poll() is not None:
            pytest.fail(f"{log.name} exited ({proc.returncode}): {got[-2000:]}")
        time.sleep(0.2)
    pytest.fail(f"{log.name} never said {text!r}: {log.read_text(errors='replace')[-2000:]}")


@pytest.fixture(scope="module")
def standalone(tmp_path_factory):
    """A standalone master and one worker (1 core, 1 GB) on 127.0.0.1; its ``spark://`` URL."""
    spark_class = _spark_class()
    logs = tmp_path_factory.mktemp("standalone")
    port = _free_port()
    url = f"spark://127.0.0.1:{port}"
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_WORKER_DIR": str(logs / "work"),
           "PYSPARK_PYTHON": sys.executable, "SPARK_NO_DAEMONIZE": "1"}
    procs = []
    try:
        master_log = logs / "master.log"
        master = subprocess.Popen([str(spark_class), "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                                   "--port", str(port), "--webui-port", str(_free_port())],
                                  stdout=master_log.open("w"), stderr=subprocess.STDOUT, env=env)
        procs.append(master)
        deadline = time.monotonic() + 180
        _wait_for(master_log, "I have been elected leader", master, deadline)
        worker_log = logs / "worker.log"
        worker = subprocess.Popen([str(spark_class), "org.apache.spark.deploy.worker.Worker", url, "--cores", "1",
                                   "--memory", "1g", "--webui-port", str(_free_port())],
                                  stdout=worker_log.open("w"), stderr=subprocess.STDOUT, env=env)
        procs.append(worker)
        _wait_for(worker_log, "Successfully registered with master", worker, deadline)
        yield url
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()


def test_driver_memory_reaches_a_standalone_master_and_a_job_runs_there(standalone) -> None:
    """In a fresh process (the driver's heap is read when its JVM starts): the session on the
    ``spark://`` master carries the setting as ``spark.driver.memory`` and half of it as the results'
    cap, and a job's tasks run on the cluster's executor (not in the driver)."""
    code = (
        "from indexcore.spark.session import get_session\n"
        f"s = get_session({standalone!r})\n"
        "sc = s.sparkContext\n"
        "print(sc.master)\n"
        "print(sc.getConf().get('spark.driver.memory'), sc.getConf().get('spark.driver.maxResultSize'))\n"
        "print(sc.parallelize(range(1000), 2).map(lambda x: x * x).sum())\n"
        "ids = sc.parallelize(range(2), 2).map(lambda _: __import__('pyspark').TaskContext.get().stageId() >= 0).collect()\n"
        "print(all(ids), sc._jsc.sc().getExecutorMemoryStatus().size())\n"
        "s.stop()\n")
    env = {**os.environ, "INDEXCORE_SPARK_MASTERS": standalone, "INDEXCORE_SPARK_DRIVER_MEMORY": "1200m",
           "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stdout.split()
    assert lines[0] == standalone
    assert lines[1:3] == ["1200m", "600m"]
    assert int(lines[3]) == sum(x * x for x in range(1000))
    # the block managers: the driver's and the worker's executor
    assert lines[4] == "True" and int(lines[5]) == 2
