"""``probe``: evaluate SQL conditions on one index blob or on a whole file-index container.

JSON output is ``{"results": [R, ...]}``, one ``R`` per ``--where`` in order: ``"SKIP"``,
``"REMAIN"`` or ``{"rows": [sorted row positions]}``. An empty bitmap prints as
``{"rows": []}`` (what the index answered; Paimon treats it like SKIP).
"""

from __future__ import annotations

import argparse

from indexcore.config import parse_pairs
from indexcore.errors import IndexCoreError, PredicateError
from indexcore.expr import parse_where, predicate_to_sql
from indexcore.formats.container import read_container
from indexcore.formats.registry import FILE_INDEX_TYPES
from indexcore.io import open_file
from indexcore.scan.file_index import FileIndexPredicate, blob_predicate, result_to_json
from indexcore.types import DataType, parse_type

SHOWN_ROWS = 20


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "probe", help="evaluate SQL conditions on an index blob or a file-index (.index) file",
        description="Evaluate WHERE conditions with Paimon's file-index semantics. Either a single "
                    "index blob (--index-type and --column-type; the column is named 'c' unless "
                    "--column) or a whole file-index container (--schema).")
    p.add_argument("file", metavar="FILE", help="index blob or .index file (path or fsspec URL)")
    p.add_argument("--where", action="append", required=True, metavar="SQL",
                   help="a SQL condition, e.g. \"c = 5 AND c IS NOT NULL\" (repeatable)")
    p.add_argument("--index-type", choices=sorted(FILE_INDEX_TYPES), help="the blob's index type")
    p.add_argument("--column-type", metavar="SQLTYPE", help="the indexed column's Paimon type, e.g. INT")
    p.add_argument("--column", default="c", help="the blob's column name (default: c)")
    p.add_argument("--schema", metavar="COLUMNS",
                   help="the data file's row type for a container, e.g. \"k INT, v STRING\"")
    p.add_argument("--option", action="append", default=[], metavar="K=V",
                   help="index option handed to the readers (repeatable)")
    p.set_defaults(func=run, brief=brief)


def parse_schema(text: str) -> dict[str, DataType]:
    """``"k INT, v DECIMAL(10, 2)"`` to ``{name: type}``; commas inside ``()``/``<>`` stay in the type."""
    parts, depth, current = [], 0, []
    for ch in text:
        if ch in "(<":
            depth += 1
        elif ch in ")>":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    parts.append("".join(current))
    schema: dict[str, DataType] = {}
    for part in parts:
        part = part.strip()
        if not part:
            continue
        if part.startswith("`"):
            end = part.find("`", 1)
            if end < 0:
                raise IndexCoreError(f"unclosed quote in schema column {part!r}")
            name, type_text = part[1:end], part[end + 1:]
        else:
            name, _, type_text = part.partition(" ")
        if not name or not type_text.strip():
            raise IndexCoreError(f"schema column {part!r} needs a name and a type, e.g. \"k INT\"")
        if name in schema:
            raise IndexCoreError(f"column {name!r} appears twice in the schema")
        schema[name] = parse_type(type_text.strip())
    if not schema:
        raise IndexCoreError("the schema lists no columns")
    return schema


def _describe(result) -> str:
    """A JSON file-index result (``"SKIP"``, ``"REMAIN"``, ``{"rows": [...]}``) for people."""
    if isinstance(result, dict):
        n = len(result["rows"])
        return f"{n} row{'s' if n != 1 else ''}" if n else "0 rows (skip)"
    return str(result)


def run(args: argparse.Namespace) -> dict:
    options = parse_pairs(args.option, "--option")
    blob_mode = args.index_type is not None or args.column_type is not None
    if blob_mode and args.schema:
        raise IndexCoreError("give either --index-type/--column-type (one blob) or --schema (a container)")
    if blob_mode:
        if not (args.index_type and args.column_type):
            raise IndexCoreError("a single blob needs both --index-type and --column-type")
        schema = {args.column: parse_type(args.column_type)}
    elif args.schema:
        schema = parse_schema(args.schema)
    else:
        raise IndexCoreError("say what FILE is: --index-type and --column-type for one index blob, "
                             "or --schema for a file-index container")
    predicates = []
    for sql in args.where:
        try:
            predicates.append(parse_where(sql, schema))
        except PredicateError as exc:
            raise PredicateError(f"--where {sql!r}: {exc.message}") from exc

    source = open_file(args.file, storage_options=args.storage_options)
    if blob_mode:
        evaluator = blob_predicate(args.index_type, schema[args.column], source, options, args.column)
    else:
        evaluator = FileIndexPredicate(read_container(source), schema, lambda _col, _typ: options)
    results = [evaluator.evaluate(pred) for pred in predicates]

    return {"file": args.file, "bytes_read": source.stats.bytes_read, "requests": source.stats.requests,
            "where": list(args.where), "predicates": [predicate_to_sql(p, schema) for p in predicates],
            "results": [result_to_json(r) for r in results]}


def brief(out: dict) -> dict:
    """What people read of ``probe``: per condition, the result and the first rows it keeps."""
    rows = []
    for sql, pred, result in zip(out["where"], out["predicates"], out["results"], strict=True):
        kept = result["rows"] if isinstance(result, dict) else None
        shown = "" if kept is None else ", ".join(map(str, kept[:SHOWN_ROWS])) + (
            ", ..." if len(kept) > SHOWN_ROWS else "")
        rows.append({"where": sql, "predicate": pred, "result": _describe(result), "rows": shown})
    return {"file": out["file"], "bytes_read": out["bytes_read"], "requests": out["requests"], "results": rows}
