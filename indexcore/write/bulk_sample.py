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

import multiprocessing
import os
from collections.abc import Callable
from concurrent.futures import Executor, ProcessPoolExecutor

import numpy as np
import pyarrow as pa

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
from indexcore.write.table import TableWriter
from indexcore.write.task import (
    BUCKET,
    TaskSpec,
    dynamic_assignment,
    key_hashes,
    partition_of,
    write_groups,
    write_task_rows,
)


class _InProcess(Executor):
    """``workers=1``: the tasks run here, one after the other."""

    def map(self, fn, *iterables, timeout=None, chunksize=1):  # noqa: ARG002 - Executor's signature
        return map(fn, *iterables)


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
    schema = writer.schema
    rows = writer.with_kinds(rows, deletes)
    parts = partition_of(schema, rows)
    hashes = key_hashes(schema, rows, schema.trimmed_primary_keys)
    assignment = dynamic_assignment(writer.assign_dynamic, parts, hashes)
    buckets = [assignment[ph] for ph in zip(parts, hashes, strict=True)]
    return rows.append_column(BUCKET, pa.array(buckets, pa.int32()))


def build_events(pool: Executor, root: str, seed: int, files: int, partitions: int, batches: int,
                 step: Callable[[str], None]) -> TableWriter:
    writer = TableWriter.create(root, "large.events", events_schema(), seed=seed, overwrite=True,
                                keep_files=False)  # a million files: counted, not kept
    first_event = 0
    for b in range(batches):
        tasks = event_slots(b, batches, partitions, event_count(b, batches, files), seed)
        spec = writer.next_task_spec()
        args = [(spec, tasks, t, first_event, seed) for t in range(len(tasks))]
        writer.commit([w for out in pool.map(event_task, args) for w in out])
        first_event += sum(task_rows(tasks, t) for t in range(len(tasks)))
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
    processes (default: one per core); returns the same summary as the Spark pipeline."""
    plan = shape(files)
    workers = max(1, workers or os.cpu_count() or 1)
    os.makedirs(directory, exist_ok=True)
    step = step_counter(files, progress)
    # spawn, not fork: the caller may hold threads (a JVM, a server) a forked child would inherit
    pool: Executor = (ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))
                      if workers > 1 else _InProcess())
    with pool:
        writers = [build_orders(pool, directory, seed, plan["order_batches"], step),
                   build_users(pool, directory, seed, plan["users_step"], step)]
        others = sum(n for w in writers for n in w.live_file_counts().values())
        writers.append(build_events(pool, directory, seed, files - others, plan["partitions"],
                                    plan["event_batches"], step))
    return summary(directory, seed, writers)
