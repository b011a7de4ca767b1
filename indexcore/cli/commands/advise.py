"""``advise``, ``diff`` and ``check``: a workload's view of a table's file indexes.

``advise`` prints ``{"existing": [...], "candidates": [...], "statements": [...]}`` (plus the
queries it replayed, the ones it skipped and problems); ``--details`` adds every query's
explain and, per index and candidate, the files behind each figure. ``diff`` compares two
snapshots; ``check`` tests a rules file and exits 1 when a rule fails (JSON by default, for
pipelines). Workload and rules formats: :mod:`indexcore.analysis.workload`,
:mod:`indexcore.analysis.check`.
"""

from __future__ import annotations

import argparse
import math
from functools import partial

from indexcore.analysis.advise import DEFAULT_SAMPLE, EXACT_FILES, MIN_SCORE, advise
from indexcore.analysis.advise_statements import advice_summary
from indexcore.analysis.check import check, read_rules
from indexcore.analysis.diff import diff
from indexcore.analysis.workload import read_workload
from indexcore.cli.arguments import COUNT, SNAPSHOT_ID
from indexcore.cli.output import ProgressBar
from indexcore.config import variable
from indexcore.errors import PredicateError
from indexcore.spark.jobs.metadata import metadata_master
from indexcore.spark.jobs.planned import advise_on_spark
from indexcore.warehouse import Warehouse


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("warehouse", metavar="WAREHOUSE", help="warehouse root path or URL")
    p.add_argument("table", metavar="DB.TABLE", help="table name as database.table")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("advise", help="which file indexes earn their bytes for a query workload",
                       description="Replay explain for every query of a workload: what each existing index "
                                   "skips and its verdict, hypothetical candidates ranked by benefit for cost, "
                                   "and the ALTER TABLE / CALL statements to apply them.")
    _common(p)
    p.add_argument("--workload", required=True, metavar="FILE",
                   help="queries: SELECTs or bare WHERE conditions, one per line or ';'-separated; "
                        "'-- weight: N' or 'N<TAB>query' for a weight, '-- name: X' for a name")
    p.add_argument("--sample", type=COUNT, default=None, metavar="N",
                   help=f"measure candidates on N files per query, drawn from the files it still reaches "
                        f"(0 = every file; default: every file up to {EXACT_FILES:,} per query, else "
                        f"{DEFAULT_SAMPLE}); sampled figures carry their sample and a 95%% interval")
    p.add_argument("--min-score", type=float, default=MIN_SCORE, metavar="X",
                   help=f"recommend no candidate scoring below X weighted bytes skipped per byte stored "
                        f"(default {MIN_SCORE})")
    p.add_argument("--drop-unused", action="store_true",
                   help="also drop configured indexes no query of the workload filters on (kept by default)")
    p.add_argument("--master", default=None, metavar="URL",
                   help="read the index heads (census), explain every query and build candidates for "
                        "every file on Spark")
    p.add_argument("--snapshot", type=SNAPSHOT_ID, default=None, help="snapshot id (default: latest)")
    p.add_argument("--dialect", choices=["spark", "flink"], default="spark", help="statement dialect")
    p.add_argument("--details", action="store_true", help=f"add per-query explains and per-file evidence (at most {variable('details_files')} files each, with the total)")
    p.set_defaults(func=run_advise)

    p = sub.add_parser("diff", help="what changed between two snapshots: files, indexes, DVs, buckets, pruning",
                       description="Files added and removed, index changes per file, files that lost a "
                                   "configured index, DV growth and bucket balance per partition and bucket, "
                                   "and with --workload the pruning of every query before and after.")
    _common(p)
    p.add_argument("--from", dest="from_snapshot", type=SNAPSHOT_ID, required=True, metavar="S1", help="older snapshot id")
    p.add_argument("--to", dest="to_snapshot", type=SNAPSHOT_ID, default=None, metavar="S2",
                   help="newer snapshot id (default: latest)")
    p.add_argument("--workload", default=None, metavar="FILE", help="queries to compare pruning for")
    p.set_defaults(func=run_diff)

    p = sub.add_parser("check", help="test rules on a table (for CI); exit 1 when one fails",
                       description="Check rules such as 'every live file carries the configured indexes', "
                                   "'DV density per bucket below X', 'no bloom above fpp Y', 'pruning of a "
                                   "query not worse than snapshot S'. Prints a JSON report; exit code 1 when "
                                   "a rule fails, 2 on bad input (an empty rules file, a missing or non-finite "
                                   "parameter, bad SQL, an unknown snapshot).")
    _common(p)
    p.add_argument("--rules", required=True, metavar="FILE", help="rules file (text, one rule a line, or JSON)")
    p.add_argument("--snapshot", type=SNAPSHOT_ID, default=None, help="snapshot id to check (default: latest)")
    p.add_argument("--format", choices=["table", "json"], default="json", help="output format (default: json)")
    p.set_defaults(func=run_check)


