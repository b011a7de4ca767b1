"""Spark commands: ``spark-evaluate``, ``audit`` and ``what-if`` over a whole table.

``spark-evaluate`` prints explain's JSON with ``--verify`` semantics (``files``, ``funnel``,
``violations``, ``problems``) plus ``matching_rows``, ``rows_after_dv``, ``bytes_read`` and
``false_positives`` per index type. ``audit`` prints every failed check under ``findings``
and OK/ERROR/WARNING/NOT_CHECKED counts per table, partition and bucket under ``health``.
``what-if`` builds a hypothetical file index into a scratch directory (never the warehouse)
and prints its total size and, per ``--where``, the files and rows it would prune against the
current indexes. ``--master`` is ``local[*]`` by default, or a cluster / ``sc://`` URL.
"""

from __future__ import annotations

import argparse
import posixpath

from indexcore.cli.arguments import SNAPSHOT_ID
from indexcore.cli.output import ProgressBar, short_result
from indexcore.config import parse_pairs
from indexcore.formats.registry import FILE_INDEX_TYPES
from indexcore.spark.jobs.audit import audit
from indexcore.spark.jobs.evaluate import evaluate
from indexcore.spark.jobs.what_if import what_if


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("warehouse", metavar="WAREHOUSE", help="warehouse root path or URL")
    p.add_argument("table", metavar="DB.TABLE", help="table name as database.table")
    p.add_argument("--master", default=None, metavar="URL",
                   help="Spark master: local[*] (default), local[N], spark://..., sc://... (Spark Connect)")
    p.add_argument("--snapshot", type=SNAPSHOT_ID, default=None, help="snapshot id (default: latest)")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("spark-evaluate", help="evaluate a WHERE condition on every file with Spark, verified",
                       description="Per file: stats and index decisions, rows after deletion vectors, "
                                   "true matching rows, bytes read; false positives and violations.")
    _common(p)
    p.add_argument("--where", required=True, metavar="SQL", help="SQL condition")
    p.set_defaults(func=run_evaluate, brief=brief_evaluate)

    p = sub.add_parser("audit", help="check every index of a table against its data, with Spark",
                       description="Check that file indexes, deletion vectors and hash indexes agree with "
                                   "the data; report health per table, partition and bucket.")
    _common(p)
    p.set_defaults(func=run_audit, brief=brief_audit)

    p = sub.add_parser("what-if", help="size and pruning of a hypothetical file index, with Spark",
                       description="Build a file index that does not exist (into a scratch directory) "
                                   "and report what it would prune per condition.")
    _common(p)
    p.add_argument("--column", required=True, help="column to index")
    p.add_argument("--index-type", required=True, choices=FILE_INDEX_TYPES)
    p.add_argument("--option", action="append", default=[], metavar="K=V",
                   help="index option, e.g. fpp=0.01 or items=1000 (repeatable)")
    p.add_argument("--where", action="append", required=True, metavar="SQL", help="condition (repeatable)")
    p.add_argument("--scratch-dir", default=None, help="where the hypothetical indexes go (default: a temp dir)")
    p.set_defaults(func=run_what_if, brief=brief_what_if)


def _dedupe(problems: list[dict]) -> list[dict]:
    seen, out = set(), []
    for p in problems:
        key = (p.get("path"), p.get("structure"), p.get("reason"))
        if key not in seen:
            seen.add(key)
            out.append(p)
    return out


def run_evaluate(args: argparse.Namespace) -> dict:
    out = evaluate(args.warehouse, args.table, args.where, master=args.master, snapshot_id=args.snapshot,
                   progress=ProgressBar("evaluating"), storage_options=args.storage_options)
    out["problems"] = _dedupe(out["problems"])
    return out


def brief_evaluate(out: dict) -> dict:
    """What people read of ``spark-evaluate``: one short line per file, the funnel, false positives."""
    rows = [{"file": posixpath.basename(f["path"]), "bucket": f["bucket"], "rows": f["row_count"],
             "stats": f["stats_decision"], "index": short_result(f["index_decision"]),
             "rows_after_dv": f["rows_after_dv"], "matching_rows": f["matching_rows"],
             "bytes_read": f["bytes_read"], "read": "yes" if f["skipped_by"] is None else f"no ({f['skipped_by']})"}
            for f in out["files"]]
    return {"table": out["table"], "snapshot": out["snapshot"], "where": out["where"], "files": rows,
            "funnel": [{"stage": k, **v} for k, v in out["funnel"].items()],
            "matching_rows": out["matching_rows"], "bytes_read": out["bytes_read"],
            "false_positives": [{"index_type": k, **v} for k, v in out["false_positives"].items()] or "none",
            "violations": out["violations"] or "none", "problems": out["problems"] or "none"}


def run_audit(args: argparse.Namespace) -> dict:
    return audit(args.warehouse, args.table, master=args.master, snapshot_id=args.snapshot,
                 progress=ProgressBar("auditing"), storage_options=args.storage_options)


def brief_audit(out: dict) -> dict:
    """What people read of ``audit``: the findings and the health per bucket."""
    findings = [{"check": f["check"], "severity": f["severity"], "file": posixpath.basename(f["path"]),
                 "column": f["column"], "index_type": f["index_type"], "message": f["message"]}
                for f in out["findings"]]
    return {"table": out["table"], "snapshot": out["snapshot"], "files_audited": out["files_audited"],
            "checks_passed": out["checks_passed"], "findings": findings or "none",
            "health_by_bucket": out["health"]["bucket"]}


def run_what_if(args: argparse.Namespace) -> dict:
    return what_if(args.warehouse, args.table, args.column, args.index_type, parse_pairs(args.option, "--option"), args.where,
                   master=args.master, scratch_dir=args.scratch_dir, snapshot_id=args.snapshot,
                   progress=ProgressBar("building"), storage_options=args.storage_options)


def brief_what_if(out: dict) -> dict:
    """What people read of ``what-if``: everything but the per-file results."""
    return {k: v for k, v in out.items() if k != "file_results"}
