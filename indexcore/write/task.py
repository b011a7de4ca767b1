"""Rows to data files inside one task: one Parquet file (with its file indexes) per
partition and bucket, in-process or in a Spark task.

A :class:`TaskSpec` fixes what a task needs from the driver (table path, schema, seed, commit
number, sequence starts, time); :func:`write_task_rows` writes the rows it holds and returns
small :class:`~indexcore.write.datafile.WrittenFile` records the driver commits.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from indexcore.errors import UnsupportedError
from indexcore.formats.binary_row import bucket_of, key_hash, long_key_hashes
from indexcore.warehouse.model import TableSchema
from indexcore.write.datafile import (
    COMPACT_SOURCE,
    DELETE,
    SEQUENCE_NUMBER,
    VALUE_KIND,
    WrittenFile,
    build_file_index_containers,
    data_file_schema,
    group_value_stats,
    internal_values,
    write_data_file,
)
from indexcore.write.layout import Namer, field_types

BUCKET = "_BUCKET"


@dataclass(frozen=True)
class TaskSpec:
    """Everything a task needs to turn rows into data files; small and picklable."""

    table_path: str
    schema: TableSchema
    seed: Any
    commit_index: int
    seq_starts: dict = field(default_factory=dict, hash=False, compare=False)
    creation_millis: int = 0
    compact_output: bool = False


def partition_of(schema: TableSchema, rows: pa.Table) -> list[tuple]:
    """The partition (tuple of internal values) of every row."""
    if not schema.partition_keys:
        return [()] * rows.num_rows
    cols = [internal_values(rows.column(k), schema.field(k).type) for k in schema.partition_keys]
    return list(zip(*cols, strict=True))


def key_hashes(schema: TableSchema, rows: pa.Table, names: Sequence[str]) -> list[int]:
    """``BinaryRow.hashCode()`` of ``names`` for every row."""
    types = field_types(schema, names)
    if len(names) == 1 and types[0].root == "BIGINT" and rows.column(names[0]).null_count == 0:
        return long_key_hashes(rows.column(names[0]).to_numpy()).tolist()  # 50x the per-row hash
    cols = [internal_values(rows.column(k), schema.field(k).type) for k in names]
    return [key_hash(values, types) for values in zip(*cols, strict=True)]


def key_hash_array(schema: TableSchema, rows: pa.Table, names: Sequence[str]) -> np.ndarray:
    """:func:`key_hashes` as an ``int64`` array (one BIGINT key without nulls: no Python int per row)."""
    types = field_types(schema, names)
    if len(names) == 1 and types[0].root == "BIGINT" and rows.column(names[0]).null_count == 0:
        return long_key_hashes(rows.column(names[0]).to_numpy()).astype(np.int64)
    return np.asarray(key_hashes(schema, rows, names), np.int64)


def partition_codes(schema: TableSchema, rows: pa.Table) -> tuple[list[tuple], np.ndarray]:
    """The distinct partitions of ``rows`` (tuples of internal values) and each row's index into
    them, by dictionary-encoding the partition columns: no tuple per row."""
    if not schema.partition_keys:
        return [()], np.zeros(rows.num_rows, np.int64)
    indices, dictionaries = [], []
    for k in schema.partition_keys:
        encoded = rows.column(k).combine_chunks().dictionary_encode(null_encoding="encode")
        indices.append(encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64))
        dictionaries.append(internal_values(encoded.dictionary, schema.field(k).type))
    distinct, codes = np.unique(np.stack(indices, axis=1), axis=0, return_inverse=True)
    partitions = [tuple(values[i] for values, i in zip(dictionaries, row, strict=True)) for row in distinct.tolist()]
    return partitions, codes.reshape(-1)


def fixed_buckets(schema: TableSchema, rows: pa.Table) -> list[int]:
    """Bucket of every row of a fixed-bucket table (bucket-unaware tables: all 0)."""
    n = schema.bucket
    if n <= 0:
        return [0] * rows.num_rows
    keys = schema.bucket_keys
    if not keys:
        raise UnsupportedError("a fixed-bucket append table needs the 'bucket-key' option")
    return [bucket_of(h, n) for h in key_hashes(schema, rows, keys)]


def dynamic_assignment(assign: Callable[[list], list[int]], partitions: Sequence[tuple],
                       hashes: Sequence[int]) -> dict[tuple[tuple, int], int]:
    """Dynamic buckets of the distinct ``(partition, key hash)`` pairs of a batch, assigned in
    sorted order (``assign`` is :meth:`TableWriter.assign_dynamic`), so the buckets do not
    depend on which task holds which rows."""
    pairs = sorted(set(zip(partitions, hashes, strict=True)), key=lambda ph: (tuple(str(v) for v in ph[0]), ph[1]))
    return dict(zip(pairs, assign(pairs), strict=True))


def write_task_rows(spec: TaskSpec, rows: pa.Table, task_id: Any) -> list[WrittenFile]:
    """Write the rows one task holds: one data file per partition and bucket.

    ``rows`` has the table columns, a ``_BUCKET`` column, and ``_VALUE_KIND`` for deletes of a
    primary-key table. With ``compact_output`` a group holding ``-D`` rows is also written
    again without them, as the compaction output the COMPACT snapshot adds.
    """
    if rows.num_rows == 0:
        return []
    parts = partition_of(spec.schema, rows)
    buckets = rows.column(BUCKET).to_pylist()
    groups: dict[tuple, list[int]] = defaultdict(list)
    for i, (p, b) in enumerate(zip(parts, buckets, strict=True)):
        groups[(p, b)].append(i)
    order = sorted(groups, key=lambda g: (tuple(map(sort_token, g[0])), g[1]))
    return write_groups(spec, rows, task_id, [(p, b, groups[(p, b)]) for p, b in order])


def write_groups(spec: TaskSpec, rows: pa.Table, task_id: Any,
                 groups: Sequence[tuple[tuple, int, Any]]) -> list[WrittenFile]:
    """Write ``rows`` already grouped: one data file per ``(partition, bucket, row indices)``,
    in the given order (file names count up in it; :func:`write_task_rows` sorts the groups by
    partition and bucket). A bulk writer that knows its groups skips the per-row grouping."""
    schema = spec.schema
    namer = Namer(spec.seed, spec.table_path.rstrip("/").rsplit("/", 1)[-1], spec.commit_index, task_id)
    plan = schema.core_options.file_indexes(schema.field_names)
    file_schema = data_file_schema(schema)
    stats = group_value_stats(rows, [indices for _, _, indices in groups], schema) if groups else []
    index_arrays = [np.asarray(indices, np.int64) for _, _, indices in groups]
    ends = np.cumsum([len(a) for a in index_arrays]).tolist()
    grouped = rows.take(pa.array(np.concatenate(index_arrays))) if groups else rows  # one take, sliced per file
    layout = schema.path_layout(spec.table_path)
    tables = []
    for end, part in zip(ends, index_arrays, strict=True):
        group = grouped.slice(end - len(part), len(part))
        if schema.primary_keys:  # as write_data_file sorts them (keys are unique in a file)
            group = group.sort_by([(k, "ascending") for k in schema.trimmed_primary_keys])
        tables.append(group)
    containers = build_file_index_containers(tables, schema, plan)  # every file's indexes in one pass
    out = []
    for (partition, bucket, _), value_stats, group, container in zip(groups, stats, tables, containers, strict=True):
        seq = spec.seq_starts.get((partition, bucket), 0)
        written = write_data_file(spec.table_path, schema, partition, bucket, group,
                                  namer.next("data", ".parquet"), seq_start=seq,
                                  creation_millis=spec.creation_millis, index_plan=plan,
                                  file_schema=file_schema, value_stats=value_stats,
                                  directory=layout.bucket_dir(layout.partition_dir(partition), bucket),
                                  index_container=container)
        out.append(written)
        if spec.compact_output and written.deletes:
            kinds = group.column(VALUE_KIND) if VALUE_KIND in group.column_names else None
            if kinds is not None:
                with_seq = group.append_column(
                    SEQUENCE_NUMBER, pa.array(range(seq, seq + group.num_rows), pa.int64()))
                kept = with_seq.filter(pc.not_equal(kinds, DELETE))
                if kept.num_rows:
                    compacted = write_data_file(spec.table_path, schema, partition, bucket, kept,
                                                namer.next("data", ".parquet"), level=1,
                                                file_source=COMPACT_SOURCE,
                                                creation_millis=spec.creation_millis, index_plan=plan,
                                                file_schema=file_schema)
                    out.append(replace(compacted, compact_of=written.file.file_name))
    return out


def sort_token(value: Any) -> tuple:
    """A sort key for a partition value of any type (None last), so groups sort the same every run."""
    return (value is None, str(type(value)), value if value is not None else 0)
