"""Paimon's system tables as Arrow tables: same names, same columns, ours after theirs.

Each function takes a :class:`~indexcore.warehouse.Table` (a branch is a Table too) and an
optional snapshot id (time travel; the latest by default) and returns a ``pyarrow.Table`` with
an explicit schema, so an empty view still has its columns and types.
"""

from __future__ import annotations

import datetime as _dt
import json
import posixpath
from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from indexcore.errors import IndexCoreError
from indexcore.paimon.layout import BRANCH_PREFIX, tag_path
from indexcore.types import DataType
from indexcore.views.common import (
    TS,
    dv_cardinality,
    from_rows,
    partition_text,
    partition_types,
    plan_partition_labels,
    stats_text,
)
from indexcore.warehouse.manifest import file_stats, lazy_key
from indexcore.warehouse.plan_columns import PlanColumns, take_rows
from indexcore.warehouse.table import Table
from indexcore.warehouse.table_planning import KNOWN_INDEX_TYPES


def _millis_dt(millis: int | None) -> _dt.datetime | None:
    return None if millis is None else _dt.datetime(1970, 1, 1) + _dt.timedelta(milliseconds=millis)


SNAPSHOTS = pa.schema([
    ("snapshot_id", pa.int64()), ("schema_id", pa.int64()), ("commit_user", pa.string()),
    ("commit_identifier", pa.int64()), ("commit_kind", pa.string()), ("commit_time", TS),
    ("base_manifest_list", pa.string()), ("delta_manifest_list", pa.string()),
    ("changelog_manifest_list", pa.string()), ("total_record_count", pa.int64()),
    ("delta_record_count", pa.int64()), ("changelog_record_count", pa.int64()), ("watermark", pa.int64()),
    ("next_row_id", pa.int64()),
    ("index_manifest", pa.string())])


def snapshots(table, snapshot_id: int | None = None) -> pa.Table:
    """``$snapshots``: every readable snapshot (only ``snapshot_id`` when given), oldest first."""
    snaps = table.snapshots()
    if snapshot_id is not None:
        snaps = [s for s in snaps if s.id == snapshot_id]
    return from_rows([{
        "snapshot_id": s.id, "schema_id": s.schema_id, "commit_user": s.commit_user,
        "commit_identifier": s.commit_identifier, "commit_kind": s.commit_kind,
        "commit_time": _millis_dt(s.time_millis), "base_manifest_list": s.base_manifest_list,
        "delta_manifest_list": s.delta_manifest_list, "changelog_manifest_list": s.changelog_manifest_list,
        "total_record_count": s.total_record_count, "delta_record_count": s.delta_record_count,
        "changelog_record_count": s.changelog_record_count, "watermark": s.watermark,
        "next_row_id": s.next_row_id, "index_manifest": s.index_manifest} for s in snaps], SNAPSHOTS)


SCHEMAS = pa.schema([
    ("schema_id", pa.int64()), ("fields", pa.string()), ("partition_keys", pa.string()),
    ("primary_keys", pa.string()), ("options", pa.string()), ("comment", pa.string()), ("update_time", TS)])


def schemas(table, snapshot_id: int | None = None) -> pa.Table:
    """``$schemas``: every schema version (only the snapshot's own when one is given)."""
    found = table.schemas()
    if snapshot_id is not None:
        sid = table.snapshot_schema(table.snapshot(snapshot_id)).id
        found = [s for s in found if s.id == sid]
    return from_rows([{
        "schema_id": s.id,
        "fields": json.dumps([{"id": f.id, "name": f.name, "type": f.type.sql()} for f in s.fields]),
        "partition_keys": json.dumps(list(s.partition_keys)), "primary_keys": json.dumps(list(s.primary_keys)),
        "options": json.dumps(s.options), "comment": s.comment,
        "update_time": _millis_dt(s.time_millis)} for s in found], SCHEMAS)


OPTIONS = pa.schema([("key", pa.string()), ("value", pa.string())])


