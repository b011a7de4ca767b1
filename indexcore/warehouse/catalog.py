"""A Paimon filesystem catalog: ``<warehouse>/<db>.db/<table>/``, read-only."""

from __future__ import annotations

import posixpath
import threading

from indexcore.errors import StorageError
from indexcore.io import Storage
from indexcore.warehouse.html import warehouse_html
from indexcore.warehouse.model import Problem
from indexcore.warehouse.table import Table


class Warehouse:
    """A warehouse root opened read-only; lists databases and tables, opens a :class:`Table`."""

    def __init__(self, url: str, allowed_roots: list[str] | None = None,
                 storage_options: dict | None = None):
        self.url = str(url)
        self.storage = Storage(self.url, allowed_roots=allowed_roots, storage_options=storage_options)
        self.problems: list[Problem] = []
        self._tables: dict[str, Table] = {}
        # held while a table is opened: sessions opening one table at once share one Table (and so
        # one plan and census), not one each (20 sessions built up to 3 plans at 100,000 files)
        self._opening = threading.RLock()

    def databases(self) -> list[str]:
        out = []
        for entry in self.storage.listdir(self.storage.root):
            name = posixpath.basename(entry["name"].rstrip("/"))
            if entry.get("type") == "directory" and name.endswith(".db"):
                out.append(name[:-3])
        return sorted(out)

    def tables(self) -> list[str]:
        """``db.table`` names of every folder that holds a ``schema/`` directory, sorted."""
        out = []
        for db in self.databases():
            for entry in self.storage.listdir(posixpath.join(self.storage.root, f"{db}.db")):
                if entry.get("type") != "directory":
                    continue
                path = entry["name"].rstrip("/")
                try:
                    if self.storage.exists(posixpath.join(path, "schema")):
                        out.append(f"{db}.{posixpath.basename(path)}")
                except StorageError as exc:  # a folder linking outside the allowed roots
                    self.problems.append(Problem(path, "table folder", exc.message))
        return sorted(out)

    def table_path(self, name: str) -> str:
        if "." not in name:
            raise StorageError(f"table name must be 'database.table', got {name!r}")
        db, tbl = name.split(".", 1)
        return posixpath.join(self.storage.root, f"{db}.db", tbl)

    def table(self, name: str) -> Table:
        """Open ``db.table`` (or a branch, ``db.table$branch_NAME``); StorageError if it has no schema.
        Kept: every caller (every thread) gets the same :class:`Table`, so its caches are shared."""
        kept = self._tables.get(name)
        if kept is not None:
            return kept
        with self._opening:
            if name not in self._tables:
                base, sep, branch = name.partition("$branch_")
                if sep:  # kept like any table, so its plans are shared by every caller
                    self._tables[name] = self.table(base).branch(branch)
                else:
                    path = self.table_path(name)
                    if not self.storage.exists(posixpath.join(path, "schema")):
                        raise StorageError(f"no Paimon table {name!r} (no schema directory)", file=path)
                    self._tables[name] = Table(self.storage, path, name)
            return self._tables[name]

    def __repr__(self) -> str:
        return f"Warehouse({self.url!r})"

    def _repr_html_(self) -> str:
        return warehouse_html(self)
