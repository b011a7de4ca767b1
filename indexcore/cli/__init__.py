"""The command line: ``python -m indexcore`` (see :mod:`indexcore.cli.main`)."""

from indexcore.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
