"""Settings: every ``INDEXCORE_*`` environment variable, read here and nowhere else, and the
process tuning of long-running explorers (the app server, the CLI), never applied on import.

:func:`settings` reads the environment on each call (about twenty lookups, so callers take it
once per object they build, never per file), typed, with one rule for every value: unset, empty
or unreadable means the default; integers below 0 are 0. The README's "Settings" table lists
the same variables. The exceptions to "unreadable means the default" are the allowed roots and
their storage options: they bound what a shared server may read, so a malformed value raises
:class:`~indexcore.errors.SettingsError` (the app shows it and stops; the CLI exits with 2).

A 50,000-file snapshot is millions of small, long-lived objects (manifest entries, container
heads, frame rows). With CPython's default collector thresholds (700 allocations) the cyclic
collector walks them over and over while they are being built: at 50,000 files it took more
than half of a warehouse health census. Raising the thresholds collects the same garbage, in
fewer and larger passes; memory stays bounded by the explorer's own caches.
"""

from __future__ import annotations

import gc
import json
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields

from fsspec.registry import known_implementations, registry

from indexcore.errors import IndexCoreError, SettingsError

LOCAL_PROTOCOLS = frozenset({"file", "local"})
_PROTOCOL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*")


def root_problem(entry: str) -> str | None:
    """Why ``entry`` cannot be an allowed root (None when it can): a root is one location, a URL
    with a protocol fsspec knows and a bucket or host (``s3://bucket/wh``, ``file:///data``) or a
    local path (absolute, relative to the working directory, or under ``~/``; never ``~name``)."""
    if any(ord(c) < 32 or ord(c) == 127 for c in entry):
        return "holds a control character (NUL, newline...)"
    if "::" in entry:
        return "is a chain ('::'); a root is one location"
    if "://" in entry:
        protocol, _, rest = entry.partition("://")
        name = protocol.lower()
        if not _PROTOCOL.fullmatch(protocol):
            return "has no protocol before '://'"
        if name not in known_implementations and name not in registry:
            return f"names a protocol fsspec does not know ({protocol!r})"
        if name in LOCAL_PROTOCOLS:
            return None if rest.startswith("/") else "is a file URL without an absolute path (file:///path)"
        if name == "memory":  # the process's own memory: no host
            return None
        return None if rest.split("/", 1)[0] else "names no bucket or host"
    if entry.startswith("~") and entry != "~" and not entry.startswith("~/"):
        return "names another user's home (~name); write the directory out"
    if ":" in entry:
        return "holds ':' (separate roots with commas or newlines, or give a JSON list)"
    return None


def _roots(text: str, env: str) -> tuple[str, ...]:
    """Roots separated by commas or newlines, or a JSON list of strings; a malformed one raises."""
    text = text.strip()
    if text.startswith("["):
        try:
            entries = json.loads(text)
        except ValueError as exc:
            raise SettingsError(f"{env} is not a JSON list: {exc.msg} at character {exc.pos}") from exc
        if not isinstance(entries, list) or not all(isinstance(e, str) for e in entries):
            raise SettingsError(f"{env} must be a JSON list of strings")
    else:
        entries = re.split(r"[,\n]", text)
    out = []
    for entry in (e.strip() for e in entries):
        problem = root_problem(entry) if entry else None
        if problem:
            raise SettingsError(f"{env}: the root {entry!r} {problem}")
        if entry:
            out.append(entry)
    return tuple(dict.fromkeys(out))


def _root_options(text: str, env: str) -> tuple[tuple[str, str], ...]:
    """``{"root URL": {option: value}}`` -> ``((root, options as sorted JSON), ...)``; the message
    of a malformed value names the root, never an option's value (they may be secrets)."""
    try:
        found = json.loads(text)
    except ValueError as exc:
        raise SettingsError(f"{env} is not JSON: {exc.msg} at character {exc.pos}") from exc
    if not isinstance(found, dict):
        raise SettingsError(f"{env} must be a JSON object {{root: {{option: value}}}}")
    out = []
    for root, options in found.items():
        problem = root_problem(root.strip())
        if problem or not root.strip():
            raise SettingsError(f"{env}: the root {root!r} {problem or 'is empty'}")
        if not isinstance(options, dict):
            raise SettingsError(f"{env}: the options of {root!r} must be a JSON object")
        out.append((root.strip(), json.dumps(options, sort_keys=True)))
    return tuple(out)


