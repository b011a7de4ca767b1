"""Frames of the health summaries (Warehouse and Table pages): a table's or the warehouse's score,
its items, and the frames behind them (:mod:`indexcore.analysis.health` judges)."""

from __future__ import annotations

import pandas as pd

from indexcore.analysis.health import (
    ERROR,
    INFO,
    SEVERITIES,
    WARNING,
    health_frames,
    table_health,
    warehouse_health,
)


def warehouse_health_frames(warehouse) -> tuple[int, dict[str, pd.DataFrame]]:
    """The warehouse's score and :func:`~indexcore.analysis.health.health_frames` of every table."""
    h = warehouse_health(warehouse)
    return h.score, health_frames(h)


__all__ = ["ERROR", "INFO", "SEVERITIES", "WARNING", "table_health", "warehouse_health_frames"]
