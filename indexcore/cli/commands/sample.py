"""``python -m indexcore sample build DIR``: build the sample warehouse.

``--scale small`` (default) is the six-table demo warehouse, built with the Spark pipeline;
``--scale large`` the production-size one of :mod:`indexcore.write.large_sample` (``--files N``
live data files), written by the bulk writer (:mod:`indexcore.write.bulk_sample`, worker
processes, no Spark) or, with ``--engine spark`` or a ``--master``, by the Spark pipeline
(:mod:`indexcore.spark.sample_large`). Both write the same tables.
"""

from __future__ import annotations

import argparse

from indexcore.cli.arguments import COUNT, SEED
from indexcore.cli.output import ProgressBar
from indexcore.errors import IndexCoreError
from indexcore.spark.sample import DEFAULT_SEED, build_sample
from indexcore.spark.sample_large import build_large
from indexcore.write.bulk_sample import build_large_bulk
from indexcore.write.large_sample import LARGE_FILES


def _engine(args: argparse.Namespace) -> str:
    """The engine asked for: ``--engine``, else Spark for the small sample or with ``--master``."""
    if args.engine is not None:
        return args.engine
    return "spark" if args.scale == "small" or args.master is not None else "bulk"


def _build(args: argparse.Namespace) -> dict:
    engine = _engine(args)
    if engine == "bulk" and args.master is not None:
        raise IndexCoreError("--master applies to --engine spark only")
    if engine == "spark" and args.workers is not None:
        raise IndexCoreError("--workers applies to --engine bulk only")
    if args.scale == "small":
        if args.files is not None:
            raise IndexCoreError("--files applies to --scale large only")
        if engine == "bulk":
            raise IndexCoreError("the small sample is built with --engine spark only")
        return build_sample(args.directory, seed=args.seed, master=args.master)
    files = LARGE_FILES if args.files is None else args.files
    if files < 100:
        raise IndexCoreError(f"--files must be at least 100, got {files}")
    if engine == "bulk":
        return build_large_bulk(args.directory, seed=args.seed, files=files, workers=args.workers,
                                progress=ProgressBar("building"))
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
    build.add_argument("--engine", choices=["bulk", "spark"], default=None,
                       help="--scale large: bulk (default: worker processes, no Spark) or spark (the "
                            "Spark pipeline; the default with --master); both write the same tables")
    build.add_argument("--workers", type=int, default=None, metavar="N",
                       help="--engine bulk: worker processes (default: one per core)")
    build.add_argument("--format", choices=["table", "json"], default="table", help="output format")
    build.set_defaults(func=_build)
