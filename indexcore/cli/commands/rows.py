"""``rows``: the rows a batch read of a table returns (merged, deletion vectors applied)."""

from __future__ import annotations

import argparse

from indexcore.cli.arguments import COUNT, SNAPSHOT_ID
from indexcore.cli.output import ProgressBar
from indexcore.errors import IndexCoreError, PredicateError
from indexcore.expr import parse_where
from indexcore.types.values import json_value
from indexcore.warehouse import Warehouse
from indexcore.warehouse.data import read_table, table_rows


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("rows", help="read a table's rows like Paimon's batch read")
    p.add_argument("warehouse", metavar="WAREHOUSE", help="warehouse root path or URL")
    p.add_argument("table", metavar="DB.TABLE", help="table name as database.table")
    p.add_argument("--snapshot", type=SNAPSHOT_ID, default=None, help="snapshot id (default: latest)")
    p.add_argument("--where", default=None, metavar="SQL", help="SQL condition, e.g. \"f1 = 10 AND f0 IS NOT NULL\"")
    p.add_argument("--limit", type=COUNT, default=None, help="at most this many rows")
    p.set_defaults(func=run_rows)


def run_rows(args: argparse.Namespace) -> dict:
    table = Warehouse(args.warehouse, storage_options=args.storage_options).table(args.table)
    schema = table.read_schema(args.snapshot, table.snapshot(args.snapshot) if args.snapshot is not None else None)
    predicate = parse_where(args.where, schema.row_type()) if args.where else None
    if args.limit is not None and args.limit < 0:
        raise PredicateError("--limit must not be negative")
    problems: list = []
    result = read_table(table, args.snapshot, predicate=predicate, limit=args.limit,
                        progress=ProgressBar("reading"), problems=problems)
    unreadable = [p for p in problems if p.structure == "data file"]
    if unreadable and result.num_rows == 0 and len(unreadable) >= len(table.plan(args.snapshot).files):
        raise IndexCoreError("no data file could be read: " + "; ".join(
            f"{p.path}: {p.reason}" for p in unreadable[:3]))
    types = schema.row_type()
    rows = [{k: json_value(types[k], v) for k, v in row.items()} for row in table_rows(result, schema)]
    out: dict = {"table": args.table, "rows": rows}
    if problems:
        seen, unique = set(), []
        for p in problems:
            key = (p.path, p.structure, p.reason)
            if key not in seen:
                seen.add(key)
                unique.append(p.to_dict())
        out["problems"] = unique
    return out