def run_advise(args: argparse.Namespace, table=None) -> dict:
    """``advise``'s JSON; ``table``: ``args.table`` opened already (a caller that looks at what it
    kept afterwards), else opened here."""
    if args.sample is not None and args.sample < 0:
        raise PredicateError(f"--sample must be 0 (every file) or a number of files, got {args.sample}")
    if not math.isfinite(args.min_score) or args.min_score < 0:
        raise PredicateError(f"--min-score must be a finite number >= 0, got {args.min_score}")
    queries = read_workload(args.workload)
    if not queries:
        raise PredicateError(f"workload {args.workload} holds no query (it is empty or holds only comments)")
    if table is None:
        table = Warehouse(args.warehouse, storage_options=args.storage_options).table(args.table)
    census_master = metadata_master(table, args.snapshot, args.master)
    # on Spark (asked, or past the operator's file count): the census, the plan's columns and every
    # query's explain come from Spark jobs (this process plans nothing); asked, the candidates too
    on_spark = {} if not census_master else advise_on_spark(
        table, args.warehouse, census_master, args.snapshot, measure=bool(args.master), progress_of=ProgressBar)
    advice = advise(table, queries, snapshot_id=args.snapshot, sample=args.sample, dialect=args.dialect,
                    progress=ProgressBar("advising"), min_score=args.min_score, drop_unused=args.drop_unused,
                    details=args.details, **on_spark)
    args.brief = partial(brief_advise, summary=advice_summary(advice))
    return advice.to_json(details=args.details)


def brief_advise(out: dict, summary: dict) -> dict:
    """What people read of ``advise``: per query the files read and its problems, per index and
    candidate one row."""
    view = {"table": out["table"], "snapshot": out["snapshot"],
            "queries": [{"query": q["query"], "weight": q["weight"], "where": q["where"],
                         "files_read": q.get("funnel", {}).get("read", {}).get("files"),
                         "problems": "; ".join(filter(None, [q.get("error", "")] + q.get("notes", []))) or "-"}
                        for q in out["queries"]] or "none",
            **{k: v or "none" for k, v in summary.items()},
            "statements": out["statements"] or "none"}
    if out.get("column_notes"):
        view["column_notes"] = [n["message"] for n in out["column_notes"]]
    if out["skipped_queries"]:
        view["skipped_queries"] = out["skipped_queries"]
    view["problems"] = out["problems"] or "none"
    return view


def run_diff(args: argparse.Namespace) -> dict:
    queries = read_workload(args.workload) if args.workload else None
    table = Warehouse(args.warehouse, storage_options=args.storage_options).table(args.table)
    return diff(table, args.from_snapshot, args.to_snapshot, queries, progress=ProgressBar("diffing"))


def run_check(args: argparse.Namespace) -> dict:
    rules = read_rules(args.rules)
    table = Warehouse(args.warehouse, storage_options=args.storage_options).table(args.table)
    report = check(table, rules, snapshot_id=args.snapshot)
    if report["errors"]:  # a rule that cannot be evaluated is bad input, not a failed rule
        args.exit_code = 2
    elif not report["passed"]:
        args.exit_code = 1
    return report
