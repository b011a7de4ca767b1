"""A data file's stored columns as the table's: picked by field id (the Parquet projection of
the ids asked for) and evolved through the table schema (renamed, cast like Paimon, null- or
partition-filled); :func:`evolve_direct` passes through, once worked out per schema, the files
that store every asked column as the table types it.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from indexcore.errors import CorruptFileError, IndexCoreError
from indexcore.types.values import arrow_type, cast_column, caster, from_internal
from indexcore.warehouse.model import TableSchema

_ID_KEYS = (b"PARQUET:field_id", b"paimon.id", b"field_id")


def parquet_projection(pf: pq.ParquetFile, field_ids: Collection[int] | None, memo: dict | None) -> list[str] | None:
    """:func:`_projection` of a Parquet file. With ``memo``, a file whose Parquet schema equals one
    already seen (names, types and field ids: files written with one table schema) takes its
    columns from there without converting its schema to Arrow (a third of the cost of reading a
    60-row file's columns); only where the ids come from the Parquet schema itself (no Arrow
    schema stored beside it, every field's ``PARQUET:field_id``)."""
    if not field_ids or memo is None:
        return _projection(pf.schema_arrow, field_ids)
    wanted = frozenset(field_ids)
    schema = pf.schema
    stored = pf.metadata.metadata
    own = not stored or b"ARROW:schema" not in stored
    seen = memo.setdefault("parquet_projections", [])
    if own:
        for known, ids, names in seen:
            if ids == wanted and schema.equals(known):
                return names
    arrow = pf.schema_arrow
    names = _projection(arrow, wanted)
    if own and all(f.metadata and _ID_KEYS[0] in f.metadata for f in arrow):
        seen.append((schema, wanted, names))
    return names


def _projection(schema: pa.Schema, field_ids: Collection[int] | None) -> list[str] | None:
    """The stored columns holding ``field_ids`` (None: every column, also when none is found)."""
    if not field_ids:
        return None
    wanted = set(field_ids)
    names = [schema.field(i).name for field_id, i in _schema_ids(schema).items() if field_id in wanted]
    return sorted(names, key=schema.get_field_index) or None


def _column_ids(raw: pa.Table) -> dict[int, int]:
    return _schema_ids(raw.schema)


def _schema_ids(schema: pa.Schema) -> dict[int, int]:
    """Field id -> column index, from the ids the writer stored in the file's schema."""
    out = {}
    for i, f in enumerate(schema):
        meta = f.metadata or {}
        for key in _ID_KEYS:
            if key in meta:
                value = meta[key].decode("ascii", "replace").strip()
                if value.lstrip("-").isdigit():
                    out[int(value)] = i
                break
    return out


def _locate(raw: pa.Table, ids: dict[int, int], field_id: int, file_name: str | None) -> int | None:
    if ids:
        return ids.get(field_id)
    if file_name is not None and file_name in raw.column_names:
        return raw.column_names.index(file_name)
    return None


def evolve_columns(raw: pa.Table, file_schema: TableSchema, table_schema: TableSchema,
                   columns: list[str] | None = None, partition_spec: dict[str, Any] | None = None,
                   write_cols: tuple[str, ...] | None = None, path: str | None = None) -> pa.Table:
    """The file's rows as ``table_schema`` columns: matched by field id, cast, null-filled.

    Partition columns absent from the file are filled from ``partition_spec``; ``write_cols``
    (data-evolution files) limits which fields the file really holds.
    """
    ids = _column_ids(raw)
    names = columns if columns is not None else list(table_schema.field_names)
    held = _held_ids(file_schema, write_cols)
    arrays, fields = [], []
    for name in names:
        tf = table_schema.field(name)
        ff = file_schema.field_by_id(tf.id)
        idx = None
        if ff is not None and (held is None or tf.id in held):
            idx = _locate(raw, ids, tf.id, ff.name)
        if idx is not None:
            try:
                col = cast_column(raw.column(idx), ff.type, tf.type)
            except (pa.ArrowException, ValueError, OverflowError, ArithmeticError) as exc:
                raise CorruptFileError(f"field {name!r}: {ff.type} values do not fit {tf.type}: {exc}",
                                       file=path, structure=f"data file field {name}") from exc
        elif partition_spec and name in partition_spec and name in table_schema.partition_keys:
            col = from_internal([partition_spec[name]] * raw.num_rows, tf.type)
        else:
            col = pa.nulls(raw.num_rows, arrow_type(tf.type))
        if isinstance(col, pa.ChunkedArray):
            col = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
        arrays.append(col)
        fields.append(pa.field(name, arrow_type(tf.type)))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields)) if fields else \
        pa.table({"_dummy": pa.nulls(raw.num_rows)}).drop(["_dummy"])


def evolve_direct(raw: pa.Table, file_schema: TableSchema, table_schema: TableSchema,
                   columns: list[str] | None, write_cols: tuple[str, ...] | None, memo: dict) -> pa.Table | None:
    """:func:`evolve_columns` of a file whose every asked column is stored as the table types it
    (no cast, no null or partition fill), worked out once per raw schema and kept in ``memo``
    (a caller's dict over the files of one read): then only the columns are picked (a tenth of
    the cost of reading a 60-row file's four columns). None: not such a file (the caller evolves)."""
    names = tuple(columns) if columns is not None else tuple(table_schema.field_names)
    schema = raw.schema
    plans = memo.setdefault("evolve_plans", [])
    plan = next((found for known, fs, ts, cols, held, found in plans
                 if fs is file_schema and ts is table_schema and cols == names and held == write_cols
                 and schema.equals(known, check_metadata=True)), False)
    if plan is False:
        plan = _direct_plan(schema, file_schema, table_schema, names, write_cols)
        plans.append((schema, file_schema, table_schema, names, write_cols, plan))
    if plan is None:
        return None
    at, out = plan
    arrays = []
    for i in at:
        col = raw.column(i)
        arrays.append(col.chunk(0) if col.num_chunks == 1 else col.combine_chunks())
    return pa.Table.from_arrays(arrays, schema=out)


def _direct_plan(schema: pa.Schema, file_schema: TableSchema, table_schema: TableSchema, names: tuple[str, ...],
                 write_cols: tuple[str, ...] | None) -> tuple[list[int], pa.Schema] | None:
    """(stored column of each of ``names``, the evolved table's schema) when each is a stored column
    of the file in the table's type (what :func:`evolve_columns` then passes through unchanged)."""
    if not names:
        return None
    ids = _schema_ids(schema)
    held = _held_ids(file_schema, write_cols)
    at, fields = [], []
    for name in names:
        tf = table_schema.field(name)
        ff = file_schema.field_by_id(tf.id)
        if ff is None or (held is not None and tf.id not in held):
            return None
        idx = ids.get(tf.id) if ids else schema.names.index(ff.name) if ff.name in schema.names else None
        target = arrow_type(tf.type)
        try:
            cast = caster(ff.type, tf.type)
        except IndexCoreError:  # a cast Paimon refuses: evolve_columns says so, with the file
            return None
        if idx is None or cast is not None or schema.field(idx).type != target:
            return None
        at.append(idx)
        fields.append(pa.field(name, target))
    return at, pa.schema(fields)


def _held_ids(file_schema: TableSchema, write_cols: tuple[str, ...] | None) -> set[int] | None:
    """The field ids a data-evolution file really holds (``write_cols``); None: every field of its schema."""
    if write_cols is None:
        return None
    return {file_schema.field(n).id for n in write_cols if n in file_schema.field_names}