def _setting(env: str, default, sep: str | None = None, parse: Callable[[str, str], object] | None = None):
    """A field of :class:`Settings`: its variable and default (``sep``: the characters that split
    a tuple; ``parse``: its own reader, which raises :class:`SettingsError` on a malformed value);
    the ``#:`` comment above each field says what it does."""
    return field(default=default, metadata={"env": env, "sep": sep, "parse": parse})


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
    #: memory of ``.index`` container heads a table keeps unparsed (bytes, paths, objects)
    head_cache_bytes: int = _setting("INDEXCORE_HEAD_CACHE_BYTES", 64 << 20)
    #: bytes of index blobs whose opened readers a table keeps
    reader_cache_bytes: int = _setting("INDEXCORE_READER_CACHE_BYTES", 32 << 20)
    #: rows of derived results (system views of a snapshot) a table keeps: at least what one page
    #: of the largest snapshot shares (a 1,000,000-file snapshot with four file-index entries per
    #: file: census 3.9M rows, ``$files``, ``$deletion_vectors``, live files 1M each); below it each
    #: view pushes the last out and the census was walked four times for one Table page
    derived_rows: int = _setting("INDEXCORE_DERIVED_ROWS", 8_000_000)
    #: partition texts (``{v1, v2}``) a table keeps rendered
    partition_labels: int = _setting("INDEXCORE_PARTITION_LABELS", 100_000)
    #: files with a file index the pages decode before they take a sample
    decode_sample: int = _setting("INDEXCORE_DECODE_SAMPLE", 2000)
    #: data files of overlapping primary-key buckets the live-row count merge-reads to be exact (past it: an upper bound, said so)
    live_rows_merge_files: int = _setting("INDEXCORE_LIVE_ROWS_MERGE_FILES", 200)
    #: live files whose statistics of one column the Table page decodes to sort and filter them (past it: the first ones, said so)
    column_stats_files: int = _setting("INDEXCORE_COLUMN_STATS_FILES", 200_000)
    #: files ``advise --details`` lists per query (its explain's files, an index's skipped files); past
    #: it the first ones, with how many there are
    details_files: int = _setting("INDEXCORE_DETAILS_FILES", 10_000)
    #: vectors a vector index file may hold for ``$vector_indexes`` to probe its list sizes (one search per list)
    vector_probe_vectors: int = _setting("INDEXCORE_VECTOR_PROBE_VECTORS", 200_000)
    # the app (pages/)
    #: the warehouse the app opens (default: sample_warehouse/ beside app.py)
    warehouse: str = _setting("INDEXCORE_WAREHOUSE", "")
    #: roots the app may read: URLs or local paths separated by commas or newlines, or a JSON list (default: the sample warehouse and the given one); a malformed root stops the app
    allowed_roots: tuple[str, ...] = _setting("INDEXCORE_ALLOWED_ROOTS", (), parse=_roots)
    #: storage options a browser user may set in the app, comma-separated names (default: none; never endpoints, profiles or credentials)
    app_storage_options: tuple[str, ...] = _setting("INDEXCORE_APP_STORAGE_OPTIONS", (), sep=",")
    #: storage options the app uses under each root, a JSON object {"s3://bucket/wh": {"endpoint_url": ...}}; a malformed value stops the app
    root_options: tuple[tuple[str, str], ...] = _setting("INDEXCORE_ROOT_OPTIONS", (), parse=_root_options)
    #: warehouses the app keeps open
    app_warehouses: int = _setting("INDEXCORE_APP_WAREHOUSES", 4)
    #: frames the app keeps per cached function
    app_cache_entries: int = _setting("INDEXCORE_APP_CACHE_ENTRIES", 64)
    #: seconds the app keeps a cached frame
    app_cache_ttl: int = _setting("INDEXCORE_APP_CACHE_TTL", 1800)
    #: sign-in for a team server (``st.login``, OIDC in ``.streamlit/secrets.toml``): empty is off, ``on`` the
    #: ``[auth]`` provider, another word the ``[auth.NAME]`` provider
    app_sign_in: str = _setting("INDEXCORE_APP_SIGN_IN", "")
    #: with sign-in, the roots each user may read: JSON (or a JSON file's path) mapping an e-mail,
    #: ``group:NAME`` (the ``groups`` claim) or ``*`` (anyone signed in) to a list of roots
    app_user_roots: str = _setting("INDEXCORE_APP_USER_ROOTS", "")
    # What-if's hypothetical indexes in the app (indexcore.analysis.whatif): bounded per session and server
    #: bytes of hypothetical index one session's build may hold (past it the build is a random sample of files)
    whatif_session_bytes: int = _setting("INDEXCORE_WHATIF_SESSION_BYTES", 32 << 20)
    #: bytes of hypothetical index all sessions' builds may hold at once (past it a build stops, sampled or refused)
    whatif_server_bytes: int = _setting("INDEXCORE_WHATIF_SERVER_BYTES", 256 << 20)
    #: the smallest bloom-filter ``fpp`` a hypothetical index may ask for
    whatif_min_fpp: float = _setting("INDEXCORE_WHATIF_MIN_FPP", 1e-6)
    #: per-file rows of a hypothetical index's comparison a session keeps (the files it changes most)
    whatif_frame_rows: int = _setting("INDEXCORE_WHATIF_FRAME_ROWS", 5000)
    #: bytes of What-if explain results (per-file frames) the server keeps for reruns, shared by all
    #: sessions (least recently used leave first; a 45,504-file explain is about 40 MB)
    whatif_explained_bytes: int = _setting("INDEXCORE_WHATIF_EXPLAINED_BYTES", 256 << 20)
    # Spark (indexcore.spark)
    #: the Spark master used when none is given
    spark_master: str = _setting("INDEXCORE_SPARK_MASTER", "local[*]")
    #: masters the operator allows, comma-separated, each exactly (``local[*]`` is not ``local[8]``); an entry
    #: ending in ``*`` other than ``local[*]`` is a prefix
    spark_masters: tuple[str, ...] = _setting("INDEXCORE_SPARK_MASTERS", ("local[*]", "local[1]", "local[2]"), sep=",")
    #: seconds a remote master has to answer (at least 0.1)
    spark_connect_timeout: float = _setting("INDEXCORE_SPARK_CONNECT_TIMEOUT", 10.0)
    #: Spark jobs one user (one browser session, or one signed-in user) may run or queue at once in the app
    spark_jobs_per_user: int = _setting("INDEXCORE_SPARK_JOBS_PER_USER", 1)
    #: seconds an app job waits for the jobs of another master to end (one SparkContext per process) before it is refused
    spark_queue_seconds: float = _setting("INDEXCORE_SPARK_QUEUE_SECONDS", 300.0)
    #: Spark runs (with their results) the app keeps per session, newest first
    spark_history: int = _setting("INDEXCORE_SPARK_HISTORY", 10)
    #: live files (as a snapshot's manifest lists count them) from which plan, census, explain, health and
    #: advise's explains run on Spark (the default master) without being asked; 0 (the default) never
    spark_metadata_files: int = _setting("INDEXCORE_SPARK_METADATA_FILES", 0)
    #: heap of the Spark driver's JVM, which runs in this process on every classic master (local, spark://,
    #: yarn: client mode; not Spark Connect's) (``spark.driver.memory``, read when this process starts Spark:
    #: every job's results arrive there, and a local master's tasks run there), a JVM size such as ``4g`` or
    #: ``1500m``; half of it is the most a job's results may take (``spark.driver.maxResultSize``)
    spark_driver_memory: str = _setting("INDEXCORE_SPARK_DRIVER_MEMORY", "4g")


def _parse(text: str | None, f):
    """One variable's value by the one rule: unset, empty or unreadable -> the default; an int
    below 0 -> 0; a tuple split on its separator, blanks dropped. A setting with its own reader
    (the roots and their options, which bound what may be read) raises instead when malformed."""
    if not text or not text.strip():
        return f.default
    if f.metadata["parse"] is not None:
        return f.metadata["parse"](text, f.metadata["env"])
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
