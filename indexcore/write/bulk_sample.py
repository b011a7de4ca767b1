"""The production-size sample without Spark: ``sample build DIR --scale large`` (the default engine).

The same tables, batches, tasks and rows as the Spark pipeline (:mod:`indexcore.spark.sample_large`;
both take them from :mod:`.large_sample`), written by the same per-task code
(:func:`~indexcore.write.task.write_groups`, :func:`~indexcore.write.task.write_task_rows`)
in a pool of worker processes instead of Spark tasks, and committed by the same
:class:`~indexcore.write.TableWriter`. What Spark costs per batch and per row is gone:

* events: a task's rows come with their hour and bucket (each row's ``user_id`` is drawn from
  the users of its bucket), so its files are grouped with one sort instead of hashing every row;
  its data files, index containers and commits are byte for byte those of the Spark pipeline;
* orders and users: rows drawn on the driver and split by bucket into two tasks (Spark's
  shuffle puts them in two tasks too, by a hash of partition and bucket, so only the tasks'
  file names differ); buckets are assigned as the pipeline does.

With ``workers=1`` everything runs in this process.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import shutil
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Executor

import numpy as np
import pyarrow as pa

from indexcore.errors import ReadOnlyError
from indexcore.write.datafile import WrittenFile, arrow_type
from indexcore.write.large_sample import (
    EVENT_BUCKETS,
    LARGE_FILES,
    TASKS_PER_PK_BATCH,
    Progress,
    event_count,
    event_rows,
    event_slots,
    events_schema,
    hour_day,
    order_batches,
    order_rows,
    orders_schema,
    shape,
    step_counter,
    summary,
    task_rows,
    user_batches,
    user_pools,
    user_rows,
    users_schema,
)
from indexcore.write.table import TableWriter, check_writable, created_by_indexcore
from indexcore.write.task import (
    BUCKET,
    TaskSpec,
    write_groups,
    write_task_rows,
)

STAGING = ".indexcore-building"  # under DIR: tables being built; not a database, so no reader lists it
TABLES = ("orders", "users", "events")
_PR_SET_PDEATHSIG = 1  # linux/prctl.h


class _InProcess(Executor):
    """``workers=1``: the tasks run here, one after the other."""

    def map(self, fn, *iterables, timeout=None, chunksize=1):  # noqa: ARG002 - Executor's signature
        return map(fn, *iterables)

    def start(self, fn: Callable, items: list) -> Callable[[], list]:
        """``fn`` over ``items``, run when the returned call asks for the results."""
        return lambda: [fn(item) for item in items]


class _Workers(Executor):
    """Worker processes (spawn, not fork: the caller may hold threads, a JVM or a server, that a
    forked child would inherit) that can be stopped at once: ``terminate`` ends them and waits.
    A worker ignores SIGINT (a terminal's Ctrl-C reaches the whole process group; the driver
    stops them) and, on Linux, is killed with its driver even when the driver is killed hard."""

    def __init__(self, workers: int):
        ctx = multiprocessing.get_context("spawn")
        self._pool = ctx.Pool(workers, initializer=_worker_started, initargs=(os.getpid(),))

    def map(self, fn, *iterables, timeout=None, chunksize=1):  # noqa: ARG002 - Executor's signature
        return self._pool.map(fn, list(zip(*iterables, strict=True)) if len(iterables) > 1 else iterables[0],
                              chunksize=1)

    def start(self, fn: Callable, items: list) -> Callable[[], list]:
        """``fn`` over ``items`` in the workers from now on; the returned call waits for the results
        (in order), so the caller can work meanwhile."""
        return self._pool.map_async(fn, items, chunksize=1).get

    def shutdown(self, wait=True, *, cancel_futures=False):  # noqa: ARG002 - Executor's signature
        self._pool.close()
        self._pool.join()

    def terminate(self) -> None:
        self._pool.terminate()
        self._pool.join()


def _worker_started(driver: int) -> None:
    """A worker's first step: ignore SIGINT, die with the driver (``PR_SET_PDEATHSIG``)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if sys.platform.startswith("linux"):
        import ctypes  # only here: the Linux prctl call

        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != driver:  # the driver died before the call above
        os._exit(1)


