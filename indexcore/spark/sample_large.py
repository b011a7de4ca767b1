"""The production-size sample: a warehouse of many small files, built with the Spark pipeline.

``python -m indexcore sample build DIR --scale large [--files N]`` writes three tables whose
live data files add up to exactly ``N`` (default 50,000), the way a streaming ingest fills a
lake: many commits, each adding small files (tens to hundreds of rows).

* ``large.events``: append table partitioned by ``dt`` and ``hr`` (one partition per hour;
  about ``N / 350`` of them, 4 to 150) with 8 buckets by ``user_id``, committed in up to 250
  batches. Each batch writes the current hour and late rows of the hours before it, one file
  per bucket and hour in each of its tasks (a few tasks per batch: Spark's per-task cost
  would dominate one task per file). Bloom filter on ``event_id``, bitmap on
  ``country``, range-bitmap on ``event_time`` and BSI on ``amount``; a file's index container
  stays in the manifest up to 2 KiB (files of a few dozen rows) and goes to ``.index`` above.
* ``large.orders``: primary key, partitioned by ``region``, 8 fixed buckets, deletion vectors;
  every batch inserts new orders and updates or deletes older ones, mostly in buckets 0 and 1,
  never in buckets 6 and 7, so deletion vectors pile up unevenly.
* ``large.users``: primary key with dynamic buckets (HASH index), partitioned by ``region``,
  three batches of new and updated users.

Rows, file names and snapshot times derive from the seed, so a rebuild gives the same bytes.
"""

from __future__ import annotations

import datetime as _dt
import math
import os
import random
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa

from indexcore.formats.binary_row import bucket_of, key_hash
from indexcore.spark.pipeline import write_dataframe
from indexcore.spark.sample import users_frame
from indexcore.spark.session import get_session
from indexcore.types import parse_type
from indexcore.write import TableWriter, make_schema
from indexcore.write.layout import field_types

LARGE_FILES = 50_000
REGIONS = ("ap", "eu", "sa", "us")
COUNTRIES = ("US", "US", "US", "DE", "DE", "FR", "BR", "IN", "JP", "GB", "NZ", "MX")
ORDER_BUCKETS = 8
# share of the batch's updates that falls in each orders bucket: DVs pile up unevenly
UPDATE_SHARE = (0.42, 0.26, 0.14, 0.09, 0.06, 0.03, 0.0, 0.0)
USERS_TARGET_ROWS = 200
HOUR_MILLIS = 3_600_000
FIRST_HOUR = 1_717_200_000_000  # 2024-06-01T00:00:00Z
LATE_HOURS = 12  # a batch writes the current hour and up to 11 hours before it
EVENT_BUCKETS = 8  # large.events: fixed buckets by user_id, one file per bucket per hour a task writes
EVENT_TASKS = 2  # Spark tasks per events batch (one per core of a small machine)
EVENT_USERS = 20_000
MAX_EVENT_BATCHES = 250
FILES_PER_EVENT_BATCH = 180

Progress = Callable[[int, int, str], None]


