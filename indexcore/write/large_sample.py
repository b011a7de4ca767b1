"""What the production-size sample is, whichever engine writes it: its shape, schemas and rows.

``python -m indexcore sample build DIR --scale large [--files N]`` writes three tables whose
live data files add up to exactly ``N`` (default 50,000), the way a streaming ingest fills a
lake: many commits, each adding small files (tens to hundreds of rows).

* ``large.events``: append table partitioned by ``dt`` and ``hr`` (one partition per hour;
  about ``N / 350`` of them, 4 to 150) with 8 buckets by ``user_id``, committed in up to 250
  batches. Each batch writes the current hour and late rows of the hours before it, one file
  per bucket and hour in each of its tasks (a few dozen tasks per batch at most). Bloom filter
  on ``event_id``, bitmap on ``country``, range-bitmap on ``event_time`` and BSI on
  ``amount``; a file's index container stays in the manifest up to 2 KiB (files of a few dozen
  rows) and goes to ``.index`` above.
* ``large.orders``: primary key, partitioned by ``region``, 8 fixed buckets, deletion vectors;
  every batch inserts new orders and updates or deletes older ones, mostly in buckets 0 and 1,
  never in buckets 6 and 7, so deletion vectors pile up unevenly.
* ``large.users``: primary key with dynamic buckets (HASH index), partitioned by ``region``,
  three batches of new and updated users.

Every row derives from the seed, and so do file names and snapshot times. The Spark pipeline
(:mod:`indexcore.spark.sample_large`) and the bulk writer (:mod:`.bulk_sample`) take their rows
from here, so both write the same tables.
"""

from __future__ import annotations

import datetime as _dt
import math
import os
import random
from collections.abc import Callable, Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from indexcore.formats.binary_row import long_key_hashes
from indexcore.warehouse.model import TableSchema
from indexcore.write.layout import make_schema
from indexcore.write.table import TableWriter

LARGE_FILES = 50_000
REGIONS = ("ap", "eu", "sa", "us")
COUNTRIES = ("US", "US", "US", "DE", "DE", "FR", "BR", "IN", "JP", "GB", "NZ", "MX")
DEVICES = ("ios", "android", "web")
STATUSES = ("NEW", "PAID", "SHIPPED", "DONE", "RETURNED")
TIERS = ("free", "free", "pro", "team")
ORDER_BUCKETS = 8
# share of the batch's updates that falls in each orders bucket: DVs pile up unevenly
UPDATE_SHARE = (0.42, 0.26, 0.14, 0.09, 0.06, 0.03, 0.0, 0.0)
USERS_TARGET_ROWS = 200
HOUR_MILLIS = 3_600_000
FIRST_HOUR = 1_717_200_000_000  # 2024-06-01T00:00:00Z
LATE_HOURS = 12  # a batch writes the current hour and up to 11 hours before it
EVENT_BUCKETS = 8  # large.events: fixed buckets by user_id, one file per bucket per hour a task writes
EVENT_TASKS = 2  # tasks per events batch at least (one per core of a small machine)
EVENT_USERS = 20_000
MAX_EVENT_BATCHES = 250
FILES_PER_EVENT_BATCH = 180
Progress = Callable[[int, int, str], None]  # (steps done, steps in all, table)
TASKS_PER_PK_BATCH = 2  # orders and users: rows shuffled by partition and bucket into 2 tasks

EVENTS_COLUMNS = [("event_id", "STRING"), ("user_id", "BIGINT"), ("country", "STRING"), ("device", "STRING"),
                  ("event_time", "TIMESTAMP(3)"), ("amount", "INT"), ("price", "DOUBLE"), ("dt", "STRING"),
                  ("hr", "INT")]
ORDERS_COLUMNS = [("region", "STRING"), ("order_id", "BIGINT"), ("customer", "STRING"), ("status", "STRING"),
                  ("total", "INT"), ("updated_at", "TIMESTAMP(3)")]
USERS_COLUMNS = [("region", "STRING"), ("user_id", "BIGINT"), ("name", "STRING"), ("tier", "STRING"),
                 ("version", "INT")]


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


def steps(files: int) -> int:
    """Progress steps of a build: one per batch of every table."""
    plan = shape(files)
    return plan["order_batches"] + 3 + plan["event_batches"]


def step_counter(files: int, progress: Progress | None) -> Callable[[str], None]:
    """The ``step(message)`` both engines call after each batch: tells ``progress`` the steps done
    of :func:`steps` (and "starting" at once)."""
    total, done = steps(files), 0
    if progress is not None:
        progress(0, total, "starting")

    def step(message: str) -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(done, total, message)

    return step