def options(table, snapshot_id: int | None = None) -> pa.Table:
    """``$options``: the options of the latest schema (of the snapshot's schema when one is given)."""
    schema = table.snapshot_schema(table.snapshot(snapshot_id)) if snapshot_id is not None else table.schema()
    return from_rows([{"key": k, "value": v} for k, v in schema.options.items()], OPTIONS)


MANIFESTS = pa.schema([
    ("file_name", pa.string()), ("file_size", pa.int64()), ("num_added_files", pa.int64()),
    ("num_deleted_files", pa.int64()), ("schema_id", pa.int64()), ("min_partition_stats", pa.string()),
    ("max_partition_stats", pa.string()), ("min_row_id", pa.int64()), ("max_row_id", pa.int64()),
    ("min_bucket", pa.int32()), ("max_bucket", pa.int32()), ("min_level", pa.int32()), ("max_level", pa.int32())])


def manifests(table, snapshot_id: int | None = None) -> pa.Table:
    """``$manifests``: the manifest files of the snapshot's base and delta manifest lists."""
    types = partition_types(table)
    rows = []
    for m in table.plan(snapshot_id).manifests:
        ps = m.partition_stats
        rows.append({
            "file_name": m.file_name, "file_size": m.file_size, "num_added_files": m.num_added_files,
            "num_deleted_files": m.num_deleted_files, "schema_id": m.schema_id,
            "min_partition_stats": partition_text(ps.min_values, types) if ps else None,
            "max_partition_stats": partition_text(ps.max_values, types) if ps else None,
            "min_row_id": m.min_row_id, "max_row_id": m.max_row_id, "min_bucket": m.min_bucket,
            "max_bucket": m.max_bucket, "min_level": m.min_level, "max_level": m.max_level})
    return from_rows(rows, MANIFESTS)


def _stats_names(table, schema_id: int, cols: tuple | None, write_cols: tuple | None,
                 path: str) -> tuple[list[str], list[DataType | None]]:
    """The names and types of a file's value stats: its ``_VALUE_STATS_COLS``, else its
    ``_WRITE_COLS``, else every field of the schema it was written under."""
    schema = table.schema_or_latest(schema_id, path)
    names = cols if cols is not None else write_cols
    if names is None:
        return [f.name for f in schema.fields], [f.type for f in schema.fields]
    types = []
    for n in names:
        try:
            types.append(schema.field(n).type)
        except KeyError:
            types.append(None)
    return list(names), types


FILES = pa.schema([
    ("partition", pa.string()), ("bucket", pa.int32()), ("file_path", pa.string()), ("file_format", pa.string()),
    ("schema_id", pa.int64()), ("level", pa.int32()), ("record_count", pa.int64()),
    ("file_size_in_bytes", pa.int64()), ("min_key", pa.string()), ("max_key", pa.string()),
    ("null_value_counts", pa.string()), ("min_value_stats", pa.string()), ("max_value_stats", pa.string()),
    ("min_sequence_number", pa.int64()), ("max_sequence_number", pa.int64()), ("creation_time", TS),
    ("deleteRowCount", pa.int64()), ("file_source", pa.string()), ("first_row_id", pa.int64()),
    ("write_cols", pa.list_(pa.string())),
    ("file_name", pa.string()), ("external_path", pa.string()), ("embedded_index", pa.bool_()),
    ("index_file", pa.string()), ("deletion_vector_cardinality", pa.int64())])
_FILE_SOURCES = pa.array(["APPEND", "COMPACT"])  # _FILE_SOURCE 0 and 1


_FORMAT_PASSES = 8  # distinct extensions found by a suffix test each; names left after them take the regex


