"""The :mod:`indexcore.views` tables as the pages read them: a view of a table (on a branch) as a
frame, how many files a decoding view reads before it samples, and the label of an unpartitioned
table's one partition."""

from __future__ import annotations

import pandas as pd

from indexcore.views import Identifier, view
from indexcore.views.common import UNPARTITIONED, to_frame


def view_frame(table, name: str, snapshot_id: int | None = None, **kwargs) -> pd.DataFrame:
    """``views.view(table, name, snapshot_id, **kwargs)`` as a pandas frame (text as text:
    :func:`~indexcore.views.common.to_frame`)."""
    return to_frame(view(table, name, snapshot_id, **kwargs))


def branch_ref(table: str, branch: str) -> str:
    """The name :meth:`Warehouse.table` opens for ``table`` on ``branch``: ``db.t$branch_NAME``."""
    return Identifier(table, branch).table_ref


__all__ = ["UNPARTITIONED", "branch_ref", "to_frame", "view_frame"]
