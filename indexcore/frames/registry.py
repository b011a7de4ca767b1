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
    bloom,
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


def _specs(*fns: Callable[..., Any], on: str = TABLE, snapshot: bool = True) -> tuple[FrameSpec, ...]:
    """Specs keyed by each function's name (unique across frames/)."""
    return tuple(FrameSpec(fn.__name__, fn, on, snapshot) for fn in fns)


_SPECS = (
    *_specs(warehouse.warehouse_overview, health.warehouse_health_frames, on=WAREHOUSE, snapshot=False),
    *_specs(table.schema_history, deletion_vectors.dv_trend, snapshot=False),
    *_specs(health.table_health, table.table_overview, table.unreadable_frame, table.problems_frame,
            table.size_skew, table.file_stats_frame, unusable.unusable_index_files, bitmap.bitmap_lookup,
            bitmap.bitmap_layout_compare, range.range_frame, pruning.prune_by_sql,
            global_indexes.table_row_ranges, global_indexes.cardinality_frame, what_if.explain_frames,
            suggestion.suggest_predicate, bloom.bloom_sizing_frame),
)
FRAMES: MappingProxyType[str, FrameSpec] = MappingProxyType({s.key: s for s in _SPECS})
_BY_FUNCTION: MappingProxyType[Callable[..., Any], FrameSpec] = MappingProxyType({s.fn: s for s in _SPECS})


def spec_of(fn: Callable[..., Any]) -> FrameSpec:
    """The registered spec of a frame function (a KeyError names a function nobody registered)."""
    try:
        return _BY_FUNCTION[fn]
    except KeyError:
        raise KeyError(f"{getattr(fn, '__qualname__', fn)!r} is not in indexcore.frames.registry.FRAMES") from None
