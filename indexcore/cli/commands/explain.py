"""``explain``: how Paimon's read path prunes a table's data files for a WHERE condition.

JSON output: ``{"table", "snapshot", "where", "files": [...], "funnel": {...}, "violations":
[...], "problems": [...]}``. Each file lists its decisions per stage (``partition_decision``,
``bucket_decision``, ``level_decision``, ``stats_decision``: ``"REMAIN"`` or ``"SKIP"``);
``raw_index_result`` (what the file index answered) and ``index_decision`` (what the read
path makes of it) are ``"REMAIN"``, ``"SKIP"`` or ``{"rows": [positions]}`` as in ``probe``,
or null when the index was not consulted. ``bucket_decision`` is SKIP where the condition pins
every bucket key of a fixed-bucket table to values that hash to other buckets.
``matching_rows`` (per file and in total) appears with ``--verify``, which reads the data and lists every wrongly
pruned file or dropped row under ``violations`` (``path``, ``column``, ``reason``). The funnel
counts files and rows kept after each stage: all, partition, bucket, level, stats, global_index
(row-tracking tables: the rows the BTree / bitmap global indexes keep, per file, in
``global_index_decision`` / ``global_index_rows``), index, read
(rows after deletion vectors and index bitmaps) and, with ``--verify``, matching (rows of the
files read that satisfy the condition, before any primary-key merge). Each stage also carries
``bytes`` (data bytes kept), ``files_skipped`` / ``rows_skipped`` / ``bytes_skipped`` (what it
took away from what the stage before kept) and ``index_bytes`` / ``index_requests`` (file
indexes at ``index``, global indexes at ``global_index``, deletion vectors of the files read at
``read``). Each file also lists ``file_size``, ``dv_bytes`` and ``stats``: per column of the
condition, the ``min`` / ``max`` / ``null_count`` the stats stage tested. Unreadable parts are
listed under ``problems``.
"""

from __future__ import annotations

import argparse
import posixpath

from indexcore.cli.arguments import BUCKET, SNAPSHOT_ID
from indexcore.cli.output import ProgressBar, short_result
from indexcore.config import variable
from indexcore.scan import explain
from indexcore.spark.jobs.metadata import metadata_master, spark_explain
from indexcore.warehouse import Warehouse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("explain", help="explain file pruning for a WHERE condition, file by file",
                       description="Explain which data files Paimon's read path prunes for a condition "
                                   "(partition, bucket, level, stats, file index), with --verify ground truth.")
    p.add_argument("warehouse", metavar="WAREHOUSE", help="warehouse root path or URL")
    p.add_argument("table", metavar="DB.TABLE", help="table name as database.table")
    p.add_argument("--where", required=True, metavar="SQL", help="SQL condition, e.g. \"f0 = 'Bob' AND f1 > 3\"")
    p.add_argument("--verify", action="store_true",
                   help="read the data: count matching rows per file and flag wrongly pruned files/rows")
    p.add_argument("--snapshot", type=SNAPSHOT_ID, default=None, help="snapshot id (default: latest)")
    p.add_argument("--partition", default=None, metavar="K=V[,K=V]", help="only files of this partition")
    p.add_argument("--bucket", type=BUCKET, default=None, help="only files of this bucket")
    p.add_argument("--all-files", action="store_true",
                   help="consult the file index even for files pruned by an earlier stage")
    p.add_argument("--master", default=None, metavar="URL",
                   help="plan and decide the files in Spark tasks, --verify reading their data there "
                        "(local[2], spark://..., sc://...); by "
                        "default in this process, or on Spark past " + variable("spark_metadata_files") + " live files")
    p.set_defaults(func=run_explain, brief=brief)


def run_explain(args: argparse.Namespace) -> dict:
    table = Warehouse(args.warehouse, storage_options=args.storage_options).table(args.table)
    master = metadata_master(table, args.snapshot, args.master)
    if master:
        result = spark_explain(args.warehouse, args.table, args.where, master=master, snapshot_id=args.snapshot,
                               progress=ProgressBar("explaining on Spark"), storage_options=args.storage_options,
                               partition=args.partition, bucket=args.bucket, verify=args.verify,
                               all_files=args.all_files)
    else:
        result = explain(table, args.where, snapshot_id=args.snapshot, partition=args.partition,
                         bucket=args.bucket, verify=args.verify, progress=ProgressBar("explaining"),
                         all_files=args.all_files)
    out = result.to_json()
    seen, problems = set(), []
    for p in out["problems"]:
        key = (p["path"], p["structure"], p["reason"])
        if key not in seen:
            seen.add(key)
            problems.append(p)
    out["problems"] = problems
    if result.verified:
        out["matching_rows"] = sum(f.get("matching_rows") or 0 for f in out["files"])
    return out


def brief(out: dict) -> dict:
    """What people read of an explain result: one short line per file and the funnel."""
    verified = "matching_rows" in out
    rows = []
    for f in out["files"]:
        row = {"file": posixpath.basename(f["path"]),
               "partition": f["partition_text"],
               "bucket": f["bucket"], "level": f["level"], "rows": f["row_count"],
               "partition_decision": f["partition_decision"], "bucket_decision": f["bucket_decision"],
               "level_decision": f["level_decision"],
               "stats": f["stats_decision"],
               **({"global_index": f"{f['global_index_decision']} ({f['global_index_rows']} rows)"}
                  if f["global_index_decision"] is not None else {}),
               "index": short_result(f["raw_index_result"]), "decision": short_result(f["index_decision"]),
               "stats_of": "; ".join(f"{c}: {v['min']}..{v['max']}, {v['null_count']} nulls"
                                     for c, v in f.get("stats", {}).items()),
               "rows_after_dv": f["rows_after_dv"], "bytes_read": f["bytes_read"],
               "read": "yes" if f["skipped_by"] is None else f"no ({f['skipped_by']})"}
        if verified:
            row["matching_rows"] = f["matching_rows"]
        rows.append(row)
    view = {"table": out["table"], "snapshot": out["snapshot"], "where": out["where"], "files": rows,
            "funnel": [{"stage": k, **v} for k, v in out["funnel"].items()]}
    if verified:
        view["violations"] = out["violations"] or "none"
    view["problems"] = out["problems"] or "none"
    return view
