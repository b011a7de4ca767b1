"""Reading data files the way Paimon's batch read does: the rows a user sees.

* A data file is read through the table schema by **field id**: renamed columns keep their
  values, added columns read as null, altered types are cast like Paimon (:mod:`.values`).
  Parquet and ORC carry the ids (``PARQUET:field_id`` / ``paimon.id``); files without them
  (Paimon 0.9) are matched by name through the schema they were written with.
* Deletion vectors drop row positions (one data file: :mod:`.data_file`).
* Primary-key tables merge records by key and sequence number per merge engine
  (:mod:`.merge`); tables with deletion vectors, and first-row tables, skip level-0 files.
* Data-evolution tables stitch column files sharing a ``first_row_id``.
* ``scan.fallback-branch`` reads partitions missing from the main branch from the fallback.
"""

from __future__ import annotations

import posixpath
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from indexcore.errors import IndexCoreError
from indexcore.expr.rows import filter_table
from indexcore.expr.tree import Predicate
from indexcore.types.values import arrow_type, cast_column, from_internal, to_internal
from indexcore.warehouse.data_file import read_data_file
from indexcore.warehouse.merge import FILE_ORDER, LEVEL, POSITION, merge_records
from indexcore.warehouse.model import LiveFile, Problem, TableSchema

ROW_ID = "_ROW_ID"


def _empty(schema: TableSchema, columns: list[str] | None = None) -> pa.Table:
    names = columns if columns is not None else list(schema.field_names)
    return pa.schema([pa.field(n, arrow_type(schema.field(n).type)) for n in names]).empty_table()


def _concat(tables: list[pa.Table], schema: TableSchema, columns: list[str] | None) -> pa.Table:
    tables = [t for t in tables if t.num_rows]
    if not tables:
        return _empty(schema, columns)
    return pa.concat_tables(tables)


def _problem(problems: list, path: str, structure: str, exc: Exception) -> None:
    reason = exc.message if isinstance(exc, IndexCoreError) else str(exc)
    problems.append(Problem(path, structure, reason))


class _Reader:
    """Reads the live files of one plan through one table schema, collecting problems."""

    def __init__(self, table, schema: TableSchema, problems: list, progress=None,
                 columns: list[str] | None = None, memo: dict | None = None):
        self.table = table
        self.memo = memo  # kept over the files read (read_raw); None: each file on its own
        self.schema = schema
        self.problems = problems
        self.progress = progress
        self.columns = columns  # only these table columns (None: all)
        self.done = 0
        self.total = 0

    def file_schema(self, lf: LiveFile) -> TableSchema:
        return self.table.file_schema(lf, self.problems)

    def read(self, lf: LiveFile, system: bool = False, with_dv: bool = True) -> pa.Table | None:
        try:
            dv = self.table.deletion_vector(lf) if with_dv and lf.deletion_vector is not None else None
        except (IndexCoreError, ImportError) as exc:
            _problem(self.problems, lf.dv_file_path or lf.path, "deletion vector", exc)
            dv = None
        try:
            out = read_data_file(self.table.storage, lf, self.file_schema(lf), self.schema, self.columns,
                                 deletion_vector=dv, system_columns=system, memo=self.memo)
        except IndexCoreError as exc:
            _problem(self.problems, lf.path, "data file", exc)
            out = None
        self.done += 1
        if self.progress is not None:
            self.progress(self.done, self.total, posixpath.basename(lf.path))
        return out


def _read_append(reader: _Reader, files: list[LiveFile]) -> list[pa.Table]:
    out = []
    for lf in files:
        t = reader.read(lf)
        if t is not None:
            out.append(t)
    return out


