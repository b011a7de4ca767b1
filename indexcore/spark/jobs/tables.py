"""The table a task spec names: planned once on the driver, opened (never planned) on workers.

The driver resolves the table and its snapshot's plan (:func:`resolve`) and lists the schemas
a task's files need (:func:`schema_ids`); a worker opens the table from a small per-process
cache (:func:`open_table`, :func:`spec_table`), since one Python worker runs many tasks.
"""

from __future__ import annotations

from collections.abc import Sequence

from indexcore import open_warehouse
from indexcore.cache import LRU

_CACHE_SIZE = 8
# per Python worker process by design: a worker reuses the tables its earlier tasks opened
_tables = LRU(_CACHE_SIZE)


def resolve(warehouse_url: str, table_name: str, snapshot_id: int | None, storage_options: dict | None = None):
    """The table and its plan of ``snapshot_id``, on the driver."""
    table = open_warehouse(warehouse_url, storage_options=storage_options).table(table_name)
    plan = table.plan(snapshot_id)
    return table, plan


def schema_ids(table, files: Sequence, *more: int) -> list[int]:
    """The table's latest schema id first, then every other schema the files were written with."""
    latest = table.schema().id
    ids = {lf.file.schema_id for lf in files} | set(more)
    known = {s.id for s in table.schemas()}
    return [latest, *sorted(i for i in ids if i in known and i != latest)]


def open_table(url: str, name: str, schema_ids: Sequence[int] = (), storage_options: dict | None = None):
    """The table ``name`` of the warehouse at ``url``, from a small per-process cache.

    ``schema_ids`` are schemas the task reads, the table's latest first: a cached table whose
    latest schema differs, or that lacks one of them, is opened afresh (schemas are immutable
    per id, so nothing else can go stale). Nothing is planned here. ``storage_options`` are
    the driver's fsspec options (endpoint, credentials...), shipped in the task spec.
    """
    key = (url, name, tuple(sorted((storage_options or {}).items())))
    table = _tables.get(key)
    if table is not None and schema_ids:
        known = {s.id for s in table.schemas()}
        if not known or max(known) != schema_ids[0] or not set(schema_ids) <= known:
            table = None
    if table is None:
        table = open_warehouse(url, storage_options=storage_options).table(name)
        _tables.put(key, table)
    return table


def spec_table(spec: dict):
    """The table a task spec names (``url``, ``table``, ``schema_ids``, ``storage_options``)."""
    return open_table(spec["url"], spec["table"], spec["schema_ids"], spec.get("storage_options"))
