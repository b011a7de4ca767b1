"""A Spark session for indexcore: local[*] by default, or a cluster / Spark Connect URL.

Workers must run this same Python (they import indexcore), so ``PYSPARK_PYTHON`` and
``PYSPARK_DRIVER_PYTHON`` are pointed at ``sys.executable``. Shuffle partitions are few, the
UI is off and logs are quiet: the pipeline moves little data through shuffles.

A master is free text in the app, so it is checked before anything connects: only masters the
operator allows (the ``spark_masters`` setting, default ``local[*]``) are used, a remote one must
answer within a connect timeout (the ``spark_connect_timeout`` setting, seconds, default 10;
both in :mod:`indexcore.config`), a different master gets a new session, and a stopped or failed context is
replaced instead of failing every later run.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import sys
import threading

from indexcore.config import Settings, settings, variable
from indexcore.errors import SparkError

DEFAULT_MASTER = Settings.spark_master
_LOCAL = re.compile(r"local(\[(\*|\d+)(,\s*\d+)?\])?")
_lock = threading.RLock()


def allowed_masters() -> list[str]:
    """The masters the operator allows (the ``spark_masters`` setting)."""
    return list(settings().spark_masters)


def check_master(master: str) -> str:
    """``master`` if the operator allows it, else a SparkError (nothing is contacted).

    ``local[*]`` in the list allows every in-process master (``local``, ``local[N]``); an entry
    ending in ``*`` allows every master starting with what precedes it; others match exactly.
    """
    master = (master or "").strip()
    for allowed in allowed_masters():
        if master == allowed:
            return master
        if allowed == DEFAULT_MASTER and _LOCAL.fullmatch(master):
            return master
        if allowed.endswith("*") and not _LOCAL.fullmatch(allowed) and master.startswith(allowed[:-1]):
            return master
    raise SparkError(f"Spark master {master!r} is not allowed here (allowed: {', '.join(allowed_masters())}; "
                     f"the operator sets {variable('spark_masters')})")


def connect_timeout() -> float:
    """Seconds a remote master has to answer (the ``spark_connect_timeout`` setting, at least 0.1)."""
    return max(0.1, settings().spark_connect_timeout)


def _endpoints(master: str) -> list[tuple[str, int]]:
    """Host and port of each address in a ``spark://`` or ``sc://`` master (none for others)."""
    m = re.match(r"^(spark|sc)://([^/;?]+)", master)
    if not m:
        return []
    default_port = 7077 if m.group(1) == "spark" else 15002
    out = []
    for part in m.group(2).split(","):
        host, _, port = part.rpartition(":") if ":" in part else (part, "", "")
        host = host.strip("[]") or part
        try:
            out.append((host, int(port) if port else default_port))
        except ValueError as exc:
            raise SparkError(f"Spark master {master!r} has a bad port {port!r}") from exc
    return out


def _reachable(master: str) -> None:
    """Fail fast (within the connect timeout) when a remote master does not answer."""
    timeout = connect_timeout()
    for host, port in _endpoints(master):
        try:
            with socket.create_connection((host, port), timeout=timeout):
                return
        except OSError as exc:
            last = exc
    if _endpoints(master):
        raise SparkError(f"Spark master {master} did not answer within {timeout:g} s: {last}")


def _classic_context_alive(sc) -> bool:
    try:
        return sc._jsc is not None and not sc._jsc.sc().isStopped()
    except Exception:  # noqa: BLE001 - a dead gateway or JVM counts as stopped
        return False


def _current_classic():
    """The live classic SparkContext of this process, or None (a dead one is cleaned away)."""
    from pyspark import SparkContext  # pyspark loads only when a session is needed

    sc = SparkContext._active_spark_context
    if sc is None:
        return None
    if _classic_context_alive(sc):
        return sc
    _stop_classic(sc)
    return None


def _stop_classic(sc) -> None:
    from pyspark import SparkContext  # pyspark loads only when a session is needed
    from pyspark.sql import SparkSession  # pyspark loads only when a session is needed

    with contextlib.suppress(Exception):  # already half gone: clear what Python still holds
        sc.stop()
    SparkContext._active_spark_context = None
    SparkSession._instantiatedSession = None
    SparkSession._activeSession = None


def get_session(master: str | None = None, app_name: str = "indexcore", shuffle_partitions: int = 8,
                conf: dict[str, str] | None = None):
    """Build (or reuse) a SparkSession on an allowed ``master``.

    ``master``: ``local[*]`` (default), ``local[N]``, ``spark://host:port``, ``yarn``; a
    ``sc://host:port`` URL connects through Spark Connect instead. A session on another master
    is stopped and replaced; a stopped one is rebuilt.
    """
    master = check_master(master or settings().spark_master)
    _reachable(master)
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    with _lock:
        try:
            return _build(master, app_name, shuffle_partitions, conf)
        except SparkError:
            raise
        except Exception as exc:  # noqa: BLE001 - py4j, JVM and gRPC failures alike
            if not master.startswith("sc://"):
                _current_classic()  # a context the failure left stopped is cleared for the next run
            raise SparkError(f"cannot start Spark on {master}: {exc}") from exc


def _build(master: str, app_name: str, shuffle_partitions: int, conf: dict[str, str] | None):
    from pyspark.sql import SparkSession  # pyspark loads only when a session is needed

    if master.startswith("sc://"):
        builder = _connect_builder().remote(master).appName(app_name)
    else:
        sc = _current_classic()
        if sc is not None and sc.master != master:
            _stop_classic(sc)  # getOrCreate would silently keep the old master
        builder = (SparkSession.builder.appName(app_name).master(master)
                   .config("spark.ui.enabled", "false")
                   .config("spark.ui.showConsoleProgress", "false")
                   .config("spark.sql.execution.arrow.pyspark.enabled", "true")
                   .config("spark.driver.extraJavaOptions", "-Dlog4j.rootLogger=ERROR,console")
                   .config("spark.executorEnv.PYSPARK_PYTHON", sys.executable))
    builder = builder.config("spark.sql.shuffle.partitions", str(shuffle_partitions))
    builder = builder.config("spark.sql.session.timeZone", "UTC")
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    if not master.startswith("sc://"):
        spark.sparkContext.setLogLevel("ERROR")
    return spark


def _connect_builder():
    """Spark Connect's own session builder.

    PySpark's generic builder refuses a remote session while a classic SparkContext lives in
    this process, and marks the whole process as Connect-only (``SPARK_CONNECT_MODE_ENABLED``),
    so no classic session could be made afterwards. Connect's builder does neither: one process
    (the app, a test run) can hold a classic and a Connect session side by side.
    """
    from pyspark.sql.connect.session import SparkSession as ConnectSession  # Connect loads for sc:// only

    return ConnectSession.builder
