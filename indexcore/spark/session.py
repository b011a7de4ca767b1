"""A Spark session for indexcore: local[*] by default, or a cluster / Spark Connect URL.

Workers must run this same Python (they import indexcore), so ``PYSPARK_PYTHON`` and
``PYSPARK_DRIVER_PYTHON`` are pointed at ``sys.executable``. Shuffle partitions are few, the
UI is off and logs are quiet: the pipeline moves little data through shuffles.

A master is free text in the app, so it is checked before anything connects: only masters the
operator allows, exactly as listed (the ``spark_masters`` setting, default ``local[*]``,
``local[1]``, ``local[2]``) are used, a remote one must answer within a connect timeout (the
``spark_connect_timeout`` setting, seconds, default 10; both in :mod:`indexcore.config`), a
different master gets a new session, and a stopped or failed context is replaced instead of
failing every later run.

PySpark allows one classic SparkContext per process, so on a server shared by many users a job
takes a :class:`SparkSessions` lease: jobs on the master of the live context share it, a job on
another master waits (queued, at most ``spark_queue_seconds``) until no job uses the live one
and is refused with a message after that, so a master change never stops a context another job
runs on; each user runs or queues at most ``spark_jobs_per_user`` jobs. Spark Connect masters
(``sc://``) hold no context here and never wait for one another.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator

from indexcore.config import Settings, settings, variable
from indexcore.errors import SparkError

DEFAULT_MASTER = Settings.spark_master
_LOCAL = re.compile(r"local(\[(\*|\d+)(,\s*\d+)?\])?")
_lock = threading.RLock()
_MEMORY = re.compile(r"\s*(\d+)\s*([kmgt])b?\s*", re.IGNORECASE)
_UNITS = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def memory_bytes(text: str) -> int | None:
    """A JVM memory size (``4g``, ``1500m``, ``512k``) in bytes; None when it is not one."""
    m = _MEMORY.fullmatch(text or "")
    return int(m.group(1)) * _UNITS[m.group(2).lower()] if m else None


def driver_memory() -> str:
    """The driver's JVM heap (the ``spark_driver_memory`` setting), checked before the JVM
    starts: a size the JVM would refuse is a SparkError naming the setting."""
    text = settings().spark_driver_memory.strip()
    if not memory_bytes(text):
        raise SparkError(f"{variable('spark_driver_memory')}={text!r} is not a JVM memory size (e.g. 4g or 1500m)")
    return text


def allowed_masters() -> list[str]:
    """The masters the operator allows (the ``spark_masters`` setting)."""
    return list(settings().spark_masters)


def check_master(master: str) -> str:
    """``master`` if the operator allows it, else a SparkError (nothing is contacted).

    Entries match exactly (``local[*]`` allows ``local[*]``, not ``local[64]``: each ``local[N]``
    an operator allows is listed); an entry ending in ``*`` other than a local master allows every
    master starting with what precedes it (``spark://10.0.0.*``).
    """
    master = (master or "").strip()
    for allowed in allowed_masters():
        if master == allowed:
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
        # the driver runs in this process on every classic master (PySpark is client mode: local, spark://,
        # yarn, k8s); every job's results arrive in its heap, read at JVM start (a local master's tasks too)
        memory = driver_memory()
        builder = (builder.config("spark.driver.memory", memory)
                   .config("spark.driver.maxResultSize", f"{max(1, memory_bytes(memory) // 2 >> 20)}m"))
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


class SparkSessions:
    """Leases of the process's Spark sessions for the jobs of many users (one per server).

    :meth:`lease` reserves an allowed master for one job, which then opens its session with
    :func:`get_session` when it needs one (a job that fails before, e.g. on its predicate, starts
    no Spark): at once when no job runs or the jobs running use the same master (or it is a Spark
    Connect one); else it waits, as a queue, until the jobs on the other master end, at most
    ``queue_seconds``, then refuses with a message. So the classic context a job runs on is never
    stopped under it. A user holding ``per_user`` leases (running or queued) is refused another.
    """

    def __init__(self, per_user: int = 1, queue_seconds: float = 300.0):
        self.per_user = max(1, per_user)
        self.queue_seconds = queue_seconds
        self._cond = threading.Condition()
        self._master: str | None = None  # the master of the classic context jobs run on
        self._running = 0  # jobs running on it
        self._held: dict[str, int] = {}  # user -> leases held (running or queued)

    def running(self) -> tuple[str | None, int]:
        """The classic master jobs run on now and how many run (None, 0 when idle)."""
        with self._cond:
            return (self._master if self._running else None), self._running

    @contextlib.contextmanager
    def lease(self, master: str, user: str, cancel: threading.Event | None = None,
              queued: Callable[[str], None] | None = None) -> Iterator[str]:
        """``master`` (checked) reserved for one job of ``user`` until the block ends.

        ``queued(message)`` is told when the job has to wait; a set ``cancel`` stops the wait.
        """
        master = check_master(master)
        classic = not master.startswith("sc://")
        with self._cond:
            if self._held.get(user, 0) >= self.per_user:
                raise SparkError(f"you already have {self._held[user]} Spark job(s) running or queued (at most "
                                 f"{self.per_user} per user here, {variable('spark_jobs_per_user')}); wait for it "
                                 "to end or cancel it")
            self._held[user] = self._held.get(user, 0) + 1
        try:
            if classic:
                self._wait_for(master, cancel, queued)
            try:
                yield master
            finally:
                if classic:
                    with self._cond:
                        self._running -= 1
                        self._cond.notify_all()
        finally:
            with self._cond:
                self._held[user] -= 1
                if not self._held[user]:
                    del self._held[user]

    def _wait_for(self, master: str, cancel: threading.Event | None, queued: Callable[[str], None] | None) -> None:
        deadline = time.monotonic() + self.queue_seconds
        told = False
        with self._cond:
            while self._running and self._master != master:
                if cancel is not None and cancel.is_set():
                    raise SparkError("cancelled while queued")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise SparkError(f"Spark is busy on {self._master} with {self._running} job(s) of other "
                                     f"sessions, and one process holds one Spark context: after "
                                     f"{self.queue_seconds:g} s of waiting this job on {master} is refused. "
                                     f"Run it on {self._master}, or later")
                if not told and queued is not None:
                    queued(f"queued: {self._running} job(s) run on {self._master}; this job on {master} "
                           "starts when they end")
                    told = True
                self._cond.wait(min(left, 0.2))
            self._master = master
            self._running += 1
