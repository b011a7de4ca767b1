"""``python -m indexcore sample build DIR``: build the sample warehouse with the Spark pipeline.

``--scale small`` (default) is the six-table demo warehouse; ``--scale large`` the
production-size one of :mod:`indexcore.spark.sample_large` (``--files N`` live data files).
"""

from __future__ import annotations

import argparse

from indexcore.cli.arguments import COUNT, SEED
from indexcore.cli.output import ProgressBar
from indexcore.errors import IndexCoreError
from indexcore.spark.sample import DEFAULT_SEED, build_sample
from indexcore.spark.sample_large import LARGE_FILES, build_large


def _build(args: argparse.Namespace) -> dict:
    if args.scale == "small":
        if args.files is not None:
            raise IndexCoreError("--files applies to --scale large only")
        return build_sample(args.directory, seed=args.seed, master=args.master)
    files = LARGE_FILES if args.files is None else args.files
    if files < 100:
        raise IndexCoreError(f"--files must be at least 100, got {files}")
    return build_large(args.directory, seed=args.seed, files=files, master=args.master,
                       progress=ProgressBar("building"))


def register(subparsers) -> None:
    parser = subparsers.add_parser("sample", help="build the sample Paimon warehouse")
    sub = parser.add_subparsers(dest="sample_command", required=True)
    build = sub.add_parser("build", help="write the sample tables into DIR (rebuilds tables indexcore made)")
    build.add_argument("directory", metavar="DIR")
    build.add_argument("--seed", type=SEED, default=DEFAULT_SEED, help="seed of rows and file names")
    build.add_argument("--master", default=None, help="Spark master (default local[*]; sc:// for Connect)")
    build.add_argument("--scale", choices=["small", "large"], default="small",
                       help="small: the demo tables; large: a production-size warehouse of many small files")
    build.add_argument("--files", type=COUNT, default=None, metavar="N",
                       help="--scale large: live data files in total (default 50,000)")
    build.add_argument("--format", choices=["table", "json"], default="table", help="output format")
    build.set_defaults(func=_build)
