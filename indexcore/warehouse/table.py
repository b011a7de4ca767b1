"""A Paimon table read-only: a thin front over one module per concept.

Schemas (:mod:`~indexcore.warehouse.table_schemas`), snapshots, tags and branches
(:mod:`~indexcore.warehouse.table_snapshots`), manifests (:mod:`~indexcore.warehouse.table_manifests`),
paths (:mod:`~indexcore.warehouse.table_paths`), planning the live files of a snapshot
(:mod:`~indexcore.warehouse.table_planning`; as Arrow columns :mod:`~indexcore.warehouse.plan_columns`), file-index heads and readers
(:mod:`~indexcore.warehouse.table_heads`), deletion vectors and the hash index
(:mod:`~indexcore.warehouse.table_index_files`); what a table keeps is one
:class:`~indexcore.warehouse.table_caches.TableCaches`.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Hashable

from indexcore.config import settings
from indexcore.errors import StorageError
from indexcore.io import Storage
from indexcore.paimon.layout import branch_path
from indexcore.warehouse.html import table_html
from indexcore.warehouse.manifest import StatsTypes
from indexcore.warehouse.model import Problem
from indexcore.warehouse.table_caches import TableCaches
from indexcore.warehouse.table_heads import TableIndexHeads
from indexcore.warehouse.table_index_files import TableIndexFiles
from indexcore.warehouse.table_manifests import TableManifests
from indexcore.warehouse.table_paths import TablePaths
from indexcore.warehouse.table_plan_columns import TablePlanColumns
from indexcore.warehouse.table_planning import TablePlanning
from indexcore.warehouse.table_schemas import TableSchemas
from indexcore.warehouse.table_snapshots import TableSnapshots


class Table(TableSchemas, TableSnapshots, TableManifests, TablePaths, TablePlanning, TablePlanColumns,
            TableIndexHeads, TableIndexFiles):
    """One table (or one branch of it) under a read-only :class:`Storage`; its caches are sized
    by the settings when it is made."""

    def __init__(self, storage: Storage, path: str, name: str, branch: str | None = None,
                 data_root: str | None = None):
        self.storage = storage
        self.path = path.rstrip("/")
        self.name = name
        self.branch_name = branch
        self.data_root = data_root or self.path
        self.problems: list[Problem] = []
        self._problem_keys: set[tuple] = set()
        self.caches = TableCaches.of(settings())
        self._stats_types = StatsTypes(self.key_types, self.value_types)

    def __repr__(self) -> str:
        return f"Table({self.name!r})"

    def _repr_html_(self) -> str:
        return table_html(self)

    def _problem(self, path: str, structure: str, reason: str, into: list | None = None) -> None:
        p = Problem(path, structure, reason)
        if into is not None and p not in into:
            into.append(p)
        key = (path, structure, reason)
        if key not in self._problem_keys:
            self._problem_keys.add(key)
            self.problems.append(p)

    def _list(self, sub: str) -> list[str]:
        try:
            entries = self.storage.listdir(posixpath.join(self.path, sub))
        except StorageError as exc:
            self._problem(posixpath.join(self.path, sub), "directory", str(exc))
            return []
        return [posixpath.basename(e["name"].rstrip("/")) for e in entries]

    def branch(self, name: str) -> Table:
        """The table as seen on branch ``name`` (own schemas and snapshots, shared data files)."""
        if name in ("main", None):
            return self
        path = branch_path(self.data_root, name)
        if not self.storage.exists(posixpath.join(path, "schema")):
            raise StorageError(f"table {self.name} has no branch {name!r}", file=path)
        return Table(self.storage, path, f"{self.name}$branch_{name}", branch=name,
                     data_root=self.data_root)

    def derived(self, key: Hashable, build: Callable[[], object],
                weight: Callable[[object], int] | None = None) -> object:
        """``build()``, kept under ``key`` (which names the snapshot it comes from): a snapshot
        never changes, so a view of it built once serves every page, session and health check
        after it. Bounded by ``weight`` (rows) in all, least recently used out; sessions asking at
        the same time wait for one build (:meth:`LRU.get_or_build`)."""
        return self.caches.derived.get_or_build(key, build, weight)
