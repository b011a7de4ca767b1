"""Metadata views of a table as pyarrow Tables (like pyiceberg's ``table.inspect``).

Column names follow Paimon's system tables ($snapshots, $schemas, $manifests, $files,
$table_indexes, $buckets, $partitions). Paimon has no ``$file_indexes`` table; that view lists
one row per (data file, column, index type) from each file-index container head.
"""

from __future__ import annotations

import datetime as _dt
import json
from typing import Any

import pyarrow as pa

from ..errors import IndexCoreError
from ..types import DataType, to_json_value
from .model import DELETION_VECTORS

_TS = pa.timestamp("ms")


def _text(dtype: DataType | None, value: Any) -> str:
    if value is None:
        return "null"
    if dtype is None:
        return str(value)
    try:
        return str(to_json_value(dtype, value))
    except Exception:  # a value the type codec does not render: show it raw
        return str(value)


def partition_text(values: tuple, types: list[DataType] | None = None) -> str:
    """Paimon's rendering of a partition in system tables: ``{v1, v2}``."""
    types = types or [None] * len(values)
    return "{" + ", ".join(_text(t, v) for t, v in zip(types, values, strict=False)) + "}"


def _stats_text(names: list[str], types: list[DataType | None], values: tuple) -> str:
    return "{" + ", ".join(f"{n}={_text(t, v)}" for n, t, v in zip(names, types, values, strict=False)) + "}"


def _millis_dt(millis: int | None) -> _dt.datetime | None:
    return None if millis is None else _dt.datetime(1970, 1, 1) + _dt.timedelta(milliseconds=millis)


