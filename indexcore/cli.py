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
from .errors import IndexCoreError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m indexcore",
                                     description="Explore Apache Paimon index files and warehouses.")
    sub = parser.add_subparsers(dest="command", required=True)
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{commands.__name__}.{info.name}")
        if hasattr(module, "register"):
            module.register(sub)
    for name, action in sub.choices.items():
        if not any(a.dest == "format" for a in action._actions):
            action.add_argument("--format", choices=["table", "json"], default="table",
                                help="output format (default: table)")
        action.set_defaults(command=name)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        result = args.func(args)
    except IndexCoreError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    emit(result, args.format, sys.stdout)
    return 0
