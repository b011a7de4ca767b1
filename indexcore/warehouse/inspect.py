"""``table.inspect``: pyiceberg-style access to :mod:`indexcore.views` (a thin alias).

``table.inspect.files()`` is ``views.view(table, "files")``; every view of
:data:`indexcore.views.VIEWS` is a method.
"""

from __future__ import annotations

from functools import partial

from ..views.common import partition_text

__all__ = ["TableInspector", "partition_text"]


class TableInspector:
    """``table.inspect.<view>(snapshot_id=None, **kwargs)`` -> a pyarrow Table."""

    def __init__(self, table):
        self.table = table

    def __getattr__(self, name: str):
        from ..views import VIEWS

        if name not in VIEWS:
            raise AttributeError(name)
        return partial(VIEWS[name], self.table)

    def __dir__(self):
        from ..views import VIEWS

        return sorted(VIEWS)