def _read_data_evolution(reader: _Reader, files: list[LiveFile]) -> list[pa.Table]:
    """Stitch column files by row id: per row range and field, the newest file that wrote it wins.

    Files carry ``first_row_id`` and ``row_count``; BLOB columns roll over into several
    ``.blob`` files, so one field of a row range may come from a different file than the next
    range. The row ids are cut at every file boundary; each segment takes each field from the
    newest file (highest sequence number) that holds the field and covers the segment.
    """
    schema = reader.schema
    plain = [lf for lf in files if lf.file.first_row_id is None]
    out = _read_append(reader, plain)
    by_partition: dict[tuple, list[LiveFile]] = {}
    for lf in files:
        if lf.file.first_row_id is not None:
            by_partition.setdefault(lf.partition, []).append(lf)
    parts: dict[str, pa.Table | None] = {}
    arrow_schema = _empty(schema).schema
    for group in by_partition.values():
        holds: list[tuple[LiveFile, set[int]]] = []
        for lf in sorted(group, key=lambda f: f.file.max_sequence_number, reverse=True):
            fs = reader.file_schema(lf)
            cols = lf.file.write_cols if lf.file.write_cols is not None else fs.field_names
            holds.append((lf, {fs.field(c).id for c in cols if c in fs.field_names}))
        cuts = sorted({b for lf in group for b in (lf.file.first_row_id, lf.file.first_row_id + lf.file.row_count)})
        spec = group[0].partition_spec
        for start, end in zip(cuts, cuts[1:], strict=False):
            covering = [(lf, ids) for lf, ids in holds
                        if lf.file.first_row_id <= start and end <= lf.file.first_row_id + lf.file.row_count]
            if not covering:
                continue
            n = end - start
            arrays = []
            for f in schema.fields:
                lf = next((lf for lf, ids in covering if f.id in ids), None)
                t = None
                if lf is not None:
                    if lf.path not in parts:
                        parts[lf.path] = reader.read(lf, with_dv=False)
                    t = parts[lf.path]
                if t is not None:
                    arrays.append(t.column(f.name).slice(start - lf.file.first_row_id, n))
                elif f.name in schema.partition_keys and f.name in spec:
                    arrays.append(from_internal([spec[f.name]] * n, f.type))
                else:
                    arrays.append(pa.nulls(n, arrow_type(f.type)))
            out.append(pa.table(arrays, schema=arrow_schema))
    return out


def _read_primary_key(reader: _Reader, files: list[LiveFile]) -> list[pa.Table]:
    schema = reader.schema
    if schema.skips_level0:
        files = [lf for lf in files if lf.file.level > 0]
    buckets: dict[tuple, list[LiveFile]] = {}
    for lf in files:
        buckets.setdefault((lf.partition, lf.bucket), []).append(lf)
    out = []
    for group in buckets.values():
        merged = _merge_bucket(reader, group)
        if merged is not None and merged.num_rows:
            out.append(merged)
    return out


def _bucket_records(reader: _Reader, group: list[LiveFile], strict: bool = False) -> list[pa.Table] | None:
    """The records of one bucket's files as a merge takes them (system columns, level, file order),
    empty files left out (None: with ``strict``, a file could not be read; a problem says why)."""
    parts = []
    for order, lf in enumerate(sorted(group, key=lambda f: (-f.file.level, f.file.max_sequence_number))):
        t = reader.read(lf, system=True)
        if t is None:
            if strict:
                return None
            continue
        t = t.append_column(LEVEL, pa.array(np.full(t.num_rows, lf.file.level, np.int32)))
        t = t.append_column(FILE_ORDER, pa.array(np.full(t.num_rows, order, np.int32)))
        parts.append(t)
    return [p for p in parts if p.num_rows]


def _merge_bucket(reader: _Reader, group: list[LiveFile], strict: bool = False) -> pa.Table | None:
    """The merged rows of one bucket's files (None: the merge failed; with ``strict`` also when a
    file could not be read, else that file is left out; a problem says why)."""
    schema = reader.schema
    parts = _bucket_records(reader, group, strict)
    if parts is None:
        return None
    if not parts:
        return _empty(schema)
    try:
        return merge_records(pa.concat_tables(parts), list(schema.primary_keys),
                             list(reader.columns or schema.field_names), schema.core_options)
    except IndexCoreError as exc:
        _problem(reader.problems, group[0].path, "merge", exc)
        return None