class TableInspector:
    """``table.inspect``: each method returns a pyarrow Table with an explicit schema."""

    def __init__(self, table):
        self.table = table

    def _part_types(self) -> list[DataType]:
        return [f.type for f in self.table.schema().partition_fields]

    def snapshots(self, snapshot_id: int | None = None) -> pa.Table:
        schema = pa.schema([
            ("snapshot_id", pa.int64()), ("schema_id", pa.int64()), ("commit_user", pa.string()),
            ("commit_identifier", pa.int64()), ("commit_kind", pa.string()), ("commit_time", _TS),
            ("base_manifest_list", pa.string()), ("delta_manifest_list", pa.string()),
            ("changelog_manifest_list", pa.string()), ("index_manifest", pa.string()),
            ("total_record_count", pa.int64()), ("delta_record_count", pa.int64()),
            ("changelog_record_count", pa.int64()), ("watermark", pa.int64()),
            ("next_row_id", pa.int64())])
        snaps = self.table.snapshots()
        if snapshot_id is not None:
            snaps = [s for s in snaps if s.id == snapshot_id]
        rows = [{
            "snapshot_id": s.id, "schema_id": s.schema_id, "commit_user": s.commit_user,
            "commit_identifier": s.commit_identifier, "commit_kind": s.commit_kind,
            "commit_time": _millis_dt(s.time_millis), "base_manifest_list": s.base_manifest_list,
            "delta_manifest_list": s.delta_manifest_list,
            "changelog_manifest_list": s.changelog_manifest_list, "index_manifest": s.index_manifest,
            "total_record_count": s.total_record_count, "delta_record_count": s.delta_record_count,
            "changelog_record_count": s.changelog_record_count, "watermark": s.watermark,
            "next_row_id": s.next_row_id} for s in snaps]
        return pa.Table.from_pylist(rows, schema=schema)

    def schemas(self, snapshot_id: int | None = None) -> pa.Table:
        schema = pa.schema([
            ("schema_id", pa.int64()), ("fields", pa.string()), ("partition_keys", pa.string()),
            ("primary_keys", pa.string()), ("options", pa.string()), ("comment", pa.string()),
            ("update_time", _TS)])
        schemas = self.table.schemas()
        if snapshot_id is not None:
            sid = self.table.snapshot(snapshot_id).schema_id
            schemas = [s for s in schemas if s.id == sid]
        rows = [{
            "schema_id": s.id,
            "fields": json.dumps([{"id": f.id, "name": f.name, "type": f.type.sql()} for f in s.fields]),
            "partition_keys": json.dumps(list(s.partition_keys)),
            "primary_keys": json.dumps(list(s.primary_keys)),
            "options": json.dumps(s.options), "comment": s.comment,
            "update_time": _millis_dt(s.time_millis)} for s in schemas]
        return pa.Table.from_pylist(rows, schema=schema)

    def manifests(self, snapshot_id: int | None = None) -> pa.Table:
        schema = pa.schema([
            ("file_name", pa.string()), ("file_size", pa.int64()), ("num_added_files", pa.int64()),
            ("num_deleted_files", pa.int64()), ("schema_id", pa.int64()),
            ("min_partition_stats", pa.string()), ("max_partition_stats", pa.string()),
            ("min_bucket", pa.int32()), ("max_bucket", pa.int32()), ("min_level", pa.int32()),
            ("max_level", pa.int32()), ("min_row_id", pa.int64()), ("max_row_id", pa.int64())])
        types = self._part_types()
        rows = []
        for m in self.table.plan(snapshot_id).manifests:
            ps = m.partition_stats
            rows.append({
                "file_name": m.file_name, "file_size": m.file_size,
                "num_added_files": m.num_added_files, "num_deleted_files": m.num_deleted_files,
                "schema_id": m.schema_id,
                "min_partition_stats": partition_text(ps.min_values, types) if ps else None,
                "max_partition_stats": partition_text(ps.max_values, types) if ps else None,
                "min_bucket": m.min_bucket, "max_bucket": m.max_bucket, "min_level": m.min_level,
                "max_level": m.max_level, "min_row_id": m.min_row_id, "max_row_id": m.max_row_id})
        return pa.Table.from_pylist(rows, schema=schema)

    def _stats_names(self, meta) -> tuple[list[str], list[DataType | None]]:
        table = self.table
        schema = table.schema_or_latest(meta.schema_id)
        names = meta.value_stats_cols if meta.value_stats_cols is not None else meta.write_cols
        if names is None:
            return [f.name for f in schema.fields], [f.type for f in schema.fields]
        types = []
        for n in names:
            try:
                types.append(schema.field(n).type)
            except KeyError:
                types.append(None)
        return list(names), types

    def files(self, snapshot_id: int | None = None) -> pa.Table:
        schema = pa.schema([
            ("partition", pa.string()), ("bucket", pa.int32()), ("file_path", pa.string()),
            ("file_format", pa.string()), ("schema_id", pa.int64()), ("level", pa.int32()),
            ("record_count", pa.int64()), ("file_size_in_bytes", pa.int64()),
            ("min_key", pa.string()), ("max_key", pa.string()),
            ("null_value_counts", pa.string()), ("min_value_stats", pa.string()),
            ("max_value_stats", pa.string()), ("min_sequence_number", pa.int64()),
            ("max_sequence_number", pa.int64()), ("creation_time", _TS),
            ("deleteRowCount", pa.int64()), ("file_source", pa.string()),
            ("first_row_id", pa.int64()), ("write_cols", pa.list_(pa.string())),
            ("external_path", pa.string()), ("embedded_index", pa.bool_()),
            ("index_file", pa.string()), ("deletion_vector_cardinality", pa.int64())])
        table = self.table
        types = self._part_types()
        key_names = list(table.schema().trimmed_primary_keys)
        rows = []
        for lf in table.plan(snapshot_id).files:
            m = lf.file
            names, vtypes = self._stats_names(m)
            vs = m.value_stats
            ktypes = table._key_types(m.schema_id)
            rows.append({
                "partition": partition_text(lf.partition, types), "bucket": lf.bucket,
                "file_path": lf.path, "file_format": m.file_format, "schema_id": m.schema_id,
                "level": m.level, "record_count": m.row_count, "file_size_in_bytes": m.file_size,
                "min_key": partition_text(tuple(m.min_key), ktypes) if key_names else None,
                "max_key": partition_text(tuple(m.max_key), ktypes) if key_names else None,
                "null_value_counts": _stats_text(names, [None] * len(names), vs.null_counts),
                "min_value_stats": _stats_text(names, vtypes, vs.min_values),
                "max_value_stats": _stats_text(names, vtypes, vs.max_values),
                "min_sequence_number": m.min_sequence_number,
                "max_sequence_number": m.max_sequence_number, "creation_time": m.creation_time,
                "deleteRowCount": m.delete_row_count,
                "file_source": {0: "APPEND", 1: "COMPACT"}.get(m.file_source),
                "first_row_id": m.first_row_id,
                "write_cols": list(m.write_cols) if m.write_cols is not None else None,
                "external_path": m.external_path, "embedded_index": m.embedded_index is not None,
                "index_file": lf.index_path,
                "deletion_vector_cardinality": lf.deletion_vector.cardinality if lf.deletion_vector else None})
        return pa.Table.from_pylist(rows, schema=schema)

    def file_indexes(self, snapshot_id: int | None = None) -> pa.Table:
        """One row per (data file, column, index type); unreadable containers get an error row."""
        from ..formats.container import read_container

        schema = pa.schema([
            ("file_path", pa.string()), ("column", pa.string()), ("index_type", pa.string()),
            ("embedded", pa.bool_()), ("index_file", pa.string()), ("offset", pa.int64()),
            ("size", pa.int64()), ("empty", pa.bool_()), ("error", pa.string())])
        table = self.table
        rows = []
        for lf in table.iter_prefetched(table.plan(snapshot_id).files, dv=False):
            if not lf.has_file_index:
                continue
            embedded = lf.file.embedded_index is not None
            base = {"file_path": lf.path, "embedded": embedded,
                    "index_file": None if embedded else lf.index_path}
            try:
                head = read_container(table.file_index_source(lf)).head
            except IndexCoreError as exc:
                rows.append({**base, "error": str(exc)})
                continue
            for e in head.entries:
                rows.append({**base, "column": e.column, "index_type": e.index_type,
                             "offset": e.offset, "size": e.length, "empty": e.empty})
        return pa.Table.from_pylist(rows, schema=schema)

    def table_indexes(self, snapshot_id: int | None = None) -> pa.Table:
        dv_type = pa.list_(pa.struct([("file_name", pa.string()), ("start", pa.int32()),
                                      ("length", pa.int32()), ("cardinality", pa.int64())]))
        schema = pa.schema([
            ("partition", pa.string()), ("bucket", pa.int32()), ("index_type", pa.string()),
            ("file_name", pa.string()), ("file_size", pa.int64()), ("row_count", pa.int64()),
            ("dv_ranges", dv_type), ("external_path", pa.string()), ("decoded", pa.bool_())])
        types = self._part_types()
        rows = []
        for e in self.table.plan(snapshot_id).index_entries:
            m = e.index_file
            rows.append({
                "partition": partition_text(e.partition, types), "bucket": e.bucket,
                "index_type": m.index_type, "file_name": m.file_name, "file_size": m.file_size,
                "row_count": m.row_count,
                "dv_ranges": None if m.dv_ranges is None else [
                    {"file_name": r.data_file, "start": r.offset, "length": r.length,
                     "cardinality": r.cardinality} for r in m.dv_ranges],
                "external_path": m.external_path,
                "decoded": m.index_type in (DELETION_VECTORS, "HASH")})
        return pa.Table.from_pylist(rows, schema=schema)

    def _group(self, snapshot_id: int | None, by_bucket: bool) -> list[dict]:
        types = self._part_types()
        groups: dict[tuple, dict] = {}
        for lf in self.table.plan(snapshot_id).files:
            key = (lf.partition, lf.bucket) if by_bucket else (lf.partition,)
            g = groups.get(key)
            if g is None:
                g = groups[key] = {"partition": partition_text(lf.partition, types), "record_count": 0,
                                   "file_size_in_bytes": 0, "file_count": 0, "last_update_time": None}
                if by_bucket:
                    g["bucket"] = lf.bucket
            g["record_count"] += lf.file.row_count
            g["file_size_in_bytes"] += lf.file.file_size
            g["file_count"] += 1
            created = lf.file.creation_time
            if created is not None and (g["last_update_time"] is None or created > g["last_update_time"]):
                g["last_update_time"] = created
        return list(groups.values())

    def buckets(self, snapshot_id: int | None = None) -> pa.Table:
        schema = pa.schema([
            ("partition", pa.string()), ("bucket", pa.int32()), ("record_count", pa.int64()),
            ("file_size_in_bytes", pa.int64()), ("file_count", pa.int64()), ("last_update_time", _TS)])
        return pa.Table.from_pylist(self._group(snapshot_id, True), schema=schema)

    def partitions(self, snapshot_id: int | None = None) -> pa.Table:
        schema = pa.schema([
            ("partition", pa.string()), ("record_count", pa.int64()), ("file_size_in_bytes", pa.int64()),
            ("file_count", pa.int64()), ("last_update_time", _TS)])
        return pa.Table.from_pylist(self._group(snapshot_id, False), schema=schema)
