"""Warehouse commands: ``tables``, ``snapshots``, ``files``, ``bucket-index``.

Every command answers (exit 0) when parts of a table are unreadable, listing them under
``problems``; it fails (exit 2) only when it cannot answer at all (no such warehouse/table).
In ``files``, ``index`` is null for a data file without a file index; otherwise it lists the
container's columns and index types (``columns`` is empty when the container is unreadable,
with the reason under ``index.error``).
"""

from __future__ import annotations

import datetime as dt

from ..errors import IndexCoreError
from ..warehouse import Warehouse
from ..warehouse.inspect import partition_text
from .output import ProgressBar


def _open(args) -> Warehouse:
    return Warehouse(args.warehouse)


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


def _index_info(table, lf) -> dict | None:
    if not lf.has_file_index:
        return None
    from ..formats.container import read_container

    info = {"columns": {}, "embedded": lf.file.embedded_index is not None,
            "path": None if lf.file.embedded_index is not None else lf.index_path}
    try:
        head = read_container(table.file_index_source(lf)).head
    except IndexCoreError as exc:
        info["error"] = str(exc)
        return info
    for e in head.entries:
        info["columns"].setdefault(e.column, []).append(e.index_type)
    return info


def cmd_files(args) -> dict:
    table = _open(args).table(args.table)
    plan = table.plan(args.snapshot)
    types = [f.type for f in table.schema().partition_fields]
    progress = ProgressBar("files")
    files = []
    total = len(plan.files)
    for i, lf in enumerate(plan.files):
        dv = lf.deletion_vector
        files.append({
            "path": lf.path, "partition": partition_text(lf.partition, types), "bucket": lf.bucket,
            "level": lf.file.level, "row_count": lf.file.row_count, "file_size": lf.file.file_size,
            "schema_id": lf.file.schema_id, "index": _index_info(table, lf),
            "deletion_vector": None if dv is None else {"cardinality": dv.cardinality}})
        progress(i + 1, total, lf.file.file_name)
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
    p.add_argument("--snapshot", type=int, default=None, help="snapshot id (default: latest)")
    p.set_defaults(func=cmd_files)

    p = subparsers.add_parser("bucket-index", help="hash (dynamic bucket) index per partition/bucket")
    p.add_argument("warehouse")
    p.add_argument("table", help="database.table")
    p.add_argument("--snapshot", type=int, default=None, help="snapshot id (default: latest)")
    p.set_defaults(func=cmd_bucket_index)
