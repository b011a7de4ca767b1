"""Writing 1M rows with four file-index kinds through the Spark pipeline, against Spark
writing the same DataFrame to plain Parquet. Prints the ratio (pipeline / plain Parquet).

Then, in-process on the same rows: building the four indexes with the bulk writer API
(``write_arrow`` / ``write_batch``, what the table writer uses) against pyarrow writing those
rows to Parquet; ``--row-by-row`` also times one ``write()`` call per row (the old path).

    python bench/bench_write.py [--rows 1000000] [--master local[*]] [--row-by-row] [--quick]

``--quick``: 20,000 rows on local[1] (it runs, it measures nothing).
"""

from __future__ import annotations

import argparse
import io
import shutil
import tempfile
import time

import pyarrow.parquet as pq

from indexcore.formats.registry import new_writer
from indexcore.spark import get_session
from indexcore.spark.pipeline import write_dataframe
from indexcore.write import TableWriter, build_file_index_container, make_schema
from indexcore.write.datafile import internal_values


def frame(spark, rows: int, seed: int = 7):
    from pyspark.sql import functions as F

    h = [F.xxhash64(F.col("id"), F.lit(seed + i)) for i in range(4)]
    return spark.range(0, rows).select(
        F.format_string("ev-%010d", F.col("id")).alias("event_id"),
        F.element_at(F.array(*[F.lit(c) for c in ("US", "DE", "FR", "BR", "IN", "JP")]),
                     (F.pmod(h[0], F.lit(6)) + 1).cast("int")).alias("country"),
        F.pmod(h[1], F.lit(100_000)).cast("int").alias("amount"),
        F.pmod(h[2], F.lit(1_000_000)).alias("score"),
        F.lit("2024-06-01").alias("dt"))


def index_breakdown(table, schema, row_by_row: bool) -> None:
    """In-process: the four indexes over ``table`` against pyarrow's Parquet write of it."""
    t0 = time.perf_counter()
    pq.write_table(table, io.BytesIO(), compression="zstd")
    parquet = time.perf_counter() - t0
    t0 = time.perf_counter()
    bulk = build_file_index_container(table, schema)
    built = time.perf_counter() - t0
    print(f"in-process, {table.num_rows} rows: pyarrow parquet {parquet:.2f}s (anchor), "
          f"bulk index build {built:.2f}s, ratio {built / parquet:.2f}")
    if row_by_row:
        t0 = time.perf_counter()
        for ci in schema.core_options.file_indexes(schema.field_names):
            dtype = schema.field(ci.column).type
            writer = new_writer(ci.index_type, dtype, dict(ci.options))
            for value in internal_values(table.column(ci.column), dtype):
                writer.write(value)
            writer.serialized_bytes()
        old = time.perf_counter() - t0
        print(f"row-by-row write() (same serialization): {old:.2f}s, ratio {old / parquet:.2f}; bulk is {old / built:.1f}x faster "
              f"(container {len(bulk)} bytes)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--master", default=None)
    parser.add_argument("--row-by-row", action="store_true", help="also time one write() per row")
    parser.add_argument("--quick", action="store_true", help="20,000 rows on local[1]: runs, measures nothing")
    args = parser.parse_args()
    if args.quick:
        args.rows, args.master = 20_000, args.master or "local[1]"
    spark = get_session(args.master, app_name="indexcore-bench")
    df = frame(spark, args.rows).cache()
    df.count()
    work = tempfile.mkdtemp(prefix="bench_write_")
    try:
        t0 = time.perf_counter()
        df.write.mode("overwrite").parquet(f"{work}/plain")
        plain = time.perf_counter() - t0

        schema = make_schema(
            [("event_id", "STRING"), ("country", "STRING"), ("amount", "INT"), ("score", "BIGINT"), ("dt", "STRING")],
            partition_keys=["dt"],
            options={"bucket": "-1", "file-index.bloom-filter.columns": "event_id",
                     "file-index.bloom-filter.event_id.items": "200000",
                     "file-index.bitmap.columns": "country", "file-index.bsi.columns": "amount",
                     "file-index.range-bitmap.columns": "score"})
        writer = TableWriter.create(f"{work}/wh", "bench.events", schema, seed=1)
        t0 = time.perf_counter()
        write_dataframe(writer, df)
        ours = time.perf_counter() - t0
        files = sum(len(v) for v in writer.live_files().values())
        print(f"rows={args.rows} master={spark.sparkContext.master} data_files={files}")
        print(f"spark plain parquet: {plain:.2f}s  (anchor)")
        print(f"indexcore pipeline (parquet + bloom, bitmap, bsi, range-bitmap, commit): {ours:.2f}s")
        print(f"ratio pipeline/plain = {ours / plain:.2f}")
        table = df.select(*schema.field_names).toArrow()
        index_breakdown(table, schema, args.row_by_row)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        spark.stop()


if __name__ == "__main__":
    main()