def merged_bucket_rows(table, schema: TableSchema, files: list[LiveFile], problems: list,
                       memo: dict | None = None) -> int | None:
    """Rows a batch read returns from one primary-key bucket's ``files`` (level 0 included: the
    caller passes what the read reads), by the same merge as :func:`read_table`; None when a
    file or the merge failed (``problems`` says why). ``memo``: one dict over the buckets a caller
    counts (files of one table schema resolve their columns once, :func:`read_raw`)."""
    merged = _merge_bucket(_Reader(table, schema, problems, columns=_count_columns(schema), memo=memo), list(files),
                           strict=True)
    return None if merged is None else merged.num_rows


def _count_columns(schema: TableSchema) -> list[str] | None:
    """The table columns a merge that counts rows reads: keys and sequence fields where the merge
    engine decides on them alone (:data:`ROWS_FROM_KEYS`), else every column (None)."""
    options = schema.core_options
    if options.merge_engine not in ROWS_FROM_KEYS:
        return None
    return list(dict.fromkeys([*schema.primary_keys, *(s for s in options.sequence_fields if s in schema.field_names)]))


class BucketCounter:
    """Rows a batch read returns from primary-key buckets (:func:`merged_bucket_rows` of each), for
    a caller that decides bucket by bucket which to count (:meth:`add`: True when its files were
    read) and then asks for the total (:meth:`rows`). With a merge engine that decides on keys and
    order alone the buckets read are merged together, one bucket number beside the keys: one
    sort for all, not a merge per bucket (a bucket of a 10,000-file table holds about 200 records)."""

    BUCKET = "_COUNTED_BUCKET"

    def __init__(self, table, schema: TableSchema, problems: list):
        self.schema = schema
        self.together = schema.core_options.merge_engine in ROWS_FROM_KEYS
        self.reader = _Reader(table, schema, problems, columns=_count_columns(schema), memo={})
        self.parts: list[pa.Table] = []  # every file's records, its bucket's number beside them
        self.counted: list[int] = []  # each bucket's rows, merged alone (not ``together``)
        self.buckets = 0

    def add(self, files: list[LiveFile]) -> bool:
        """Read (and, unless merged together later, merge) one bucket's ``files``; False when a file
        or the merge failed (``problems`` says why; nothing of it counted)."""
        if not self.together:
            merged = _merge_bucket(self.reader, list(files), strict=True)
            if merged is not None:
                self.counted.append(merged.num_rows)
            return merged is not None
        parts = _bucket_records(self.reader, list(files), strict=True)
        if parts is None:
            return False
        self.parts += [p.append_column(self.BUCKET, pa.array(np.full(p.num_rows, self.buckets, np.int32)))
                       for p in parts]
        self.buckets += 1
        return True

    def rows(self) -> int:
        """The rows of every bucket added."""
        return sum(self.bucket_rows())

    def bucket_rows(self) -> list[int]:
        """The rows of each bucket added (those :meth:`add` read, in the order added)."""
        if not self.together:
            return list(self.counted)
        if not self.parts:
            return [0] * self.buckets
        records = pa.concat_tables(self.parts, promote_options="default")
        merged = merge_records(records, [self.BUCKET, *self.schema.primary_keys], [self.BUCKET],
                               self.schema.core_options)
        numbers = merged.column(self.BUCKET).to_numpy()
        return np.bincount(numbers, minlength=self.buckets).tolist()


# merge engines whose merged rows are decided by the keys, sequence fields, row kinds and file order
# only (no value is read to count them); partial-update and aggregation read every column, as a
# value they cannot fold fails the read
ROWS_FROM_KEYS = ("deduplicate", "first-row")


def _read_plan(table, plan, schema: TableSchema, problems: list, progress=None,
               skip_partitions: set | None = None) -> pa.Table:
    files = [lf for lf in plan.files if skip_partitions is None or lf.partition not in skip_partitions]
    reader = _Reader(table, schema, problems, progress)
    reader.total = len(files)
    if schema.primary_keys:
        parts = _read_primary_key(reader, files)
    elif schema.core_options.data_evolution_enabled:
        parts = _read_data_evolution(reader, files)
    else:
        parts = _read_append(reader, files)
    return _concat(parts, schema, None)


