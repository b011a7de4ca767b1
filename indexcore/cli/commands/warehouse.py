"""Warehouse commands: ``tables``, ``snapshots``, ``files``, ``bucket-index``.

Every command answers (exit 0) when parts of a table are unreadable, listing them under
``problems``; it fails (exit 2) only when it cannot answer at all (no such warehouse/table).
In ``files``, ``index`` is null for a data file without a file index; otherwise it lists the
container's columns and index types (``columns`` is empty when the container is unreadable,
with the reason under ``index.error``).
"""

from __future__ import annotations

import datetime as dt

from indexcore.cli.arguments import SNAPSHOT_ID
from indexcore.errors import IndexCoreError, StorageError
from indexcore.views import partition_text
from indexcore.views.census_blobs import iter_file_indexes
from indexcore.views.common import dv_cardinality, partition_types
from indexcore.warehouse import Warehouse


def _open(args) -> Warehouse:
    return Warehouse(args.warehouse, storage_options=args.storage_options)


def _problems(*lists) -> list[dict]:
    seen, out = set(), []
    for items in lists:
        for p in items:
            key = (p.path, p.structure, p.reason)
            if key not in seen:
                seen.add(key)
                out.append(p.to_dict())
    return out


def cmd_tables(args) -> dict:
    wh = _open(args)
    if not wh.storage.exists(wh.storage.root):
        raise StorageError("no such warehouse", file=wh.url)
    return {"tables": wh.tables(), "problems": _problems(wh.problems)}


def cmd_snapshots(args) -> dict:
    table = _open(args).table(args.table)
    snaps = [{"id": s.id, "schema_id": s.schema_id, "commit_kind": s.commit_kind,
              "time": _utc(s.time_millis), "time_millis": s.time_millis, "commit_user": s.commit_user,
              "commit_identifier": s.commit_identifier, "total_record_count": s.total_record_count,
              "delta_record_count": s.delta_record_count, "index_manifest": s.index_manifest}
             for s in table.snapshots()]
    return {"table": args.table, "snapshots": snaps, "problems": _problems(table.problems)}


def _utc(millis: int | None) -> str | None:
    """A commit time for people: ISO 8601 in UTC, to the millisecond."""
    if millis is None:
        return None
    moment = dt.datetime.fromtimestamp(millis / 1000, tz=dt.UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def cmd_files(args) -> dict:
    """Live files of the plan, each with its file-index container's columns (the census of
    :func:`~indexcore.views.common.iter_file_indexes`: heads only, no blob decoded, with the
    indexes it cannot use) and its deletion vector; without the ``$files`` view's stats text."""
    table = _open(args).table(args.table)
    plan = table.plan(args.snapshot)
    types = partition_types(table)
    indexes: dict[str, dict] = {}
    for blob in iter_file_indexes(table, args.snapshot):
        lf = blob.file
        info = indexes.get(lf.path)
        if info is None:
            info = indexes[lf.path] = {"columns": {}, "embedded": blob.embedded,
                                       "path": None if blob.embedded else lf.index_path}
        if blob.column is None:  # the container itself cannot be read
            info["error"] = blob.error
            continue
        info["columns"].setdefault(blob.column, []).append(blob.index_type)
        if blob.error is not None:  # an index the read path cannot use (unknown kind, column gone)
            info.setdefault("unusable", []).append({"column": blob.column, "index_type": blob.index_type,
                                                    "error": blob.error})
    files = []
    for lf in plan.files:
        m = lf.file
        dv = dv_cardinality(table, lf)
        files.append({
            "path": lf.path, "partition": partition_text(lf.partition, types), "bucket": lf.bucket,
            "level": m.level, "row_count": m.row_count, "file_size": m.file_size, "schema_id": m.schema_id,
            "index": indexes.get(lf.path), "deletion_vector": None if dv is None else {"cardinality": dv}})
    return {"table": args.table, "snapshot": plan.snapshot.id if plan.snapshot else None,
            "files": files, "problems": _problems(plan.problems, table.problems)}


def cmd_bucket_index(args) -> dict:
    table = _open(args).table(args.table)
    plan = table.plan(args.snapshot)
    types = [f.type for f in table.schema().partition_fields]
    buckets, problems = [], _problems(plan.problems, table.problems)
    for (partition, bucket), entries in sorted(plan.hash_indexes.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])):
        hashes: list[int] = []
        for entry in entries:
            try:
                hashes.extend(int(h) for h in table.hash_index(entry).hashes)
            except IndexCoreError as exc:
                problems.append({"path": entry.index_file.file_name, "structure": "hash index",
                                 "reason": str(exc)})
        buckets.append({"partition": partition_text(partition, types), "bucket": bucket,
                        "hashes": hashes})
    return {"table": args.table, "buckets": buckets, "problems": problems}


def register(subparsers) -> None:
    p = subparsers.add_parser("tables", help="list the tables of a warehouse")
    p.add_argument("warehouse", help="warehouse root: a local path or an fsspec URL")
    p.set_defaults(func=cmd_tables)

    p = subparsers.add_parser("snapshots", help="list a table's snapshots")
    p.add_argument("warehouse")
    p.add_argument("table", help="database.table")
    p.set_defaults(func=cmd_snapshots)

    p = subparsers.add_parser("files", help="live data files of a snapshot, with indexes and DVs")
    p.add_argument("warehouse")
    p.add_argument("table", help="database.table")
    p.add_argument("--snapshot", type=SNAPSHOT_ID, default=None, help="snapshot id (default: latest)")
    p.set_defaults(func=cmd_files)

    p = subparsers.add_parser("bucket-index", help="hash (dynamic bucket) index per partition/bucket")
    p.add_argument("warehouse")
    p.add_argument("table", help="database.table")
    p.add_argument("--snapshot", type=SNAPSHOT_ID, default=None, help="snapshot id (default: latest)")
    p.set_defaults(func=cmd_bucket_index)
