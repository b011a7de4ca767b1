"""``python -m indexcore sample build DIR``: build the sample warehouse with the Spark pipeline."""

from __future__ import annotations

import argparse


def _build(args: argparse.Namespace) -> dict:
    from ..sample import build_sample

    return build_sample(args.directory, seed=args.seed, master=args.master)


def register(subparsers) -> None:
    from ..sample import DEFAULT_SEED

    parser = subparsers.add_parser("sample", help="build the sample Paimon warehouse")
    sub = parser.add_subparsers(dest="sample_command", required=True)
    build = sub.add_parser("build", help="write the sample tables into DIR (rebuilds tables indexcore made)")
    build.add_argument("directory", metavar="DIR")
    build.add_argument("--seed", type=int, default=DEFAULT_SEED, help="seed of rows and file names")
    build.add_argument("--master", default=None, help="Spark master (default local[*]; sc:// for Connect)")
    build.add_argument("--format", choices=["table", "json"], default="table", help="output format")
    build.set_defaults(func=_build)
