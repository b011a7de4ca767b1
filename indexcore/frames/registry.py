"""Every frame a page caches, by key: the function object and what it is called with.

The app caches frames per warehouse, table and snapshot under a frame's key (a plain string
Streamlit can hash and pickle); pages pass the function itself (``ctx.frame(table.size_skew,
by="bucket")``), so finding the usages of a frame function finds its pages.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from indexcore.frames import (
    bitmap,
    deletion_vectors,
    global_indexes,
    health,
    pruning,
    range,
    suggestion,
    table,
    unusable,
    warehouse,
    what_if,
)

TABLE, WAREHOUSE = "table", "warehouse"


@dataclass(frozen=True)
class FrameSpec:
    """One cached frame: ``fn(table, **kwargs)`` with ``snapshot_id=`` when ``snapshot`` (else
    table-wide, as the schema history), or ``fn(warehouse, **kwargs)`` when ``on`` is WAREHOUSE."""

    key: str
    fn: Callable[..., Any]
    on: str = TABLE
    snapshot: bool = True


_SPECS = (
    FrameSpec("warehouse_overview", warehouse.warehouse_overview, on=WAREHOUSE, snapshot=False),
    FrameSpec("warehouse_health", health.warehouse_health_frames, on=WAREHOUSE, snapshot=False),
    FrameSpec("table_health", health.table_health),
    FrameSpec("table_overview", table.table_overview),
    FrameSpec("unreadable_frame", table.unreadable_frame),
    FrameSpec("problems_frame", table.problems_frame),
    FrameSpec("schema_history", table.schema_history, snapshot=False),
    FrameSpec("size_skew", table.size_skew),
    FrameSpec("file_stats_frame", table.file_stats_frame),
    FrameSpec("unusable_index_files", unusable.unusable_index_files),
    FrameSpec("bitmap_lookup", bitmap.bitmap_lookup),
    FrameSpec("bitmap_layout_compare", bitmap.bitmap_layout_compare),
    FrameSpec("range_frame", range.range_frame),
    FrameSpec("prune_by_sql", pruning.prune_by_sql),
    FrameSpec("dv_trend", deletion_vectors.dv_trend, snapshot=False),
    FrameSpec("table_row_ranges", global_indexes.table_row_ranges),
    FrameSpec("cardinality_frame", global_indexes.cardinality_frame),
    FrameSpec("explain_frames", what_if.explain_frames),
    FrameSpec("suggest_predicate", suggestion.suggest_predicate),
)

FRAMES: MappingProxyType[str, FrameSpec] = MappingProxyType({s.key: s for s in _SPECS})
_BY_FUNCTION: MappingProxyType[Callable[..., Any], FrameSpec] = MappingProxyType({s.fn: s for s in _SPECS})


def spec_of(fn: Callable[..., Any]) -> FrameSpec:
    """The registered spec of a frame function (a KeyError names a function nobody registered)."""
    try:
        return _BY_FUNCTION[fn]
    except KeyError:
        raise KeyError(f"{getattr(fn, '__qualname__', fn)!r} is not in indexcore.frames.registry.FRAMES") from None
