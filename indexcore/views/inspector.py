"""``views.inspect(table)``: pyiceberg-style access to the views (a thin alias).

``views.inspect(table).files()`` is ``views.view(table, "files")``; every registered view is a
method.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial


class TableInspector:
    """``inspect(table).<view>(snapshot_id=None, **kwargs)`` -> a pyarrow Table."""

    def __init__(self, table, views: Mapping[str, Callable]):
        self.table = table
        self._views = views

    def __getattr__(self, name: str):
        if name.startswith("_") or name not in self._views:
            raise AttributeError(name)
        return partial(self._views[name], self.table)

    def __dir__(self):
        return sorted(self._views)
