"""``search``: the table's rows a vector or full-text global index finds.

``search WH db.t --vector '[0.1, 0.2, ...]' --k 10 [--width N]`` searches the vector indexes
(paimon-vindex); ``--recall`` adds recall@k against exact search per width on a sample of the
table's vectors (``--sample``, ``--target``). ``search WH db.t --text 'words' [--k 10]``
searches the full-text indexes (paimon-ftindex); ``--check`` compares every match with a scan of
the text column.
"""

from __future__ import annotations

import argparse

from indexcore.analysis.full_text import check_term, search_text
from indexcore.analysis.vector_search import (
    DEFAULT_SAMPLE,
    DEFAULT_TARGET,
    parse_vector,
    recall_curve,
    search_vectors,
)
from indexcore.errors import IndexCoreError
from indexcore.views import to_records
from indexcore.warehouse import Warehouse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("search", help="search a table's vector or full-text global indexes")
    p.add_argument("warehouse", metavar="WAREHOUSE", help="warehouse root path or URL")
    p.add_argument("table", metavar="DB.TABLE", help="table name as database.table")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--vector", metavar="JSON", help="query vector as a JSON list, e.g. '[0.1, 0.2, 0.3]'")
    what.add_argument("--text", metavar="WORDS", help="full-text query: words (any of them) or the library's JSON query")
    p.add_argument("--k", type=int, default=10, help="rows to return (default 10)")
    p.add_argument("--width", type=int, default=None,
                   help="search width: lists probed (IVF nprobe) or DiskANN l_search (default: the library's)")
    p.add_argument("--field", default=None, help="the indexed column (default: every indexed column)")
    p.add_argument("--snapshot", type=int, default=None, help="snapshot id (default: latest)")
    p.add_argument("--recall", action="store_true", help="vector: also recall@k by width against exact search")
    p.add_argument("--sample", type=int, default=DEFAULT_SAMPLE, help="vector recall: queries sampled (default 100)")
    p.add_argument("--target", type=float, default=DEFAULT_TARGET, help="vector recall: recall to reach (default 0.95)")
    p.add_argument("--check", action="store_true", help="text: compare every match with a scan of the text column")
    p.set_defaults(func=run_search)


def run_search(args: argparse.Namespace) -> dict:
    if args.k < 1:
        raise IndexCoreError("--k must be at least 1")
    table = Warehouse(args.warehouse, storage_options=args.storage_options).table(args.table)
    out: dict = {"table": args.table}
    if args.vector is not None:
        result = search_vectors(table, parse_vector(args.vector), args.k, args.width, args.snapshot, args.field)
        out.update(k=args.k, width=args.width, rows=to_records(result)["rows"])
        if args.recall:
            out["recall"] = recall_curve(table, args.k, args.sample, target=args.target,
                                         snapshot_id=args.snapshot, field=args.field)
        return out
    result = search_text(table, args.text, args.k, args.snapshot, args.field)
    out.update(text=args.text, k=args.k, rows=to_records(result)["rows"])
    if args.check:
        out["check"] = check_term(table, args.text, args.snapshot, args.field)
    return out
