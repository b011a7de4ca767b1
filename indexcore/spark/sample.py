"""The sample warehouse: six small Paimon tables built with the Spark pipeline.

* ``demo.events``: append table partitioned by ``dt`` (4 days), bloom filter on ``event_id``,
  bitmap V2 on ``country``, bitmap V1 on ``device``, range-bitmap on ``event_time``, BSI on
  ``amount``; big files keep their indexes in ``.index`` files, small ones in the manifest.
* ``demo.orders``: primary key, 4 fixed buckets, deletion vectors; later batches update and
  delete mostly in bucket 0, a few in bucket 1, none in buckets 2 and 3.
* ``demo.users``: primary key with dynamic buckets (hash index), partitioned by ``region``;
  buckets fill up to ``dynamic-bucket.target-row-num`` so the last one is partly empty.
* ``demo.faulty``: append table whose first data file's ``.index`` is corrupt and whose second
  data file's ``.index`` is missing; the rest are sound.
* ``demo.daily_events``: append table partitioned by a ``DATE`` column ``day`` (folders
  ``day=19875`` etc., Paimon's default ``partition.legacy-name``), bloom filter on ``event_id``
  and bitmap on ``country``.
* ``demo.releases``: append table with tags ``v1`` and ``v2`` and a branch ``dev`` made from
  ``v2`` that adds a column (its own ``schema-1``) and a batch main does not have.

Everything derives from the seed: rows, file names and times, so rebuilding gives the same bytes.
"""

from __future__ import annotations

import datetime as dt
import os
from typing import Any

from indexcore.formats.binary_row import bucket_of, key_hash
from indexcore.spark.pipeline import write_dataframe
from indexcore.spark.session import get_session
from indexcore.write import TableWriter, make_schema
from indexcore.write.layout import field_types

DEFAULT_SEED = 20240601
DAYS = ("2024-06-01", "2024-06-02", "2024-06-03", "2024-06-04")
COUNTRIES = ("US", "US", "US", "US", "DE", "DE", "FR", "BR", "IN", "JP")


def _events_frame(spark, start: int, count: int, day: str, seed: int, tasks: int):
    from pyspark.sql import functions as F  # pyspark loads only when a sample is built

    ids = spark.range(start, start + count, numPartitions=tasks)
    h = [F.xxhash64(F.col("id"), F.lit(seed + i)) for i in range(6)]
    day_ms = int(dt.datetime.fromisoformat(day + "T00:00:00+00:00").timestamp() * 1000)
    countries = F.array(*[F.lit(c) for c in COUNTRIES])
    return ids.select(
        F.format_string("ev-%010d-%04x", F.col("id"), F.pmod(h[0], F.lit(65536))).alias("event_id"),
        F.pmod(h[1], F.lit(5000)).alias("user_id"),
        F.element_at(countries, (F.pmod(h[2], F.lit(len(COUNTRIES))) + 1).cast("int")).alias("country"),
        F.element_at(F.array(F.lit("ios"), F.lit("android"), F.lit("web")),
                     (F.pmod(h[3], F.lit(3)) + 1).cast("int")).alias("device"),
        F.timestamp_millis(F.lit(day_ms) + F.pmod(h[4], F.lit(86_400_000))).cast("timestamp_ntz").alias("event_time"),
        F.when(F.pmod(h[5], F.lit(50)) == 0, F.lit(None)).otherwise(F.pmod(h[5], F.lit(10_000))).cast("int")
        .alias("amount"),
        (F.pmod(h[0], F.lit(100_000)) / 100.0).alias("price"),
        F.lit(day).alias("dt"),
    )


def build_events(spark, root: str, seed: int) -> TableWriter:
    schema = make_schema(
        [("event_id", "STRING"), ("user_id", "BIGINT"), ("country", "STRING"), ("device", "STRING"),
         ("event_time", "TIMESTAMP(3)"), ("amount", "INT"), ("price", "DOUBLE"), ("dt", "STRING")],
        partition_keys=["dt"],
        options={"bucket": "-1", "file.format": "parquet", "manifest.format": "avro",
                 "file-index.bloom-filter.columns": "event_id",
                 "file-index.bloom-filter.event_id.fpp": "0.05",
                 "file-index.bloom-filter.event_id.items": "2000",
                 "file-index.bitmap.columns": "country,device",
                 "file-index.bitmap.device.version": "1",
                 "file-index.range-bitmap.columns": "event_time",
                 "file-index.bsi.columns": "amount",
                 "file-index.in-manifest-threshold": "8kb"})
    writer = TableWriter.create(root, "demo.events", schema, seed=seed, overwrite=True)
    batches = [((DAYS[0], 6000, 3), (DAYS[1], 3000, 2)), ((DAYS[1], 2000, 2), (DAYS[2], 4000, 2)),
               ((DAYS[3], 120, 1), (DAYS[2], 90, 1))]
    start = 0
    for batch in batches:
        frames = []
        for day, count, tasks in batch:
            frames.append(_events_frame(spark, start, count, day, seed, tasks))
            start += count
        df = frames[0]
        for f in frames[1:]:
            df = df.unionByName(f)
        write_dataframe(writer, df)
    return writer