def shape(files: int) -> dict[str, int]:
    """How ``files`` live data files are spread: partitions, batches and per-table budgets."""
    if files < 100:
        raise ValueError("--scale large needs --files of at least 100")
    order_batches = max(2, min(100, round(0.06 * files / (len(REGIONS) * ORDER_BUCKETS))))
    users_step = max(1, round(0.03 * files / (6 * len(REGIONS))))
    events = files - order_batches * len(REGIONS) * ORDER_BUCKETS - 6 * len(REGIONS) * users_step
    return {
        "partitions": max(4, min(150, files // 350)),
        "order_batches": order_batches,
        "users_step": users_step,
        "events_files": events,
        "event_batches": max(3, min(MAX_EVENT_BATCHES, events // FILES_PER_EVENT_BATCH)),
    }


# ---------------------------------------------------------------------------------- events

EVENTS_COLUMNS = [("event_id", "STRING"), ("user_id", "BIGINT"), ("country", "STRING"), ("device", "STRING"),
                  ("event_time", "TIMESTAMP(3)"), ("amount", "INT"), ("price", "DOUBLE"), ("dt", "STRING"),
                  ("hr", "INT")]


def _event_slots(batch: int, batches: int, partitions: int, files: int, seed: int) -> list[list[tuple]]:
    """Per task, the files it writes: (hour, rows per bucket, buckets) with distinct hours.

    A slot writes one file into each of its first ``buckets`` buckets. The batch's current
    hour walks from the first to the last partition over the batches; late hours get as many
    files, with fewer rows on average.
    """
    rnd = random.Random(f"{seed}:events:{batch}")
    current = min(partitions - 1, batch * partitions // batches)
    slots_needed = -(-files // EVENT_BUCKETS)
    window = min(partitions, LATE_HOURS, -(-slots_needed // EVENT_TASKS))
    last = max(current, window - 1)
    hours = list(range(last, last - window, -1))
    tasks: list[list[tuple]] = []
    left = files
    while left:
        slots = []
        start = rnd.randrange(window)
        for i in range(window):
            if not left:
                break
            hour = hours[(start + i) % window]
            rows = int(math.exp(rnd.uniform(math.log(12), math.log(400))))
            buckets = min(EVENT_BUCKETS, left)
            slots.append((hour, rows * 2 if hour == current else rows, buckets))
            left -= buckets
        tasks.append(slots)
    return tasks


def _user_pools(seed: int) -> list[list[int]]:
    """User ids by the ``large.events`` bucket they hash to (its bucket key is ``user_id``)."""
    types = [parse_type("BIGINT")]
    pools: list[list[int]] = [[] for _ in range(EVENT_BUCKETS)]
    for uid in range(EVENT_USERS):
        pools[bucket_of(key_hash((uid,), types), EVENT_BUCKETS)].append(uid)
    return pools


def _events_generator(tasks: list[list[tuple]], first_event: int, seed: int, pools: list[list[int]]):
    """A ``mapInArrow`` function: task ``t`` (one id of ``spark.range(len(tasks))``) emits its
    slots' rows, drawn from a generator seeded by ``(seed, first_event, t)``; each slot's first
    rows go one to each of its buckets, so every slot writes exactly ``buckets`` files."""

    def generate(batches):
        countries = np.array(COUNTRIES)
        devices = np.array(["ios", "android", "web"])
        by_bucket = [np.array(p, np.int64) for p in pools]
        for batch in batches:
            for t in batch.column(0).to_pylist():
                rng = np.random.default_rng([seed, first_event, t])
                start = first_event + sum(r * b for slots in tasks[:t] for _, r, b in slots)
                hours, users = [], []
                for hour, rows, buckets in tasks[t]:
                    n = rows * buckets
                    hours.append(np.full(n, hour, np.int64))
                    bucket = np.concatenate([np.arange(buckets), rng.integers(0, buckets, n - buckets)])
                    users.append(np.array([by_bucket[b][i % len(by_bucket[b])] for b, i in
                                           zip(bucket.tolist(), rng.integers(0, 1 << 30, n).tolist(), strict=True)],
                                          np.int64))
                hour = np.concatenate(hours)
                n = len(hour)
                ids = np.arange(start, start + n)
                millis = FIRST_HOUR + hour * HOUR_MILLIS + rng.integers(0, HOUR_MILLIS, n)
                amount = rng.integers(0, 10_000, n).astype(np.int32)
                day_of = {h: _dt.datetime.fromtimestamp((FIRST_HOUR + h * HOUR_MILLIS) / 1000, _dt.UTC)
                          .strftime("%Y-%m-%d") for h in set(hour.tolist())}
                suffix = rng.integers(0, 65536, n).tolist()
                yield pa.record_batch([
                    pa.array([f"ev-{i:010d}-{s:04x}" for i, s in zip(ids.tolist(), suffix, strict=True)]),
                    pa.array(np.concatenate(users)),
                    pa.array(countries[rng.integers(0, len(countries), n)]),
                    pa.array(devices[rng.integers(0, 3, n)]),
                    pa.array(millis * 1000, pa.timestamp("us")),
                    pa.array(amount, mask=rng.integers(0, 40, n) == 0),
                    pa.array(np.round(rng.random(n) * 1000, 2)),
                    pa.array([day_of[h] for h in hour.tolist()]),
                    pa.array((hour % 24).astype(np.int32)),
                ], names=[c for c, _ in EVENTS_COLUMNS])

    return generate


def build_events(spark, root: str, seed: int, files: int, partitions: int, batches: int,
                 step: Callable[[str], None]) -> TableWriter:
    from pyspark.sql import types as T  # pyspark loads only when a sample is built

    schema = make_schema(
        EVENTS_COLUMNS, partition_keys=["dt", "hr"],
        options={"bucket": str(EVENT_BUCKETS), "bucket-key": "user_id", "file.format": "parquet",
                 "manifest.format": "avro",
                 "file-index.bloom-filter.columns": "event_id",
                 "file-index.bloom-filter.event_id.fpp": "0.05",
                 "file-index.bloom-filter.event_id.items": "400",
                 "file-index.bitmap.columns": "country",
                 "file-index.range-bitmap.columns": "event_time",
                 "file-index.bsi.columns": "amount",
                 "file-index.in-manifest-threshold": "2kb"})
    spark_schema = T.StructType([
        T.StructField("event_id", T.StringType()), T.StructField("user_id", T.LongType()),
        T.StructField("country", T.StringType()), T.StructField("device", T.StringType()),
        T.StructField("event_time", T.TimestampNTZType()), T.StructField("amount", T.IntegerType()),
        T.StructField("price", T.DoubleType()), T.StructField("dt", T.StringType()),
        T.StructField("hr", T.IntegerType())])
    writer = TableWriter.create(root, "large.events", schema, seed=seed, overwrite=True)
    pools = _user_pools(seed)
    first_event = 0
    for b in range(batches):
        count = files // batches + (1 if b < files % batches else 0)
        tasks = _event_slots(b, batches, partitions, count, seed)
        df = spark.range(len(tasks), numPartitions=len(tasks)).mapInArrow(
            _events_generator(tasks, first_event, seed, pools), spark_schema)
        write_dataframe(writer, df)
        first_event += sum(r * n for slots in tasks for _, r, n in slots)
        step("large.events")
    return writer


# ---------------------------------------------------------------------------------- orders

def _orders_frame(spark, keys: list[int], seed: int, version: int):
    from pyspark.sql import functions as F  # pyspark loads only when a sample is built

    statuses = F.array(*[F.lit(s) for s in ("NEW", "PAID", "SHIPPED", "DONE", "RETURNED")])
    df = spark.createDataFrame([(REGIONS[k % len(REGIONS)], k) for k in keys], "region string, order_id long")
    h = [F.xxhash64(F.col("order_id"), F.lit(seed + 10 * version + i)) for i in range(3)]
    return df.select(
        "region", "order_id",
        F.format_string("cust-%06d", F.pmod(h[0], F.lit(200_000))).alias("customer"),
        F.element_at(statuses, (F.pmod(h[1], F.lit(5)) + 1).cast("int")).alias("status"),
        F.pmod(h[2], F.lit(100_000)).cast("int").alias("total"),
        F.timestamp_millis(F.lit(FIRST_HOUR + version * HOUR_MILLIS) + F.pmod(h[2], F.lit(HOUR_MILLIS)))
        .cast("timestamp_ntz").alias("updated_at"),
    )


def build_orders(spark, root: str, seed: int, batches: int, step: Callable[[str], None]) -> TableWriter:
    schema = make_schema(
        [("region", "STRING"), ("order_id", "BIGINT"), ("customer", "STRING"), ("status", "STRING"),
         ("total", "INT"), ("updated_at", "TIMESTAMP(3)")],
        partition_keys=["region"], primary_keys=["region", "order_id"],
        options={"bucket": str(ORDER_BUCKETS), "deletion-vectors.enabled": "true", "file.format": "parquet",
                 "manifest.format": "avro",
                 "file-index.bitmap.columns": "status",
                 "file-index.bloom-filter.columns": "customer",
                 "file-index.bloom-filter.customer.items": "200",
                 "file-index.bsi.columns": "total",
                 "file-index.in-manifest-threshold": "2kb"})
    writer = TableWriter.create(root, "large.orders", schema, seed=seed, overwrite=True)
    types = field_types(schema, ["order_id"])
    rnd = random.Random(f"{seed}:orders")
    live: dict[int, list[int]] = {b: [] for b in range(ORDER_BUCKETS)}
    next_key = 0
    per_batch = len(REGIONS) * ORDER_BUCKETS * 40
    for version in range(1, batches + 1):
        new = list(range(next_key, next_key + per_batch))
        next_key += per_batch
        updates: list[int] = []
        deletes: list[int] = []
        for bucket, share in enumerate(UPDATE_SHARE):
            pool = live[bucket]
            want = min(len(pool), int(share * per_batch * 0.4))
            chosen = rnd.sample(pool, want)
            cut = want // 4
            deletes += chosen[:cut]
            updates += chosen[cut:]
            gone = set(chosen[:cut])
            live[bucket] = [k for k in pool if k not in gone]
        for k in new:
            live[bucket_of(key_hash((k,), types), ORDER_BUCKETS)].append(k)
        write_dataframe(writer, _orders_frame(spark, new + sorted(updates), seed, version),
                        _orders_frame(spark, sorted(deletes), seed, version) if deletes else None,
                        num_tasks=2)
        step("large.orders")
    return writer


# ---------------------------------------------------------------------------------- users

def build_users(spark, root: str, seed: int, buckets_per_batch: int, step: Callable[[str], None]) -> TableWriter:
    """Three batches; each fills ``buckets_per_batch`` new buckets per region and updates a
    tenth of the older users (touching every older bucket)."""
    schema = make_schema(
        [("region", "STRING"), ("user_id", "BIGINT"), ("name", "STRING"), ("tier", "STRING"), ("version", "INT")],
        partition_keys=["region"], primary_keys=["region", "user_id"],
        options={"bucket": "-1", "dynamic-bucket.target-row-num": str(USERS_TARGET_ROWS),
                 "file.format": "parquet", "manifest.format": "avro", "file-index.bitmap.columns": "tier"})
    writer = TableWriter.create(root, "large.users", schema, seed=seed, overwrite=True)
    rnd = random.Random(f"{seed}:users")
    per_batch = len(REGIONS) * buckets_per_batch * USERS_TARGET_ROWS
    old: list[int] = []
    for version in range(1, 4):
        new = list(range(len(old), len(old) + per_batch - (USERS_TARGET_ROWS // 3 if version == 3 else 0)))
        updates = sorted(rnd.sample(old, len(old) // 10))
        pairs = [(REGIONS[k % len(REGIONS)], k) for k in new + updates]
        write_dataframe(writer, users_frame(spark, pairs, seed, version), num_tasks=2)
        old += new
        step("large.users")
    return writer


# ---------------------------------------------------------------------------------- all

def build_large(directory: str, seed: int, files: int = LARGE_FILES, master: str | None = None,
                spark: Any = None, progress: Progress | None = None) -> dict:
    """Build the large sample under ``directory`` with ``files`` live data files in total."""
    plan = shape(files)
    spark = spark or get_session(master, app_name="indexcore-sample-large")
    os.makedirs(directory, exist_ok=True)
    total = plan["order_batches"] + 3 + plan["event_batches"]
    done = 0

    def step(message: str) -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(done, total, message)

    if progress is not None:
        progress(0, total, "starting")
    writers = [build_orders(spark, directory, seed, plan["order_batches"], step),
               build_users(spark, directory, seed, plan["users_step"], step)]
    others = sum(len(fs) for w in writers for fs in w.live_files().values())
    writers.append(build_events(spark, directory, seed, files - others, plan["partitions"],
                                plan["event_batches"], step))
    tables = {}
    for writer in writers:
        live = writer.live_files()
        tables[writer.table_path.rsplit(os.sep, 1)[-1]] = {
            "snapshots": writer.snapshot_id,
            "data_files": sum(len(v) for v in live.values()),
            "partitions": len({p for p, _ in live}),
            "buckets": len(live),
            "records": writer.total_records,
        }
    return {"warehouse": directory, "seed": seed, "scale": "large",
            "data_files": sum(t["data_files"] for t in tables.values()), "tables": tables}