def _file_format(names: pa.Array) -> pa.Array:
    """The text after each file name's last dot, lower-cased ("" without one), as Paimon's
    ``DataFilePathFactory.formatIdentifier`` (which keeps the case): each distinct extension found by
    one suffix test over the names left (a table has one or two formats) and lower-cased once; a
    regex over 1,000,000 names was 0.3 s of the Table page. After :data:`_FORMAT_PASSES` extensions,
    or at a null name, the names left take :func:`_file_format_regex`."""
    names = names.combine_chunks() if isinstance(names, pa.ChunkedArray) else names
    codes = np.zeros(len(names), np.int32)
    left = np.ones(len(names), bool)  # names whose extension is not found yet
    texts: list[str] = []
    while len(texts) < _FORMAT_PASSES and left.any():
        first = names[int(np.argmax(left))].as_py()
        if first is None:
            break
        _head, dot, ext = first.rpartition(".")
        hit = pc.ends_with(names, f".{ext}") if dot else pc.invert(pc.match_substring(names, "."))
        mine = left & pc.fill_null(hit, False).to_numpy(zero_copy_only=False)
        codes[mine] = len(texts)
        texts.append(ext if dot else "")
        left &= ~mine
    values = pc.utf8_lower(pa.array(texts, pa.string()))
    if left.any():
        rest = np.flatnonzero(left)
        codes[rest] = len(texts) + np.arange(len(rest), dtype=np.int32)
        values = pa.concat_arrays([values, _file_format_regex(names.take(pa.array(rest)))])
    return values.take(pa.array(codes))


def _file_format_regex(names: pa.Array) -> pa.Array:
    """:func:`_file_format` by a regex per name (``(?s)``: a name's newline does not stop ``.*``
    before its last dot)."""
    ext = pc.utf8_lower(pc.replace_substring_regex(names, r"(?s)^.*\.", ""))
    return pc.if_else(pc.match_substring(names, "."), ext, "")


def _dv_cardinality(table, plan: PlanColumns, live: pa.Table, rows: np.ndarray) -> pa.Array:
    """Deleted rows per file: the manifest's cardinality, else decoded from the DV file (only the
    files whose index manifest leaves it out; each built as a LiveFile for that)."""
    known = live.column("dv_cardinality").combine_chunks()
    missing = pc.and_(pc.is_valid(live.column("dv_offset")), pc.is_null(known)).combine_chunks()
    if not pc.any(missing).as_py():
        return known
    values = known.to_pylist()
    for i in np.flatnonzero(missing.to_numpy(zero_copy_only=False)):
        values[i] = dv_cardinality(table, plan.live_file(table, int(rows[i])))
    return pa.array(values, pa.int64())


STATS_SLICE = 4096  # files whose statistics are rendered at once


def _stats_columns(table, live: pa.Table, keyed: bool) -> dict[str, list]:
    """The rendered key and value statistics of each file (its BinaryRow bytes decoded here, one
    file at a time, nothing kept)."""
    types = table._stats_types
    n = live.num_rows
    schema_ids = live.column("_SCHEMA_ID").to_pylist()
    cols_of = live.column("_VALUE_STATS_COLS").to_pylist()
    write_of = live.column("_WRITE_COLS").to_pylist()
    paths = live.column("path").to_pylist()
    out: dict[str, list] = {k: [None] * n for k in ("min_key", "max_key", "null_value_counts", "min_value_stats",
                                                    "max_value_stats")}
    if keyed:
        for column, raw in (("min_key", live.column("_MIN_KEY")), ("max_key", live.column("_MAX_KEY"))):
            out[column] = [partition_text(tuple(lazy_key(r, types.key(sid))), table.key_types(sid))
                           for r, sid in zip(raw.to_pylist(), schema_ids, strict=True)]
    names_of: dict[tuple, tuple] = {}
    for i, rec in enumerate(live.column("_VALUE_STATS").to_pylist()):
        sid = schema_ids[i]
        cols = tuple(cols_of[i]) if cols_of[i] is not None else None
        write_cols = tuple(write_of[i]) if write_of[i] is not None else None
        key = (sid, cols, write_cols)
        if key not in names_of:
            names_of[key] = _stats_names(table, sid, cols, write_cols, paths[i])
        names, vtypes = names_of[key]
        vs = file_stats(rec, types.value(sid, cols, write_cols))
        out["null_value_counts"][i] = stats_text(names, [None] * len(names), vs.null_counts)
        out["min_value_stats"][i] = stats_text(names, vtypes, vs.min_values)
        out["max_value_stats"][i] = stats_text(names, vtypes, vs.max_values)
    return out