def _orders_frame(spark, keys: list[int], seed: int, version: int):
    from pyspark.sql import functions as F  # pyspark loads only when a sample is built

    statuses = F.array(*[F.lit(s) for s in ("NEW", "PAID", "SHIPPED", "DONE", "RETURNED")])
    df = spark.createDataFrame([(k,) for k in keys], "order_id long").repartition(2)
    h = [F.xxhash64(F.col("order_id"), F.lit(seed + 10 * version + i)) for i in range(3)]
    return df.select(
        "order_id",
        F.format_string("cust-%05d", F.pmod(h[0], F.lit(20_000))).alias("customer"),
        F.element_at(statuses, (F.pmod(h[1], F.lit(5)) + 1).cast("int")).alias("status"),
        F.pmod(h[2], F.lit(100_000)).cast("int").alias("total"),
        F.timestamp_millis(F.lit(1_717_200_000_000 + version * 3_600_000) + F.col("order_id") * 1000)
        .cast("timestamp_ntz").alias("updated_at"),
    )


def build_orders(spark, root: str, seed: int) -> TableWriter:
    schema = make_schema(
        [("order_id", "BIGINT"), ("customer", "STRING"), ("status", "STRING"), ("total", "INT"),
         ("updated_at", "TIMESTAMP(3)")],
        primary_keys=["order_id"],
        options={"bucket": "4", "deletion-vectors.enabled": "true", "file.format": "parquet",
                 "manifest.format": "avro",
                 "file-index.bitmap.columns": "status",
                 "file-index.bloom-filter.columns": "customer",
                 "file-index.bloom-filter.customer.items": "2000",
                 "file-index.bsi.columns": "total"})
    writer = TableWriter.create(root, "demo.orders", schema, seed=seed, overwrite=True)
    keys = list(range(4000))
    types = field_types(schema, ["order_id"])
    by_bucket: dict[int, list[int]] = {b: [] for b in range(4)}
    for k in keys:
        by_bucket[bucket_of(key_hash((k,), types), 4)].append(k)
    write_dataframe(writer, _orders_frame(spark, keys, seed, 1))
    updates = by_bucket[0][:200] + by_bucket[1][:30]
    deletes = by_bucket[0][200:550]
    write_dataframe(writer, _orders_frame(spark, updates, seed, 2), _orders_frame(spark, deletes, seed, 2))
    write_dataframe(writer, _orders_frame(spark, [], seed, 3),
                    _orders_frame(spark, by_bucket[1][100:140] + by_bucket[0][600:700], seed, 3))
    return writer


def users_frame(spark, pairs: list[tuple[str, int]], seed: int, version: int):
    from pyspark.sql import functions as F  # pyspark loads only when a sample is built

    df = spark.createDataFrame(pairs, "region string, user_id long").repartition(2)
    h = F.xxhash64(F.col("user_id"), F.lit(seed + version))
    return df.select(
        "region", "user_id",
        F.format_string("user%06d", F.col("user_id")).alias("name"),
        F.element_at(F.array(F.lit("free"), F.lit("free"), F.lit("pro"), F.lit("team")),
                     (F.pmod(h, F.lit(4)) + 1).cast("int")).alias("tier"),
        F.lit(version).alias("version"),
    )


def build_users(spark, root: str, seed: int) -> TableWriter:
    schema = make_schema(
        [("region", "STRING"), ("user_id", "BIGINT"), ("name", "STRING"), ("tier", "STRING"),
         ("version", "INT")],
        partition_keys=["region"], primary_keys=["region", "user_id"],
        options={"bucket": "-1", "dynamic-bucket.target-row-num": "500", "file.format": "parquet",
                 "manifest.format": "avro", "file-index.bitmap.columns": "tier"})
    writer = TableWriter.create(root, "demo.users", schema, seed=seed, overwrite=True)
    first = [("eu", k) for k in range(1300)] + [("us", 10_000 + k) for k in range(700)]
    write_dataframe(writer, users_frame(spark, first, seed, 1))
    second = [("eu", k) for k in range(1300, 1550)] + [("eu", k) for k in range(0, 400, 2)]
    write_dataframe(writer, users_frame(spark, second, seed, 2))
    return writer


