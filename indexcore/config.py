"""Settings: every ``INDEXCORE_*`` environment variable, read here and nowhere else, and the
process tuning of long-running explorers (the app server, the CLI), never applied on import.

:func:`settings` reads the environment on each call (about twenty lookups, so callers take it
once per object they build, never per file), typed, with one rule for every value: unset, empty
or unreadable means the default; integers below 0 are 0. The README's "Settings" table lists
the same variables.

A 50,000-file snapshot is millions of small, long-lived objects (manifest entries, container
heads, frame rows). With CPython's default collector thresholds (700 allocations) the cyclic
collector walks them over and over while they are being built: at 50,000 files it took more
than half of a warehouse health census. Raising the thresholds collects the same garbage, in
fewer and larger passes; memory stays bounded by the explorer's own caches.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields

from indexcore.errors import IndexCoreError


def _setting(env: str, default, sep: str | None = None):
    """A field of :class:`Settings`: its variable and default (``sep``: the characters that split
    a tuple); the ``#:`` comment above each field says what it does."""
    return field(default=default, metadata={"env": env, "sep": sep})


@dataclass(frozen=True)
class Settings:
    """Every ``INDEXCORE_*`` setting, typed; the defaults are what an unset variable means."""

    # storage (indexcore.io)
    #: files or ranges fetched at once from an object store (0 means 1)
    concurrency: int = _setting("INDEXCORE_CONCURRENCY", 32)
    #: bytes a head read asks for in one request on an object store (0: exact reads)
    readahead: int = _setting("INDEXCORE_READAHEAD", 64 << 10)
    #: bytes of immutable object-store files cached per warehouse (0: no cache)
    cache_bytes: int = _setting("INDEXCORE_CACHE_BYTES", 256 << 20)
    #: directories a warehouse keeps resolved and checked against its roots
    resolved_dirs: int = _setting("INDEXCORE_RESOLVED_DIRS", 4096)
    #: local directories kept with their symlinks resolved, per set of roots
    realpath_dirs: int = _setting("INDEXCORE_REALPATH_DIRS", 4096)
    #: protocols that may be read, comma-separated (default: the protocols of the allowed roots)
    allowed_protocols: tuple[str, ...] = _setting("INDEXCORE_ALLOWED_PROTOCOLS", (), sep=",:")
    # per table (indexcore.warehouse)
    #: snapshots whose plans a table keeps
    plan_cache: int = _setting("INDEXCORE_PLAN_CACHE", 8)
    #: manifest entries a table keeps decoded
    manifest_cache_entries: int = _setting("INDEXCORE_MANIFEST_CACHE_ENTRIES", 500_000)
    #: file-index container heads a table keeps parsed
    head_cache_files: int = _setting("INDEXCORE_HEAD_CACHE_FILES", 200_000)
    #: bytes of container heads a table keeps unparsed
    head_cache_bytes: int = _setting("INDEXCORE_HEAD_CACHE_BYTES", 64 << 20)
    #: bytes of index blobs whose opened readers a table keeps
    reader_cache_bytes: int = _setting("INDEXCORE_READER_CACHE_BYTES", 32 << 20)
    #: rows of derived results (system views of a snapshot) a table keeps
    derived_rows: int = _setting("INDEXCORE_DERIVED_ROWS", 2_000_000)
    #: partition texts (``{v1, v2}``) a table keeps rendered
    partition_labels: int = _setting("INDEXCORE_PARTITION_LABELS", 100_000)
    #: files with a file index the pages decode before they take a sample
    decode_sample: int = _setting("INDEXCORE_DECODE_SAMPLE", 2000)
    #: vectors a vector index file may hold for ``$vector_indexes`` to probe its list sizes (one search per list)
    vector_probe_vectors: int = _setting("INDEXCORE_VECTOR_PROBE_VECTORS", 200_000)
    # the app (pages/)
    #: the warehouse the app opens (default: sample_warehouse/ beside app.py)
    warehouse: str = _setting("INDEXCORE_WAREHOUSE", "")
    #: roots the app may read, os.pathsep-separated (default: the sample warehouse and the given one)
    allowed_roots: tuple[str, ...] = _setting("INDEXCORE_ALLOWED_ROOTS", (), sep=os.pathsep)
    #: warehouses the app keeps open
    app_warehouses: int = _setting("INDEXCORE_APP_WAREHOUSES", 4)
    #: frames the app keeps per cached function
    app_cache_entries: int = _setting("INDEXCORE_APP_CACHE_ENTRIES", 64)
    #: seconds the app keeps a cached frame
    app_cache_ttl: int = _setting("INDEXCORE_APP_CACHE_TTL", 1800)
    # Spark (indexcore.spark)
    #: the Spark master used when none is given
    spark_master: str = _setting("INDEXCORE_SPARK_MASTER", "local[*]")
    #: masters the operator allows, comma-separated (``local[*]`` covers every local master; a trailing ``*`` is a prefix)
    spark_masters: tuple[str, ...] = _setting("INDEXCORE_SPARK_MASTERS", ("local[*]",), sep=",")
    #: seconds a remote master has to answer (at least 0.1)
    spark_connect_timeout: float = _setting("INDEXCORE_SPARK_CONNECT_TIMEOUT", 10.0)


def _parse(text: str | None, f):
    """One variable's value by the one rule: unset, empty or unreadable -> the default; an int
    below 0 -> 0; a tuple split on its separator, blanks dropped."""
    if not text:
        return f.default
    kind = type(f.default)
    try:
        if kind is int:
            return max(int(text), 0)
        if kind is float:
            return float(text)
    except ValueError:
        return f.default
    if kind is tuple:
        sep = f.metadata["sep"]
        for other in sep[1:]:
            text = text.replace(other, sep[0])
        return tuple(p.strip() for p in text.split(sep[0]) if p.strip())
    return text


_FIELDS = fields(Settings)
_VARIABLES = {f.name: f.metadata["env"] for f in _FIELDS}


def variable(name: str) -> str:
    """The environment variable of the setting ``name`` (for messages that tell the operator)."""
    return _VARIABLES[name]


def settings(environ: Mapping[str, str] | None = None) -> Settings:
    """The settings as the environment (``environ``, default ``os.environ``) gives them now."""
    env = os.environ if environ is None else environ
    return Settings(**{f.name: _parse(env.get(f.metadata["env"]), f) for f in _FIELDS})


# (young, middle, old): a young collection after this many new container objects
GC_THRESHOLDS = (100_000, 50, 100)


def tune_gc(thresholds: tuple[int, int, int] = GC_THRESHOLDS) -> tuple[int, int, int]:
    """Raise the cyclic collector's thresholds (never lowers them); returns the previous ones."""
    before = gc.get_threshold()
    gc.set_threshold(*(max(a, b) for a, b in zip(thresholds, before, strict=True)))
    return before


def parse_pairs(items: Iterable[str] | str | None, what: str, error: type[IndexCoreError] = IndexCoreError,
                typed: bool = False) -> dict:
    """``["k=v", ...]`` (or one ``"k=v, k2=v2"`` text, blank parts skipped) -> ``{k: v}``, the one
    reader of every ``KEY=VALUE`` input (storage options, index options, partitions). Keys and
    values are stripped; a pair without ``=`` or with an empty key raises ``error`` naming
    ``what``. ``typed``: ``true``/``false`` and integers become bool/int, as fsspec expects of
    storage options."""
    if isinstance(items, str):
        items = [part for part in items.split(",") if part.strip()]
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