def files(table, snapshot_id: int | None = None, stats: bool = True,
          paths: Sequence[str] | None = None, plan: PlanColumns | None = None) -> pa.Table:
    """``$files``: the snapshot's live data files with their stats, file index and deletion vector.

    Built from the columnar plan (:meth:`~indexcore.warehouse.Table.plan_columns`), no object per
    file. ``stats=False`` leaves the rendered key and value statistics (``min_key`` ...
    ``max_value_stats``) null, sparing their decoding when only the listing is wanted (a
    50,000-file table); ``paths`` keeps only those data files (in plan order), e.g. the page of
    files on screen. ``plan``: this columnar plan instead of the snapshot's (a Spark task's share
    of a plan, :meth:`~indexcore.warehouse.Table.plan_of_entries`).
    """
    plan = plan if plan is not None else table.plan_columns(snapshot_id)
    live = plan.files
    rows = np.arange(live.num_rows, dtype=np.int64)
    if paths is not None:
        rows = np.flatnonzero(pc.is_in(live.column("path"), pa.array(list(paths), pa.string()))
                              .to_numpy(zero_copy_only=False))
        live = take_rows(live, rows)  # not a join of every chunk of every column
    n = live.num_rows
    names = live.column("_FILE_NAME")
    names = names.chunk(0) if names.num_chunks == 1 else names.combine_chunks()  # the plan's own: no copy
    source = live.column("_FILE_SOURCE").combine_chunks()
    known = pc.is_in(source, pa.array([0, 1], source.type))
    none = pa.nulls(n, pa.string())
    cols: dict[str, pa.Array | pa.ChunkedArray | list] = {
        "partition": plan_partition_labels(plan, live, partition_types(table), table.caches.labels),
        "bucket": live.column("_BUCKET"), "file_path": live.column("path"), "file_format": _file_format(names),
        "schema_id": live.column("_SCHEMA_ID"), "level": live.column("_LEVEL"),
        "record_count": live.column("_ROW_COUNT"), "file_size_in_bytes": live.column("_FILE_SIZE"),
        "min_key": none, "max_key": none, "null_value_counts": none, "min_value_stats": none,
        "max_value_stats": none,
        "min_sequence_number": live.column("_MIN_SEQUENCE_NUMBER"),
        "max_sequence_number": live.column("_MAX_SEQUENCE_NUMBER"),
        "creation_time": live.column("_CREATION_TIME"), "deleteRowCount": live.column("_DELETE_ROW_COUNT"),
        "file_source": _FILE_SOURCES.take(pc.if_else(known, source, None)),
        "first_row_id": live.column("_FIRST_ROW_ID"), "write_cols": live.column("_WRITE_COLS"),
        "file_name": names, "external_path": live.column("_EXTERNAL_PATH"),
        "embedded_index": pc.is_valid(live.column("_EMBEDDED_FILE_INDEX")),
        "index_file": live.column("index_path"),
        "deletion_vector_cardinality": _dv_cardinality(table, plan, live, rows)}
    if stats and n:  # rendered a slice at a time: a slice's Python strings are gone before the next
        keyed = bool(table.schema().trimmed_primary_keys)
        parts = [{k: pa.array(v, pa.string()) for k, v in _stats_columns(table, live.slice(lo, STATS_SLICE),
                                                                          keyed).items()}
                 for lo in range(0, n, STATS_SLICE)]
        cols.update({k: pa.chunked_array([p[k] for p in parts], pa.string()) for k in parts[0]})
    return pa.Table.from_arrays([cols[f.name] for f in FILES], schema=FILES)


DV_RANGE = pa.struct([("f0", pa.string()), ("f1", pa.int32()), ("f2", pa.int32()), ("_CARDINALITY", pa.int64())])
TABLE_INDEXES = pa.schema([
    ("partition", pa.string()), ("bucket", pa.int32()), ("index_type", pa.string()), ("file_name", pa.string()),
    ("file_size", pa.int64()), ("row_count", pa.int64()), ("dv_ranges", pa.list_(DV_RANGE)),
    ("row_range_start", pa.int64()), ("row_range_end", pa.int64()), ("index_field_id", pa.int32()),
    ("index_field_name", pa.string()),
    ("external_path", pa.string()), ("decoded", pa.bool_())])