def build_faulty(spark, root: str, seed: int) -> TableWriter:
    schema = make_schema(
        [("event_id", "STRING"), ("user_id", "BIGINT"), ("country", "STRING"), ("device", "STRING"),
         ("event_time", "TIMESTAMP(3)"), ("amount", "INT"), ("price", "DOUBLE"), ("dt", "STRING")],
        options={"bucket": "-1", "file.format": "parquet", "manifest.format": "avro",
                 "file-index.bitmap.columns": "country",
                 "file-index.bloom-filter.columns": "event_id",
                 "file-index.bloom-filter.event_id.items": "500",
                 "file-index.in-manifest-threshold": "1B"})
    writer = TableWriter.create(root, "demo.faulty", schema, seed=seed, overwrite=True)
    write_dataframe(writer, _events_frame(spark, 0, 2000, DAYS[0], seed + 7, 4))
    names = sorted(f.file_name for fs in writer.live_files().values() for f in fs)
    bucket_dir = os.path.join(writer.table_path, "bucket-0")
    corrupt = os.path.join(bucket_dir, names[0] + ".index")
    with open(corrupt, "r+b") as fh:
        data = bytearray(fh.read())
        data[0:8] = b"\xde\xad\xbe\xef\xde\xad\xbe\xef"
        fh.seek(0)
        fh.write(bytes(data[: len(data) // 2]))
        fh.truncate()
    os.remove(os.path.join(bucket_dir, names[1] + ".index"))
    return writer


DAILY_DAYS = ("2024-06-01", "2024-06-02", "2024-06-03")


def build_daily_events(spark, root: str, seed: int) -> TableWriter:
    from pyspark.sql import functions as F  # pyspark loads only when a sample is built

    schema = make_schema(
        [("event_id", "STRING"), ("country", "STRING"), ("amount", "INT"), ("day", "DATE")],
        partition_keys=["day"],
        options={"bucket": "-1", "file.format": "parquet", "manifest.format": "avro",
                 "file-index.bloom-filter.columns": "event_id",
                 "file-index.bloom-filter.event_id.items": "500",
                 "file-index.bitmap.columns": "country"})
    writer = TableWriter.create(root, "demo.daily_events", schema, seed=seed, overwrite=True)
    start = 0
    for day, count in zip(DAILY_DAYS, (400, 300, 200), strict=True):
        events = _events_frame(spark, start, count, day, seed + 3, 1)
        write_dataframe(writer, events.select("event_id", "country", "amount", F.to_date(F.lit(day)).alias("day")))
        start += count
    return writer


def build_releases(spark, root: str, seed: int) -> TableWriter:
    from pyspark.sql import functions as F  # pyspark loads only when a sample is built

    columns = [("id", "BIGINT"), ("name", "STRING"), ("stage", "STRING")]
    schema = make_schema(columns, options={"bucket": "-1", "file.format": "parquet",
                                           "manifest.format": "avro"})
    writer = TableWriter.create(root, "demo.releases", schema, seed=seed, overwrite=True)

    def batch(start: int, count: int, stage: str, extra: bool = False):
        df = spark.range(start, start + count, numPartitions=1).select(
            F.col("id"), F.format_string("release-%04d", F.col("id")).alias("name"), F.lit(stage).alias("stage"))
        return df.withColumn("note", F.format_string("dev build %d", F.col("id"))) if extra else df

    write_dataframe(writer, batch(0, 100, "alpha"))
    writer.create_tag("v1")
    write_dataframe(writer, batch(100, 50, "beta"))
    writer.create_tag("v2")
    dev = writer.create_branch("dev", tag="v2")
    dev.alter_schema(make_schema(columns + [("note", "STRING")], options=dict(schema.options)))
    write_dataframe(dev, batch(1000, 40, "dev", extra=True))
    write_dataframe(writer, batch(150, 30, "ga"))
    return writer


def build_sample(directory: str, seed: int = DEFAULT_SEED, master: str | None = None,
                 spark: Any = None) -> dict:
    """Build (or rebuild) the sample warehouse under ``directory``; returns a summary."""
    spark = spark or get_session(master, app_name="indexcore-sample")
    os.makedirs(directory, exist_ok=True)
    tables = {}
    for build in (build_events, build_orders, build_users, build_faulty, build_daily_events, build_releases):
        writer = build(spark, directory, seed)
        live = writer.live_files()
        tables[writer.table_path.rsplit(os.sep, 1)[-1]] = {
            "snapshots": writer.snapshot_id,
            "data_files": sum(len(v) for v in live.values()),
            "buckets": len(live),
            "records": writer.total_records,
        }
    return {"warehouse": directory, "seed": seed, "tables": tables}
