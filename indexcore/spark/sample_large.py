"""The production-size sample built with the Spark pipeline (``sample build --scale large
--engine spark``): rows, shape and schemas from :mod:`indexcore.write.large_sample`, data files
written inside Spark tasks by :func:`indexcore.spark.pipeline.write_dataframe`.

The events rows are drawn inside the tasks (``mapInArrow`` over one id per task); orders and
users rows are drawn on the driver and shuffled by partition and bucket into two tasks. The bulk
writer (:mod:`indexcore.write.bulk_sample`) writes the same tables without Spark.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import pyarrow as pa

from indexcore.spark.pipeline import write_dataframe
from indexcore.spark.session import get_session
from indexcore.write import TableWriter
from indexcore.write.large_sample import (
    LARGE_FILES,
    TASKS_PER_PK_BATCH,
    Progress,
    event_count,
    event_rows,
    event_slots,
    events_schema,
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

ORDERS_DDL = "region string, order_id long, customer string, status string, total int, updated_at timestamp_ntz"
USERS_DDL = "region string, user_id long, name string, tier string, version int"


def _events_generator(tasks: list[list[tuple]], first_event: int, seed: int):
    """A ``mapInArrow`` function: task ``t`` (one id of ``spark.range(len(tasks))``) emits its
    rows (:func:`~indexcore.write.large_sample.event_rows`)."""

    def generate(batches):
        pools = user_pools()
        for batch in batches:
            for t in batch.column(0).to_pylist():
                yield event_rows(tasks, t, first_event, seed, pools)[0]

    return generate


def build_events(spark, root: str, seed: int, files: int, partitions: int, batches: int,
                 step: Callable[[str], None]) -> TableWriter:
    from pyspark.sql import types as T  # pyspark loads only when a sample is built

    spark_schema = T.StructType([
        T.StructField("event_id", T.StringType()), T.StructField("user_id", T.LongType()),
        T.StructField("country", T.StringType()), T.StructField("device", T.StringType()),
        T.StructField("event_time", T.TimestampNTZType()), T.StructField("amount", T.IntegerType()),
        T.StructField("price", T.DoubleType()), T.StructField("dt", T.StringType()),
        T.StructField("hr", T.IntegerType())])
    writer = TableWriter.create(root, "large.events", events_schema(), seed=seed, overwrite=True)
    first_event = 0
    for b in range(batches):
        tasks = event_slots(b, batches, partitions, event_count(b, batches, files), seed)
        df = spark.range(len(tasks), numPartitions=len(tasks)).mapInArrow(
            _events_generator(tasks, first_event, seed), spark_schema)
        write_dataframe(writer, df)
        first_event += sum(task_rows(tasks, t) for t in range(len(tasks)))
        step("large.events")
    return writer


def build_orders(spark, root: str, seed: int, batches: int, step: Callable[[str], None]) -> TableWriter:
    writer = TableWriter.create(root, "large.orders", orders_schema(), seed=seed, overwrite=True)
    for version, upserts, deletes in order_batches(seed, batches):
        write_dataframe(writer, _frame(spark, order_rows(upserts, seed, version), ORDERS_DDL),
                        _frame(spark, order_rows(deletes, seed, version), ORDERS_DDL) if deletes else None,
                        num_tasks=TASKS_PER_PK_BATCH)
        step("large.orders")
    return writer


def build_users(spark, root: str, seed: int, buckets_per_batch: int, step: Callable[[str], None]) -> TableWriter:
    writer = TableWriter.create(root, "large.users", users_schema(), seed=seed, overwrite=True)
    for version, keys in user_batches(seed, buckets_per_batch):
        write_dataframe(writer, _frame(spark, user_rows(keys, seed, version), USERS_DDL),
                        num_tasks=TASKS_PER_PK_BATCH)
        step("large.users")
    return writer


def _frame(spark, rows: pa.Table, ddl: str):
    return spark.createDataFrame(rows, ddl)


# ---------------------------------------------------------------------------------- all

def build_large(directory: str, seed: int, files: int = LARGE_FILES, master: str | None = None,
                spark: Any = None, progress: Progress | None = None) -> dict:
    """Build the large sample under ``directory`` with ``files`` live data files in total."""
    plan = shape(files)
    spark = spark or get_session(master, app_name="indexcore-sample-large")
    os.makedirs(directory, exist_ok=True)
    step = step_counter(files, progress)
    writers = [build_orders(spark, directory, seed, plan["order_batches"], step),
               build_users(spark, directory, seed, plan["users_step"], step)]
    others = sum(len(fs) for w in writers for fs in w.live_files().values())
    writers.append(build_events(spark, directory, seed, files - others, plan["partitions"],
                                plan["event_batches"], step))
    return summary(directory, seed, writers)
