"""Frames of the Hash index page: how evenly a dynamic-bucket table's keys fill its buckets
(:mod:`indexcore.analysis.balance` holds the rule)."""

from __future__ import annotations

from indexcore.analysis.balance import hash_balance
from indexcore.paimon.index_types import HASH

__all__ = ["HASH", "hash_balance"]
