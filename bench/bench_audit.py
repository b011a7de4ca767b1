"""Spark audit of a 1M-row, 200-file table against a plain Spark scan of the same files.

Writes an append table (bitmap on ``country``, bloom filter on ``event_id``, BSI on ``amount``)
with indexcore's table writer into a temporary warehouse: one commit, ``--files`` data files of
``--rows / --files`` rows each. Then, per master (local[1], local[2], local[4]), times in the
same session:

* the anchor: Spark reading the same Parquet data files and counting the non-null values of
  the three indexed columns (so the columns are decoded, as the audit does);
* :func:`indexcore.spark.jobs.audit.audit` of the table.

Prints the audit/anchor ratio per master (goal <= 1.5) and the audit's scaling against
local[1]. As context for that scaling, ``python x`` is what this machine gives Python tasks in
parallel: the time of one CPU-bound Python task over the time of as many such tasks as the
master has cores, run at once (N on an idle N-core machine, about 1 where cores are shared).
Asserts nothing.

Run: ``python bench/bench_audit.py [--rows 1000000] [--files 200] [--quick]`` (``--quick``: a small
table on local[1], to prove the bench runs; not a measurement)
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time

import numpy as np
import pyarrow as pa

from indexcore import open_warehouse
from indexcore.spark.jobs.audit import audit
from indexcore.spark.jobs.run import run_tasks
from indexcore.spark.session import get_session
from indexcore.write import TableWriter, make_schema
from indexcore.write.task import write_task_rows

COUNTRIES = np.array(["US", "DE", "FR", "BR", "IN", "JP", "CN", "GB"])
MASTERS = ("local[1]", "local[2]", "local[4]")


def build(root: str, rows: int, files: int, seed: int = 7) -> str:
    schema = make_schema(
        [("event_id", "STRING"), ("country", "STRING"), ("amount", "INT"), ("price", "DOUBLE")],
        options={"bucket": "-1", "file.format": "parquet", "file-index.bitmap.columns": "country",
                 "file-index.bloom-filter.columns": "event_id", "file-index.bloom-filter.event_id.items": "10000",
                 "file-index.bsi.columns": "amount", "file-index.in-manifest-threshold": "1B"})
    writer = TableWriter.create(root, "bench.events", schema)
    rng = np.random.default_rng(seed)
    per = rows // files
    spec = writer.next_task_spec()
    written = []
    for i in range(files):
        start = i * per
        chunk = pa.table({
            "event_id": [f"e{start + j:09d}" for j in range(per)],
            "country": COUNTRIES[rng.integers(0, len(COUNTRIES), per)],
            "amount": rng.integers(-5000, 100000, per).astype(np.int32),
            "price": rng.random(per) * 100,
        })
        written.extend(write_task_rows(spec, writer.prepare_batch(chunk), i))
    writer.commit(written)
    return "bench.events"


def _burn(spec: dict) -> dict:
    x = 0
    for i in range(spec["n"]):
        x += i * i
    return {"x": x}


def python_parallelism(spark, cores: int, n: int = 3_000_000) -> float:
    """Work per second of ``cores`` CPU-bound Python tasks at once over that of one task."""
    run_tasks(spark, _burn, [{"n": 10}] * cores, "warm-up")
    one, _ = timed(lambda: run_tasks(spark, _burn, [{"n": n}], "one task"))
    many, _ = timed(lambda: run_tasks(spark, _burn, [{"n": n}] * cores, "parallel tasks"))
    return cores * one / many


def timed(fn) -> tuple[float, object]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--masters", nargs="*", default=list(MASTERS))
    parser.add_argument("--quick", action="store_true", help="20,000 rows in 8 files on local[1]: runs, measures nothing")
    args = parser.parse_args()
    if args.quick:
        args.rows, args.files, args.masters = 20_000, 8, ["local[1]"]
    root = tempfile.mkdtemp(prefix="indexcore-bench-audit-")
    try:
        t, name = timed(lambda: build(root, args.rows, args.files))
        plan = open_warehouse(root).table(name).plan()
        paths = [lf.path for lf in plan.files]
        print(f"table: {sum(lf.file.row_count for lf in plan.files)} rows in {len(paths)} files "
              f"(written in {t:.1f} s)")
        base = None
        for master in args.masters:
            spark = get_session(master)
            from pyspark.sql import functions as F

            def anchor(spark=spark):
                df = spark.read.parquet(*paths)
                return df.agg(F.count("event_id"), F.count("country"), F.count("amount")).collect()

            anchor()  # warm the JVM and the Python workers once per session
            audit(root, name, spark=spark)
            t_anchor, _ = timed(anchor)
            t_audit, report = timed(lambda spark=spark: audit(root, name, spark=spark))
            errors = sum(1 for f in report["findings"] if f["severity"] == "ERROR")
            base = base or t_audit
            cores = spark.sparkContext.defaultParallelism
            print(f"{master:9s} anchor {t_anchor:6.2f} s  audit {t_audit:6.2f} s  "
                  f"ratio {t_audit / t_anchor:6.2f} (goal <= 1.5)  speed-up vs first {base / t_audit:4.2f}x  "
                  f"python x{python_parallelism(spark, cores, 30_000 if args.quick else 3_000_000):4.2f}  "
                  f"checks passed {report['checks_passed']}  errors {errors}")
            spark.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
