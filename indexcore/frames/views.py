"""The :mod:`indexcore.views` tables as the pages read them: a view of a table (on a branch) as a
frame, how many files a decoding view reads before it samples, and the label of an unpartitioned
table's one partition."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import pyarrow as pa

from indexcore.cache import release_unused
from indexcore.views import Identifier, view
from indexcore.views.common import RELEASE_ROWS, UNPARTITIONED, to_frame


def view_frame(table, name: str, snapshot_id: int | None = None, **kwargs) -> pd.DataFrame:
    """``views.view(table, name, snapshot_id, **kwargs)`` as a pandas frame (text as text:
    :func:`~indexcore.views.common.to_frame`). A large view that is not kept (one with arguments,
    as the Table page's listing) is freed here: its buffers go back to the OS too."""
    result = view(table, name, snapshot_id, **kwargs)
    frame = to_frame(result, plan_texts(table, snapshot_id))
    if len(frame) >= RELEASE_ROWS:
        release_unused()
    return frame


def plan_texts(table, snapshot_id: int | None = None) -> Callable[[pa.Array], np.ndarray | None] | None:
    """What :func:`~indexcore.views.common.to_frame` asks for a view of the snapshot's columnar
    plan (kept on the table; None when it keeps none): the plan's own Python strings of a text
    array that is one of its paths, names or ``.index`` paths (:meth:`PlanColumns.text_objects
    <indexcore.warehouse.plan_columns.PlanColumns.text_objects>`), so the ``$files`` frame and
    the census frame share them instead of each holding its own."""
    plan = table.kept_plan_columns(snapshot_id)
    return None if plan is None else plan.objects_of


def shared_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` made fit to share between a server's sessions: its numpy columns read-only, so code
    that changes one in place fails loudly instead of changing every session's frame. Readers take
    ``frame.copy(deep=False)``: columns they add stay theirs, the data is not copied."""
    for block in frame._mgr.blocks:  # pandas < 3 (pinned): a frame's columns live in its blocks
        if isinstance(block.values, np.ndarray):
            block.values.flags.writeable = False
    return frame


def branch_ref(table: str, branch: str) -> str:
    """The name :meth:`Warehouse.table` opens for ``table`` on ``branch``: ``db.t$branch_NAME``."""
    return Identifier(table, branch).table_ref


__all__ = ["UNPARTITIONED", "branch_ref", "plan_texts", "shared_frame", "to_frame", "view_frame"]
