"""Write a Spark DataFrame into a Paimon table: data files and indexes inside Spark tasks.

Each task gets its rows as Arrow batches (``mapInArrow``), writes Parquet data files and their
file indexes with :func:`indexcore.write.write_task_rows`, and returns only small pickled
:class:`~indexcore.write.WrittenFile` records; the driver commits them with its
:class:`~indexcore.write.TableWriter`. Tasks write to the table path directly, so the path
must be visible to every executor (always true for ``local[*]``).

Primary-key rows are shuffled so that each partition/bucket lands in one task; dynamic buckets
are assigned on the driver from the key hashes the tasks compute. With a fixed seed the rows,
file names and index bytes are the same on every run.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator

import pyarrow as pa

from indexcore.write import TableWriter
from indexcore.write.datafile import DELETE, INSERT, VALUE_KIND
from indexcore.write.task import (
    BUCKET,
    dynamic_assignment,
    fixed_buckets,
    key_hashes,
    partition_of,
    write_task_rows,
)

_HASH = "_KEY_HASH"
_META = "meta"


def _spark_type(dtype):
    from pyspark.sql import types as T  # pyspark loads only when a DataFrame is written

    r = dtype.root
    simple = {"BOOLEAN": T.BooleanType(), "TINYINT": T.ByteType(), "SMALLINT": T.ShortType(),
              "INT": T.IntegerType(), "BIGINT": T.LongType(), "FLOAT": T.FloatType(),
              "DOUBLE": T.DoubleType(), "CHAR": T.StringType(), "VARCHAR": T.StringType(),
              "BINARY": T.BinaryType(), "VARBINARY": T.BinaryType(), "DATE": T.DateType(),
              "TIMESTAMP": T.TimestampNTZType(), "TIMESTAMP_LTZ": T.TimestampType()}
    if r == "DECIMAL":
        return T.DecimalType(dtype.precision, dtype.scale)
    return simple[r]


def _table(batches: Iterator[pa.RecordBatch]) -> pa.Table:
    batches = list(batches)
    if not batches:
        return pa.table({})
    return pa.Table.from_batches(batches)


def _with_kinds(writer: TableWriter, df, deletes):
    """``df`` with the table's columns in order (and ``_VALUE_KIND`` for a PK table)."""
    from pyspark.sql import functions as F  # pyspark loads only when a DataFrame is written

    cols = [F.col(f.name).cast(_spark_type(f.type)).alias(f.name) for f in writer.schema.fields]
    out = df.select(*cols)
    if not writer.is_pk:
        return out
    out = out.withColumn(VALUE_KIND, F.lit(INSERT).cast("byte"))
    if deletes is not None:
        dcols = [(F.col(f.name) if f.name in deletes.columns else F.lit(None)).cast(_spark_type(f.type)).alias(f.name)
                 for f in writer.schema.fields]
        out = out.unionByName(deletes.select(*dcols).withColumn(VALUE_KIND, F.lit(DELETE).cast("byte")))
    return out


def write_dataframe(writer: TableWriter, df, deletes=None, num_tasks: int | None = None) -> list[int]:
    """Write one batch (``df`` upserts; ``deletes`` rows whose keys a PK table deletes) and
    commit it. Returns the snapshot ids created."""
    from pyspark.sql import types as T  # pyspark loads only when a DataFrame is written

    schema = writer.schema
    data = _with_kinds(writer, df, deletes)
    out_schema = T.StructType(data.schema.fields + [T.StructField(BUCKET, T.IntegerType(), False)])

    if writer.dynamic_bucket:
        pk = list(schema.trimmed_primary_keys)
        part_names = list(schema.partition_keys)

        def hashes(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            for batch in batches:
                t = pa.Table.from_batches([batch])
                cols = {k: t.column(k) for k in part_names}
                cols[_HASH] = pa.array(key_hashes(schema, t, pk), pa.int32())
                yield from pa.table(cols).to_batches()

        hash_schema = T.StructType([data.schema[k] for k in part_names]
                                   + [T.StructField(_HASH, T.IntegerType(), False)])
        collected = data.mapInArrow(hashes, hash_schema).distinct().toArrow()
        assignment = dynamic_assignment(writer.assign_dynamic, partition_of(schema, collected),
                                        collected.column(_HASH).to_pylist())

        def add_bucket(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            for batch in batches:
                t = pa.Table.from_batches([batch])
                keys = zip(partition_of(schema, t), key_hashes(schema, t, pk), strict=True)
                buckets = [assignment[k] for k in keys]
                yield from t.append_column(BUCKET, pa.array(buckets, pa.int32())).to_batches()
    else:
        def add_bucket(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            for batch in batches:
                t = pa.Table.from_batches([batch])
                yield from t.append_column(BUCKET, pa.array(fixed_buckets(schema, t), pa.int32())).to_batches()

    # rows that stay in their task (no shuffle) get their bucket in the writing task itself:
    # one Python stage less, and Spark's per-stage Arrow round trip is most of a small file's cost
    in_task = not writer.is_pk and not num_tasks
    bucketed = data if in_task else data.mapInArrow(add_bucket, out_schema)
    if writer.is_pk:
        n = num_tasks or int(bucketed.sparkSession.conf.get("spark.sql.shuffle.partitions"))
        bucketed = bucketed.repartition(n, *schema.partition_keys, BUCKET)
    elif num_tasks:
        bucketed = bucketed.repartition(num_tasks, *schema.partition_keys)

    spec = writer.next_task_spec()

    def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext  # resolved in the worker that runs this closure

        rows = _table(batches)
        if in_task and rows.num_columns:
            rows = rows.append_column(BUCKET, pa.array(fixed_buckets(schema, rows), pa.int32()))
        task_id = TaskContext.get().partitionId()
        written = write_task_rows(spec, rows, task_id) if rows.num_columns else []
        yield pa.record_batch([pa.array([pickle.dumps(written)], pa.binary())], names=[_META])

    metas = bucketed.mapInArrow(write, T.StructType([T.StructField(_META, T.BinaryType())])).collect()
    written = [w for row in metas for w in pickle.loads(row[_META])]
    return writer.commit(written)