class BuildInterrupted(SystemExit):
    """SIGTERM or SIGINT reached the driver: the workers are stopped and the unfinished tables
    removed; exits with ``128 + signal`` as a shell reports a signalled process."""

    def __init__(self, signum: int):
        super().__init__(128 + signum)
        self.signum = signum


@contextlib.contextmanager
def _stop_on_signals() -> Iterator[None]:
    """SIGTERM and SIGINT raise :class:`BuildInterrupted` here (main thread only; elsewhere
    the handlers cannot be set and the caller's stay)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupted(signum, frame):  # noqa: ARG001 - signal handler signature
        raise BuildInterrupted(signum)

    before = {sig: signal.signal(sig, interrupted) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)


def event_task(args: tuple[TaskSpec, list[list[tuple]], int, int, int]) -> list[WrittenFile]:
    """One events task: its rows, grouped by hour and bucket (hours, then buckets, ascending:
    the order ``write_task_rows`` sorts partitions ``(dt, hr)`` and buckets in), written."""
    spec, tasks, t, first_event, seed = args
    batch, hour, bucket = event_rows(tasks, t, first_event, seed, user_pools())
    key = hour * EVENT_BUCKETS + bucket
    order = np.argsort(key, kind="stable")
    keys, starts = np.unique(key[order], return_index=True)
    ends = np.append(starts[1:], len(order))
    groups = []
    for k, s, e in zip(keys.tolist(), starts.tolist(), ends.tolist(), strict=True):
        h, b = divmod(k, EVENT_BUCKETS)
        groups.append(((hour_day(h), h % 24), b, order[s:e]))
    rows = pa.Table.from_batches([batch])
    return write_groups(spec, rows.cast(pa.schema([pa.field(f.name, arrow_type(f.type)) for f in spec.schema.fields])),
                        t, groups)  # the file's types once per task (event_time to millis), not per file


def pk_task(args: tuple[TaskSpec, pa.Table, int]) -> list[WrittenFile]:
    """One orders or users task: rows with ``_BUCKET`` (and ``_VALUE_KIND``), as a Spark task gets them."""
    spec, rows, t = args
    return write_task_rows(spec, rows, t)


def _commit_pk_batch(pool: Executor, writer: TableWriter, rows: pa.Table) -> None:
    """Split a bucketed batch into :data:`TASKS_PER_PK_BATCH` tasks by bucket, write, commit."""
    spec = writer.next_task_spec()
    task_of = rows.column(BUCKET).to_numpy() % TASKS_PER_PK_BATCH
    parts = [(spec, rows.filter(pa.array(task_of == t)), t) for t in range(TASKS_PER_PK_BATCH)]
    writer.commit([w for out in pool.map(pk_task, parts) for w in out])


def with_buckets(writer: TableWriter, rows: pa.Table, deletes: pa.Table | None = None) -> pa.Table:
    """A batch with ``_VALUE_KIND`` and ``_BUCKET`` as the Spark pipeline gives its tasks: fixed
    buckets from the key hash, dynamic ones assigned to the distinct (partition, key hash) pairs
    in sorted order."""
    if not writer.dynamic_bucket:
        return writer.prepare_batch(rows, deletes)
    rows = writer.with_kinds(rows, deletes)
    return rows.append_column(BUCKET, pa.array(writer.dynamic_buckets(rows, ascending=True), pa.int32()))


def build_events(pool: Executor, root: str, seed: int, files: int, partitions: int, batches: int,
                 step: Callable[[str], None]) -> TableWriter:
    writer = TableWriter.create(root, "large.events", events_schema(), seed=seed, overwrite=True,
                                keep_files=False)  # a million files: counted, not kept
    """The events batches; the driver writes batch k's snapshot while the workers write batch
    k + 1 (:meth:`~indexcore.write.TableWriter.commit_later`: the same bytes as one after the other)."""
    first_event = 0
    write_snapshot: Callable[[], list[int]] | None = None
    for b in range(batches):
        tasks = event_slots(b, batches, partitions, event_count(b, batches, files), seed)
        spec = writer.next_task_spec()
        results = pool.start(event_task, [(spec, tasks, t, first_event, seed) for t in range(len(tasks))])
        if write_snapshot is not None:
            write_snapshot()
            step("large.events")
        write_snapshot = writer.commit_later([w for out in results() for w in out])
        first_event += sum(task_rows(tasks, t) for t in range(len(tasks)))
    if write_snapshot is not None:
        write_snapshot()
        step("large.events")
    return writer


def build_orders(pool: Executor, root: str, seed: int, batches: int, step: Callable[[str], None]) -> TableWriter:
    writer = TableWriter.create(root, "large.orders", orders_schema(), seed=seed, overwrite=True)
    for version, upserts, deletes in order_batches(seed, batches):
        rows = with_buckets(writer, order_rows(upserts, seed, version),
                            order_rows(deletes, seed, version) if deletes else None)
        _commit_pk_batch(pool, writer, rows)
        step("large.orders")
    return writer


def build_users(pool: Executor, root: str, seed: int, buckets_per_batch: int,
                step: Callable[[str], None]) -> TableWriter:
    writer = TableWriter.create(root, "large.users", users_schema(), seed=seed, overwrite=True)
    for version, keys in user_batches(seed, buckets_per_batch):
        _commit_pk_batch(pool, writer, with_buckets(writer, user_rows(keys, seed, version)))
        step("large.users")
    return writer


def build_large_bulk(directory: str, seed: int, files: int = LARGE_FILES, workers: int | None = None,
                     progress: Progress | None = None) -> dict:
    """Build the large sample under ``directory`` with ``files`` live data files, in ``workers``
    processes (default: one per core); returns the same summary as the Spark pipeline.

    The tables are built under ``DIR/.indexcore-building`` and moved into ``DIR/large.db`` once
    all three are complete, so a build stopped by SIGTERM or SIGINT (its workers are ended, its
    unfinished tables removed) or killed leaves no partial table where readers look; the
    tables of an earlier build stay until then.
    """
    plan = shape(files)
    workers = max(1, workers or os.cpu_count() or 1)
    root = check_writable(directory)
    for table in TABLES:
        final = os.path.join(root, "large.db", table)
        if os.path.exists(final) and not created_by_indexcore(final):
            raise ReadOnlyError(f"large.{table} exists and was not written by indexcore; not touching it",
                                file=final)
    staging = os.path.join(root, STAGING)
    shutil.rmtree(staging, ignore_errors=True)  # what an interrupted or killed build left
    os.makedirs(staging)
    step = step_counter(files, progress)
    pool: _Workers | _InProcess = _Workers(workers) if workers > 1 else _InProcess()
    try:
        with _stop_on_signals():
            writers = [build_orders(pool, staging, seed, plan["order_batches"], step),
                       build_users(pool, staging, seed, plan["users_step"], step)]
            others = sum(n for w in writers for n in w.live_file_counts().values())
            writers.append(build_events(pool, staging, seed, files - others, plan["partitions"],
                                        plan["event_batches"], step))
    except BaseException:
        if isinstance(pool, _Workers):
            pool.terminate()
        shutil.rmtree(staging, ignore_errors=True)
        raise
    pool.shutdown()
    signals = {signal.SIGTERM, signal.SIGINT}
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, signals)  # the renames are not cut short
    try:
        _publish(root, staging)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
    shutil.rmtree(staging)  # the replaced tables; a signal here leaves them for the next build
    return summary(directory, seed, writers)


def _publish(root: str, staging: str) -> None:
    """Move the built tables into ``root/large.db`` (the old ones out first, into the staging
    folder, removed after): renames only, so readers never see a table half there."""
    database = os.path.join(root, "large.db")
    os.makedirs(database, exist_ok=True)
    old = os.path.join(staging, "replaced")
    os.makedirs(old)
    for table in TABLES:
        if os.path.exists(os.path.join(database, table)):
            os.rename(os.path.join(database, table), os.path.join(old, table))
    for table in TABLES:
        os.rename(os.path.join(staging, "large.db", table), os.path.join(database, table))
