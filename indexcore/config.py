"""Process settings for long-running explorers (the app server, the CLI), never applied on import.

A 50,000-file snapshot is millions of small, long-lived objects (manifest entries, container
heads, frame rows). With CPython's default collector thresholds (700 allocations) the cyclic
collector walks them over and over while they are being built: at 50,000 files it took more
than half of a warehouse health census. Raising the thresholds collects the same garbage, in
fewer and larger passes; memory stays bounded by the explorer's own caches.
"""

from __future__ import annotations

import gc
from collections.abc import Iterable

from indexcore.errors import IndexCoreError

# (young, middle, old): a young collection after this many new container objects
GC_THRESHOLDS = (100_000, 50, 100)


def tune_gc(thresholds: tuple[int, int, int] = GC_THRESHOLDS) -> tuple[int, int, int]:
    """Raise the cyclic collector's thresholds (never lowers them); returns the previous ones."""
    before = gc.get_threshold()
    gc.set_threshold(*(max(a, b) for a, b in zip(thresholds, before, strict=True)))
    return before


def parse_pairs(items: Iterable[str] | None, what: str, error: type[IndexCoreError] = IndexCoreError,
                typed: bool = False) -> dict:
    """``["k=v", ...]`` -> ``{k: v}``, the one reader of every ``KEY=VALUE`` input (storage
    options, index options, partitions). Keys and values are stripped; a pair without ``=`` or
    with an empty key raises ``error`` naming ``what``. ``typed``: ``true``/``false`` and
    integers become bool/int, as fsspec expects of storage options."""
    out: dict = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise error(f"{what} needs KEY=VALUE, got {item!r}")
        text = value.strip()
        if typed:
            low = text.lower()
            text = True if low == "true" else False if low == "false" else \
                int(text) if text.lstrip("-").isdigit() else text
        out[key.strip()] = text
    return out