def _global(meta, key: str):
    """A field of the index manifest's ``_GLOBAL_INDEX`` record (global indexes only)."""
    return getattr(meta, key, None) if meta is not None else None


def table_indexes(table, snapshot_id: int | None = None) -> pa.Table:
    """``$table_indexes``: the index manifest's files; ``dv_ranges`` as Paimon spells them
    (``f0`` data file, ``f1`` offset, ``f2`` length, ``_CARDINALITY``). ``decoded`` says
    whether indexcore decodes that kind (deletion vectors, hash, BTree and bitmap global indexes)."""
    types = partition_types(table)
    schema = table.schema()
    rows = []
    for e in table.plan_columns(snapshot_id).index_entries:
        m = e.index_file
        g = m.global_index_meta
        field_id = _global(g, "index_field_id")
        field = schema.field_by_id(field_id) if isinstance(field_id, int) else None
        rows.append({
            "partition": partition_text(e.partition, types), "bucket": e.bucket, "index_type": m.index_type,
            "file_name": m.file_name, "file_size": m.file_size, "row_count": m.row_count,
            "dv_ranges": None if m.dv_ranges is None else [
                {"f0": r.data_file, "f1": r.offset, "f2": r.length, "_CARDINALITY": r.cardinality}
                for r in m.dv_ranges],
            "row_range_start": _global(g, "row_range_start"),
            "row_range_end": _global(g, "row_range_end"),
            "index_field_id": field_id, "index_field_name": field.name if field else None,
            "external_path": m.external_path, "decoded": m.index_type in KNOWN_INDEX_TYPES})
    return from_rows(rows, TABLE_INDEXES)


def _groups(table, snapshot_id: int | None, by_bucket: bool, schema: pa.Schema) -> pa.Table:
    """Records, bytes, files and the latest creation time per partition (and bucket), groups in
    the order their first file is planned; summed by Arrow over the columnar plan."""
    plan = table.plan_columns(snapshot_id)
    live = plan.files
    if not live.num_rows:
        return schema.empty_table()
    first: dict = {}  # partition values -> the first partition id holding them (raw bytes may differ)
    canon = np.array([first.setdefault(p[0], i) for i, p in enumerate(plan.partitions)], np.int32)
    keys = ["pid", "_BUCKET"] if by_bucket else ["pid"]
    grouped = pa.table({"pid": pa.array(canon[live.column("partition_id").to_numpy()]),
                        "_BUCKET": live.column("_BUCKET"), "_ROW_COUNT": live.column("_ROW_COUNT"),
                        "_FILE_SIZE": live.column("_FILE_SIZE"), "_CREATION_TIME": live.column("_CREATION_TIME"),
                        "_ORDER": pa.array(np.arange(live.num_rows, dtype=np.int64))})
    aggregates = [("_ROW_COUNT", "sum"), ("_FILE_SIZE", "sum"), ("_ROW_COUNT", "count"), ("_CREATION_TIME", "max"),
                  ("_ORDER", "min")]
    if not by_bucket:
        aggregates.append(("_BUCKET", "first"))
    out = grouped.group_by(keys, use_threads=False).aggregate(aggregates).sort_by("_ORDER_min")
    types = partition_types(table)
    labels = pa.array([partition_text(p[0], types) for p in plan.partitions], pa.string())
    columns = {"partition": labels.take(out["pid"]), "bucket": out["_BUCKET" if by_bucket else "_BUCKET_first"],
               "record_count": out["_ROW_COUNT_sum"], "file_size_in_bytes": out["_FILE_SIZE_sum"],
               "file_count": out["_ROW_COUNT_count"], "last_update_time": out["_CREATION_TIME_max"]}
    return pa.table({f.name: columns[f.name].cast(f.type) for f in schema}, schema=schema)


BUCKETS = pa.schema([
    ("partition", pa.string()), ("bucket", pa.int32()), ("record_count", pa.int64()),
    ("file_size_in_bytes", pa.int64()), ("file_count", pa.int64()), ("last_update_time", TS)])


