"""Argument types of the CLI: integers bounded to what Paimon stores (a snapshot id, a row count
and a seed are Java longs; a bucket is an int), so ``--limit 99999999999999999999`` is argparse's
clear usage error (exit 2), never an ``OverflowError`` deep in a reader."""

from __future__ import annotations

import argparse
from collections.abc import Callable

LONG_MAX = 2**63 - 1
INT_MAX = 2**31 - 1


def bounded(low: int, high: int, what: str) -> Callable[[str], int]:
    """An argparse ``type``: an integer in ``[low, high]``, else a usage error saying the range."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text[:40]!r} is not an integer") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{text[:40]} is out of range: {what} lies in [{low:,}, {high:,}]")
        return value

    parse.__name__ = what  # argparse names the type in some messages
    return parse


# a Java long id (snapshot ids) and a seed; a count of rows or files; a bucket (a Java int, -1 and -2
# are Paimon's dynamic and postponed buckets)
SNAPSHOT_ID = bounded(0, LONG_MAX, "a snapshot id")
SEED = bounded(-LONG_MAX - 1, LONG_MAX, "a seed")
COUNT = bounded(0, LONG_MAX, "a count")
BUCKET = bounded(-INT_MAX - 1, INT_MAX, "a bucket")
