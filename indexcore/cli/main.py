"""``python -m indexcore`` (or the ``indexcore`` script): one subcommand per module under
:mod:`indexcore.cli.commands`, listed in :data:`COMMANDS`.

Each command module exposes ``register(subparsers)``, adding its parsers with
``set_defaults(func=...)``; ``func(args)`` returns a JSON-able dict, which
:func:`indexcore.cli.output.emit` prints as JSON, CSV or a readable table
(``--format``). A table argument may name a branch, ``db.table$branch_NAME``; every command
that takes ``--snapshot N`` also takes ``--tag NAME`` and ``--as-of TIME``.
"""

from __future__ import annotations

import argparse
import os
import sys

import indexcore.analysis  # noqa: F401  (registers the derived views $health, ... for `show`)
from indexcore import open_warehouse
from indexcore.cli.commands import (
    advise,
    explain,
    files,
    health,
    probe,
    rows,
    sample,
    search,
    show,
    spark,
    warehouse,
)
from indexcore.cli.output import FORMATS, emit, terminal_text
from indexcore.config import tune_gc
from indexcore.errors import IndexCoreError, PredicateError
from indexcore.io import parse_storage_options
from indexcore.types import parse_timestamp_text
from indexcore.views import parse_identifier

# every command module, in the order their subcommands are listed (``register(subparsers)`` each)
COMMANDS = (advise, explain, files, health, probe, rows, sample, search, show, spark, warehouse)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="indexcore",
                                     description="Explore Apache Paimon index files and warehouses.")
    sub = parser.add_subparsers(dest="command", required=True)
    for module in COMMANDS:
        module.register(sub)
    for name, action in sub.choices.items():
        if any(a.dest == "snapshot" for a in action._actions):
            action.add_argument("--tag", dest="tag", metavar="NAME",
                                help="time travel: the snapshot the tag NAME pins")
            action.add_argument("--as-of", dest="as_of", metavar="TIME",
                                help="time travel: the snapshot live at TIME ('2024-06-01 12:00:00', "
                                     "UTC unless it carries an offset, or epoch milliseconds)")
        if any(a.dest in ("warehouse", "file") for a in action._actions):
            action.add_argument("--storage-option", dest="storage_option", action="append", default=[],
                                metavar="KEY=VALUE",
                                help="an fsspec storage option (repeatable), e.g. endpoint_url=http://minio:9000")
        if not any(a.dest == "format" for a in action._actions):
            action.add_argument("--format", choices=FORMATS, default="table",
                                help="output format (default: table)")
            action.add_argument("--csv-raw", action="store_true",
                                help="CSV: write cells that start with = + - @ TAB CR as they are (by "
                                     "default a ' is put before them, so a spreadsheet does not run them)")
        action.set_defaults(command=name)
    return parser


def main(argv: list[str] | None = None) -> int:
    tune_gc()
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        # passed explicitly to every Warehouse, file and Spark job a command opens
        args.storage_options = parse_storage_options(getattr(args, "storage_option", None))
        _resolve_snapshot(args)
        result = args.func(args)
    except IndexCoreError as exc:
        print(f"error: {terminal_text(str(exc))}", file=sys.stderr)  # names from a warehouse: no escapes
        if exc.detail:  # what a storage backend said: the operator's own shell may see it
            print(f"  detail: {terminal_text(exc.detail)}", file=sys.stderr)
        return 2
    try:
        emit(result, args.format, sys.stdout, getattr(args, "brief", None), getattr(args, "csv_raw", False))
        sys.stdout.flush()
    except BrokenPipeError:  # the reader (``| head``) went away: stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return int(getattr(args, "exit_code", 0))  # a command sets it to fail after printing (check)


def _resolve_snapshot(args: argparse.Namespace) -> None:
    """Turn ``--tag NAME`` or ``--as-of TIME`` into ``--snapshot N``."""
    tag, text = getattr(args, "tag", None), getattr(args, "as_of", None)
    if tag is None and text is None:
        return
    if sum(x is not None for x in (args.snapshot, tag, text)) > 1:
        raise IndexCoreError("give one of --snapshot, --tag and --as-of")
    table = open_warehouse(args.warehouse, storage_options=args.storage_options).table(parse_identifier(args.table).table_ref)
    if tag is not None:
        args.snapshot = table.tag(tag).id
        return
    try:
        millis = int(text) if text.strip().lstrip("-").isdigit() else parse_timestamp_text(text, ltz=True).millis
    except ValueError as exc:
        raise PredicateError(f"--as-of {text!r} is neither a timestamp nor epoch milliseconds") from exc
    snapshot = table.snapshot_at(millis)
    if snapshot is None:
        raise IndexCoreError(f"table {args.table} has no snapshot at or before {text}")
    args.snapshot = snapshot.id
