"""Running tasks on Spark: files packed into task groups, one Spark job, results in order.

:func:`run_tasks` runs a task function over its specs with progress and cancellation
(:class:`~indexcore.spark.progress.JobWatch`): through an RDD on a classic session, through
``mapInPandas`` over pickled specs with JSON results (:mod:`.plain`) on Spark Connect. A task
that fails as a whole returns :func:`task_error` instead of its result, and the job goes on.
"""

from __future__ import annotations

import heapq
import os
import pickle
import threading
import traceback
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from indexcore.config import settings, variable
from indexcore.errors import IndexCoreError, SparkMemoryError
from indexcore.spark.jobs.plain import plain_dumps, plain_loads
from indexcore.spark.progress import JobWatch, Progress, spark_context
from indexcore.spark.session import memory_bytes

TASKS_PER_CORE = 2


class JobCancelledError(IndexCoreError):
    """A Spark job stopped because its ``cancel`` event was set."""


# what Spark says when a job's results do not fit the driver: a result the driver lost (its block
# evicted), the JVM's heap, or the results' cap (spark.driver.maxResultSize)
_OUT_OF_MEMORY = ("TaskResultLost", "OutOfMemoryError", "Java heap space", "GC overhead limit exceeded",
                  "maxResultSize")
# what a job sees when the driver's JVM stopped under it (its heap ran out fetching results: the
# OutOfMemoryError itself is logged by the JVM's result getter thread, not given to the job)
_STOPPED = "SparkContext was shut down"


def job_failed(description: str, exc: BaseException, stopped: bool = False) -> IndexCoreError:
    """Our error for a Spark job that failed with ``exc``: where its results did not fit the driver,
    a :class:`SparkMemoryError` naming the setting that sizes the driver and a figure to set it to.
    ``stopped``: the driver's context was found stopped after the failure (not cancelled by us)."""
    text = str(exc)  # read once: a Py4J error's text is fetched from the JVM, which may be stopping
    found = next((m for m in _OUT_OF_MEMORY if m in text), None)
    if found is not None:
        what = f"the job's results did not fit the Spark driver ({found})"
    elif stopped or _STOPPED in text:  # the JVM's own OutOfMemoryError goes to its log; the job sees the stop
        what = (f"the Spark driver stopped during the job ({_STOPPED}; on a local master most often because "
                f"its heap ran out as the results came in)")
    else:
        return IndexCoreError(f"{description}: Spark job failed: {text}")
    now = settings().spark_driver_memory
    size = memory_bytes(now)
    bigger = f"{2 * size >> 30}g" if size and size >= 1 << 29 else "2g"
    return SparkMemoryError(f"{description}: {what}; its JVM heap is {now} ({variable('spark_driver_memory')}, read "
                            f"when Spark starts on a local master, half of it for a job's results): set "
                            f"{variable('spark_driver_memory')}={bigger} (or more) and run again in a new process")


def _stopped(sc) -> bool:
    """Whether a classic context has stopped (a JVM that cannot answer has)."""
    if sc is None:
        return False
    try:
        return bool(sc._jsc.sc().isStopped())
    except Exception:  # noqa: BLE001 - the gateway to a stopped JVM fails in many ways
        return True


def task_error(spec: dict, exc: BaseException) -> dict:
    """What a task that failed as a whole returns: the error, its files and a short trace."""
    return {"error": f"{type(exc).__name__}: {exc}", "paths": [lf.path for lf in spec["files"]],
            "trace": traceback.format_exc(limit=5)}


def file_groups(files: Sequence, max_tasks: int, whole_buckets: bool = True) -> list[list]:
    """The files packed into at most ``max_tasks`` groups of similar total size (:func:`size_groups`
    of their units). With ``whole_buckets`` a partition/bucket is one unit, never split across
    groups; else each file is one."""
    units: dict[tuple, list] = {}
    for lf in files:
        key = (repr(lf.partition), lf.bucket) if whole_buckets else (lf.path,)
        units.setdefault(key, []).append(lf)
    listed = list(units.values())
    sizes = np.array([sum(lf.file.file_size for lf in unit) for unit in listed], np.int64)
    return [[lf for u in group.tolist() for lf in listed[u]] for group in size_groups(sizes, max_tasks)]


def size_groups(sizes: np.ndarray, max_tasks: int) -> list[np.ndarray]:
    """Units of ``sizes`` bytes packed into at most ``max_tasks`` groups of similar total size: the
    largest first (equal ones in their order), each to the group holding the fewest bytes so far
    (the first such; a unit counts one byte more than its size); each group's unit numbers in the
    order they joined it, empty groups left out."""
    sizes = np.asarray(sizes, np.int64)
    order = np.argsort(-sizes, kind="stable")
    n = max(1, min(max_tasks, len(order)))
    heap = [(0, i) for i in range(n)]
    owner = np.empty(len(order), np.int64)
    for at, size in zip(order.tolist(), sizes[order].tolist(), strict=True):
        total, i = heapq.heappop(heap)
        owner[at] = i
        heapq.heappush(heap, (total + size + 1, i))
    joined = owner[order]
    return [g for g in (order[joined == i] for i in range(n)) if len(g)]


def max_tasks(spark) -> int:
    """How many tasks a job is split into: ``TASKS_PER_CORE`` per core of the session."""
    sc = spark_context(spark)
    cores = sc.defaultParallelism if sc is not None else os.cpu_count() or 2
    return max(1, cores * TASKS_PER_CORE)


def run_tasks(spark, fn: Callable[[dict], dict], specs: list[dict], description: str,
              progress: Progress | None = None, cancel: threading.Event | None = None) -> list[dict]:
    """Run ``fn`` over ``specs``, one Spark task each; results in ``specs`` order.

    Raises :class:`JobCancelledError` when ``cancel`` is set before the job ends.
    """
    if not specs:
        return []
    sc = spark_context(spark)
    with JobWatch(spark, description, progress, cancel, expected_tasks=len(specs)) as watch:
        try:
            if sc is not None:
                results = sc.parallelize(list(enumerate(specs)), len(specs)) \
                    .map(lambda item: (item[0], fn(item[1]))).collect()
            else:
                results = _run_connect(spark, fn, specs)
        except Exception as exc:
            if watch.cancelled or (cancel is not None and cancel.is_set()):
                raise JobCancelledError(f"{description}: cancelled") from None
            raise job_failed(description, exc, _stopped(sc)) from exc
    if watch.cancelled or (cancel is not None and cancel.is_set()):  # set before the watcher saw the job
        raise JobCancelledError(f"{description}: cancelled")
    return [r for _, r in sorted(results, key=lambda t: t[0])]


def _run_connect(spark, fn: Callable[[dict], dict], specs: list[dict]) -> list[tuple[int, dict]]:
    """Spark Connect has no RDDs: a DataFrame of pickled specs through ``mapInPandas``.

    Results come back as JSON text (:func:`plain_dumps`), never as pickles: unpickling bytes
    from a remote server would let that server run code here.
    """

    def run(batches):
        for batch in batches:
            yield pd.DataFrame({"i": batch["i"], "result": [plain_dumps(fn(pickle.loads(s))) for s in batch["spec"]]})

    df = spark.createDataFrame([(i, pickle.dumps(s)) for i, s in enumerate(specs)], "i int, spec binary")
    rows = df.repartition(len(specs)).mapInPandas(run, "i int, result string").collect()
    return [(int(r["i"]), plain_loads(r["result"])) for r in rows]