def _conform(t: pa.Table, source: TableSchema, target: TableSchema) -> pa.Table:
    """A branch's rows in the main table's columns (matched by name, cast like Paimon)."""
    arrays = []
    for f in target.fields:
        if f.name in source.field_names:
            arrays.append(cast_column(t.column(f.name), source.field(f.name).type, f.type))
        else:
            arrays.append(pa.nulls(t.num_rows, arrow_type(f.type)))
    return pa.table(arrays, schema=_empty(target).schema)


def read_table(table, snapshot_id: int | None = None, predicate: Predicate | None = None,
               limit: int | None = None, progress=None, problems: list | None = None,
               columns: list[str] | None = None) -> pa.Table:
    """The rows of ``table`` at a snapshot (latest by default), like Paimon's batch read.

    The latest schema is used for the latest snapshot, the snapshot's own schema for time
    travel. Unreadable parts are appended to ``problems`` (a list) and skipped.
    """
    problems = problems if problems is not None else []
    plan = table.plan(snapshot_id)
    problems.extend(plan.problems)
    schema = table.read_schema(snapshot_id, plan.snapshot)
    result = _read_plan(table, plan, schema, problems, progress) if plan.snapshot is not None \
        else _empty(schema)
    fallback = schema.core_options.scan_fallback_branch
    if fallback and snapshot_id is None:
        try:
            branch = table.branch(fallback)
            bplan = branch.plan()
            problems.extend(bplan.problems)
            if bplan.snapshot is not None:
                bschema = branch.schema()
                main_parts = {lf.partition for lf in plan.files}
                extra = _read_plan(branch, bplan, bschema, problems, progress, skip_partitions=main_parts)
                if extra.num_rows:
                    result = pa.concat_tables([result, _conform(extra, bschema, schema)])
        except IndexCoreError as exc:
            _problem(problems, table.path, f"fallback branch {fallback!r}", exc)
    if predicate is not None:
        result = filter_table(result, predicate, schema)
    if columns is not None:
        result = result.select(columns)
    if limit is not None:
        result = result.slice(0, max(int(limit), 0))
    return result


def read_with_row_ids(table, snapshot_id: int | None = None, columns: list[str] | None = None,
                      row_ids: set[int] | None = None, problems: list | None = None) -> pa.Table:
    """The live rows of a row-tracking table with their ``_ROW_ID`` (``first_row_id`` + position).

    ``columns`` (default all) come from the newest file that holds every one of them for a row id
    (a data-evolution rewrite supersedes the older file); deleted positions are dropped;
    ``row_ids`` keeps only those ids (files outside them are not read). Files without row ids
    (row tracking off) are skipped.
    """
    problems = problems if problems is not None else []
    plan = table.plan(snapshot_id)
    schema = table.read_schema(snapshot_id, plan.snapshot)
    names = list(columns) if columns is not None else list(schema.field_names)
    reader = _Reader(table, schema, problems)
    seen: set[int] = set()
    parts = []
    for lf in sorted(plan.files, key=lambda f: f.file.max_sequence_number, reverse=True):
        first, n = lf.file.first_row_id, lf.file.row_count
        if first is None or (lf.file.write_cols is not None and not set(names) <= set(lf.file.write_cols)):
            continue
        if row_ids is not None and not any(first <= r < first + n for r in row_ids):
            continue
        t = reader.read(lf, system=True)
        if t is None:
            continue
        ids = pc.add(t.column(POSITION), first)
        keep = [r not in seen and (row_ids is None or r in row_ids) for r in ids.to_pylist()]
        t = t.select(names).append_column(ROW_ID, ids).filter(pa.array(keep, pa.bool_()))
        seen.update(t.column(ROW_ID).to_pylist())
        parts.append(t)
    out = pa.concat_tables(parts) if parts else \
        _empty(schema, names).append_column(ROW_ID, pa.array([], pa.int64()))
    return out.sort_by(ROW_ID)


def table_rows(table: pa.Table, schema: TableSchema) -> list[dict[str, Any]]:
    """Rows as dicts of internal values (columns of ``schema``; others as Arrow gives them)."""
    cols = {}
    for name in table.column_names:
        if name in schema.field_names:
            cols[name] = to_internal(table.column(name), schema.field(name).type)
        else:
            cols[name] = table.column(name).to_pylist()
    return [{n: cols[n][i] for n in table.column_names} for i in range(table.num_rows)]