def summary(directory: str, seed: int, writers: Sequence[TableWriter]) -> dict:
    """What a build reports: per table its snapshots, live data files, partitions, buckets, rows."""
    tables = {}
    for writer in writers:
        live = writer.live_file_counts()
        tables[writer.table_path.rsplit(os.sep, 1)[-1]] = {
            "snapshots": writer.snapshot_id,
            "data_files": sum(live.values()),
            "partitions": len({p for p, _ in live}),
            "buckets": len(live),
            "records": writer.total_records,
        }
    return {"warehouse": directory, "seed": seed, "scale": "large",
            "data_files": sum(t["data_files"] for t in tables.values()), "tables": tables}


# ---------------------------------------------------------------------------------- schemas

def events_schema() -> TableSchema:
    return make_schema(
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


def orders_schema() -> TableSchema:
    return make_schema(
        ORDERS_COLUMNS, partition_keys=["region"], primary_keys=["region", "order_id"],
        options={"bucket": str(ORDER_BUCKETS), "deletion-vectors.enabled": "true", "file.format": "parquet",
                 "manifest.format": "avro",
                 "file-index.bitmap.columns": "status",
                 "file-index.bloom-filter.columns": "customer",
                 "file-index.bloom-filter.customer.items": "200",
                 "file-index.bsi.columns": "total",
                 "file-index.in-manifest-threshold": "2kb"})


def users_schema() -> TableSchema:
    return make_schema(
        USERS_COLUMNS, partition_keys=["region"], primary_keys=["region", "user_id"],
        options={"bucket": "-1", "dynamic-bucket.target-row-num": str(USERS_TARGET_ROWS),
                 "file.format": "parquet", "manifest.format": "avro", "file-index.bitmap.columns": "tier"})


# ---------------------------------------------------------------------------------- events

def event_count(batch: int, batches: int, files: int) -> int:
    """Files the events batch ``batch`` writes (``files`` spread evenly over ``batches``)."""
    return files // batches + (1 if batch < files % batches else 0)


def event_slots(batch: int, batches: int, partitions: int, files: int, seed: int) -> list[list[tuple]]:
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


def task_rows(tasks: list[list[tuple]], t: int) -> int:
    """Rows task ``t`` of :func:`event_slots` writes."""
    return sum(r * b for _, r, b in tasks[t])


def user_pools() -> list[np.ndarray]:
    """User ids by the ``large.events`` bucket they hash to (its bucket key is ``user_id``)."""
    ids = np.arange(EVENT_USERS, dtype=np.int64)
    buckets = np.abs(long_key_hashes(ids).astype(np.int64)) % EVENT_BUCKETS
    return [ids[buckets == b] for b in range(EVENT_BUCKETS)]


def hour_day(hour: int) -> str:
    """The ``dt`` of an hour counted from :data:`FIRST_HOUR`."""
    return _dt.datetime.fromtimestamp((FIRST_HOUR + hour * HOUR_MILLIS) / 1000, _dt.UTC).strftime("%Y-%m-%d")


def event_ids(ids: np.ndarray, suffix: np.ndarray) -> pa.Array:
    """``f"ev-{id:010d}-{suffix:04x}"`` for every row, built as bytes (ids below 10**10)."""
    if len(ids) and (ids.min() < 0 or ids.max() >= 10**10 or suffix.min() < 0 or suffix.max() >= 1 << 16):
        raise ValueError("event ids take 10 decimal digits and suffixes 4 hex digits")
    out = np.empty((len(ids), 18), np.uint8)
    out[:, :3] = np.frombuffer(b"ev-", np.uint8)
    out[:, 13] = ord("-")
    rest = ids.astype(np.int64)
    for i in range(12, 2, -1):
        rest, digit = np.divmod(rest, 10)
        out[:, i] = digit + ord("0")
    hexdigits = np.frombuffer(b"0123456789abcdef", np.uint8)
    for i in range(4):
        out[:, 17 - i] = hexdigits[(suffix >> (4 * i)) & 15]
    return pa.array(out.reshape(-1).view("S18")).cast(pa.string())


def event_rows(tasks: list[list[tuple]], t: int, first_event: int, seed: int,
               pools: list[np.ndarray]) -> tuple[pa.RecordBatch, np.ndarray, np.ndarray]:
    """Task ``t``'s rows (drawn from a generator seeded by ``(seed, first_event, t)``), with each
    row's hour and bucket. Each slot's first rows go one to each of its buckets, so every slot
    writes exactly ``buckets`` files; a row's ``user_id`` hashes to its bucket by construction."""
    rng = np.random.default_rng([seed, first_event, t])
    start = first_event + sum(task_rows(tasks, i) for i in range(t))
    lengths = np.array([len(p) for p in pools], np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    flat = np.concatenate(pools)
    hours, buckets, users = [], [], []
    for hour, rows, nb in tasks[t]:
        n = rows * nb
        hours.append(np.full(n, hour, np.int64))
        bucket = np.concatenate([np.arange(nb), rng.integers(0, nb, n - nb)])
        pick = rng.integers(0, 1 << 30, n)
        buckets.append(bucket)
        users.append(flat[offsets[bucket] + pick % lengths[bucket]])
    hour = np.concatenate(hours)
    n = len(hour)
    ids = np.arange(start, start + n)
    millis = FIRST_HOUR + hour * HOUR_MILLIS + rng.integers(0, HOUR_MILLIS, n)
    amount = rng.integers(0, 10_000, n).astype(np.int32)
    day_of = {h: hour_day(h) for h, _, _ in tasks[t]}
    suffix = rng.integers(0, 65536, n)
    batch = pa.record_batch([
        event_ids(ids, suffix),
        pa.array(np.concatenate(users)),
        pa.array(COUNTRIES).take(rng.integers(0, len(COUNTRIES), n)),
        pa.array(DEVICES).take(rng.integers(0, 3, n)),
        pa.array(millis * 1000, pa.timestamp("us")),
        pa.array(amount, mask=rng.integers(0, 40, n) == 0),
        pa.array(np.round(rng.random(n) * 1000, 2)),
        pa.array([day_of[h] for h in sorted(day_of)]).take(np.searchsorted(sorted(day_of), hour)),
        pa.array((hour % 24).astype(np.int32)),
    ], names=[c for c, _ in EVENTS_COLUMNS])
    return batch, hour, np.concatenate(buckets)


# ---------------------------------------------------------------------------------- orders

def order_batches(seed: int, batches: int) -> Iterator[tuple[int, list[int], list[int]]]:
    """Per batch: ``(version, upserted keys, deleted keys)``. Each batch inserts new orders and
    updates or deletes live ones by :data:`UPDATE_SHARE` of their bucket."""
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
        hashes = np.abs(long_key_hashes(np.array(new, np.int64)).astype(np.int64)) % ORDER_BUCKETS
        for k, b in zip(new, hashes.tolist(), strict=True):
            live[b].append(k)
        yield version, new + sorted(updates), sorted(deletes)


def order_rows(keys: list[int], seed: int, version: int) -> pa.Table:
    """The ``large.orders`` rows of ``keys`` in batch ``version`` (region from the key)."""
    rng = np.random.default_rng([seed, 10, version])
    n = len(keys)
    k = np.array(keys, np.int64)
    return pa.table({
        "region": pa.array(np.array(REGIONS)[k % len(REGIONS)]),
        "order_id": pa.array(k),
        "customer": pa.array([f"cust-{c:06d}" for c in rng.integers(0, 200_000, n).tolist()]),
        "status": pa.array(np.array(STATUSES)[rng.integers(0, len(STATUSES), n)]),
        "total": pa.array(rng.integers(0, 100_000, n).astype(np.int32)),
        "updated_at": pa.array(FIRST_HOUR + version * HOUR_MILLIS + rng.integers(0, HOUR_MILLIS, n),
                               pa.timestamp("ms")),
    })


# ---------------------------------------------------------------------------------- users

def user_batches(seed: int, buckets_per_batch: int) -> Iterator[tuple[int, np.ndarray]]:
    """Three batches of ``(version, user ids)``; each fills ``buckets_per_batch`` new buckets per
    region and updates a tenth of the older users (touching every older bucket). The older
    users are ``0..n-1``, so they are counted, not listed (``random.sample`` picks the same
    positions from a range as from the list)."""
    rnd = random.Random(f"{seed}:users")
    per_batch = len(REGIONS) * buckets_per_batch * USERS_TARGET_ROWS
    old = 0
    for version in range(1, 4):
        new = np.arange(old, old + per_batch - (USERS_TARGET_ROWS // 3 if version == 3 else 0), dtype=np.int64)
        updates = np.sort(np.array(rnd.sample(range(old), old // 10), np.int64))
        yield version, np.concatenate([new, updates])
        old += len(new)


def user_rows(keys: Sequence[int] | np.ndarray, seed: int, version: int) -> pa.Table:
    """The ``large.users`` rows of ``keys`` in batch ``version`` (region from the key)."""
    rng = np.random.default_rng([seed, 20, version])
    k = np.asarray(keys, np.int64)
    if len(k) and k.min() < 0:
        raise ValueError("user ids are not negative")
    digits = pc.utf8_lpad(pa.array(k).cast(pa.string()), 6, "0")  # f"{u:06d}" without a str per row
    return pa.table({
        "region": pa.array(np.array(REGIONS)[k % len(REGIONS)]),
        "user_id": pa.array(k),
        "name": pc.binary_join_element_wise("user", digits, ""),
        "tier": pa.array(np.array(TIERS)[rng.integers(0, len(TIERS), len(k))]),
        "version": pa.array(np.full(len(k), version, np.int32)),
    })
