"""``python -m indexcore``: one subcommand per module under :mod:`indexcore.commands`.

Each command module exposes ``register(subparsers)``, adding its parsers with
``set_defaults(func=...)``; ``func(args)`` returns a JSON-able dict, which is printed as JSON
(``--format json``) or as a readable table (the default, for people).
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

from . import commands
from .commands.output import emit
from .errors import IndexCoreError, PredicateError
from .io import parse_storage_options, set_default_storage_options
from .types import parse_timestamp_text


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m indexcore",
                                     description="Explore Apache Paimon index files and warehouses.")
    sub = parser.add_subparsers(dest="command", required=True)
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{commands.__name__}.{info.name}")
        if hasattr(module, "register"):
            module.register(sub)
    for name, action in sub.choices.items():
        if any(a.dest == "snapshot" for a in action._actions):
            action.add_argument("--as-of", dest="as_of", metavar="TIME",
                                help="time travel: the snapshot live at TIME ('2024-06-01 12:00:00', "
                                     "UTC unless it carries an offset, or epoch milliseconds)")
        if any(a.dest in ("warehouse", "file") for a in action._actions):
            action.add_argument("--storage-option", dest="storage_option", action="append", default=[],
                                metavar="KEY=VALUE",
                                help="an fsspec storage option (repeatable), e.g. endpoint_url=http://minio:9000")
        if not any(a.dest == "format" for a in action._actions):
            action.add_argument("--format", choices=["table", "json"], default="table",
                                help="output format (default: table)")
        action.set_defaults(command=name)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        set_default_storage_options(parse_storage_options(getattr(args, "storage_option", None)))
        _resolve_as_of(args)
        result = args.func(args)
    except IndexCoreError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    emit(result, args.format, sys.stdout)
    return int(getattr(args, "exit_code", 0))  # a command sets it to fail after printing (check)


def _resolve_as_of(args: argparse.Namespace) -> None:
    """Turn ``--as-of TIME`` into ``--snapshot N``: the latest snapshot committed by then."""
    text = getattr(args, "as_of", None)
    if text is None:
        return
    if args.snapshot is not None:
        raise IndexCoreError("give either --snapshot or --as-of, not both")
    try:
        millis = int(text) if text.strip().lstrip("-").isdigit() else parse_timestamp_text(text, ltz=True).millis
    except ValueError as exc:
        raise PredicateError(f"--as-of {text!r} is neither a timestamp nor epoch milliseconds") from exc
    from . import open_warehouse

    snapshot = open_warehouse(args.warehouse).table(args.table).snapshot_at(millis)
    if snapshot is None:
        raise IndexCoreError(f"table {args.table} has no snapshot at or before {text}")
    args.snapshot = snapshot.id