def buckets(table, snapshot_id: int | None = None) -> pa.Table:
    """``$buckets``: records, bytes and files per partition and bucket."""
    return _groups(table, snapshot_id, True, BUCKETS)


PARTITIONS = pa.schema([
    ("partition", pa.string()), ("record_count", pa.int64()), ("file_size_in_bytes", pa.int64()),
    ("file_count", pa.int64()), ("last_update_time", TS)])


def partitions(table, snapshot_id: int | None = None) -> pa.Table:
    """``$partitions``: records, bytes and files per partition."""
    return _groups(table, snapshot_id, False, PARTITIONS)


TAGS = pa.schema([
    ("tag_name", pa.string()), ("snapshot_id", pa.int64()), ("schema_id", pa.int64()), ("commit_time", TS),
    ("record_count", pa.int64()), ("create_time", TS), ("time_retained", pa.string())])


def _tag_extras(table, name: str) -> dict:
    """``tagCreateTime`` / ``tagTimeRetained`` from the tag file (Paimon writes them beside the snapshot)."""
    try:
        obj = json.loads(table.storage.read_bytes(tag_path(table.path, name)))
    except (IndexCoreError, ValueError, OSError):
        return {}
    created = obj.get("tagCreateTime")
    if isinstance(created, list) and len(created) >= 6:  # Jackson's LocalDateTime: [y, m, d, h, min, s, ns]
        nanos = created[6] if len(created) > 6 else 0
        created = _dt.datetime(*created[:6], microsecond=nanos // 1000)
    elif isinstance(created, str):
        try:
            created = _dt.datetime.fromisoformat(created)
        except ValueError:
            created = None
    else:
        created = None
    retained = obj.get("tagTimeRetained")
    if isinstance(retained, int | float):  # Jackson writes a Duration as seconds
        retained = _java_duration(float(retained))
    return {"create_time": created, "time_retained": None if retained is None else str(retained)}


def _java_duration(seconds: float) -> str:
    """Java's ``Duration.toString()``, as Paimon's ``$tags`` shows ``time_retained``: ``PT24H``, ``PT1M30S``."""
    if seconds == 0:
        return "PT0S"
    hours, rest = divmod(abs(seconds), 3600)
    minutes, secs = divmod(rest, 60)
    sign = "-" if seconds < 0 else ""
    text = "PT" + (f"{sign}{int(hours)}H" if hours else "") + (f"{sign}{int(minutes)}M" if minutes else "")
    if secs:
        text += f"{sign}{secs:.9f}".rstrip("0").rstrip(".") + "S"
    return text


def tags(table, snapshot_id: int | None = None) -> pa.Table:
    """``$tags``: each ``tag/tag-NAME`` file and the snapshot it pins (only those pinning
    ``snapshot_id`` when one is given)."""
    rows = []
    for name, s in table.tags().items():
        if snapshot_id is not None and s.id != snapshot_id:
            continue
        rows.append({"tag_name": name, "snapshot_id": s.id, "schema_id": s.schema_id,
                     "commit_time": _millis_dt(s.time_millis), "record_count": s.total_record_count,
                     **_tag_extras(table, name)})
    return from_rows(rows, TAGS)


BRANCHES = pa.schema([("branch_name", pa.string()), ("create_time", TS)])


def branches(table, snapshot_id: int | None = None) -> pa.Table:
    """``$branches``: each ``branch/branch-NAME`` folder, with its creation time (see ``Storage.created``)."""
    root = getattr(table, "data_root", table.path)
    times = {}
    for entry in table.storage.listdir(posixpath.join(root, "branch")):
        name = posixpath.basename(entry["name"].rstrip("/"))
        times[name] = table.storage.created(entry["name"], entry)
    main = table if root == table.path else _main_of(table)
    return from_rows([{"branch_name": b, "create_time": times.get(BRANCH_PREFIX + b)} for b in main.branches()],
                     BRANCHES)


def _main_of(table):
    return Table(table.storage, table.data_root, table.name.split("$", 1)[0])
