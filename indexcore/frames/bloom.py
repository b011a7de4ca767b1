"""What the Bloom filters page shows beyond the views: the kinds it explains, and the sizing
verdict per column (:mod:`indexcore.analysis.bloom_sizing`, the rule health and the advisor use)."""

from __future__ import annotations

import pandas as pd

from indexcore.analysis.bloom_sizing import BLOOM_SHARE, table_sizing
from indexcore.formats.registry import BLOOM_FILTER, page_kinds

BLOOM_TYPES = page_kinds("bloom")  # the kinds the Bloom filters page explains


def bloom_sizing_frame(table, snapshot_id: int | None = None) -> pd.DataFrame:
    """One row per bloom-indexed column: its verdict (ok / oversized / over fpp), the cause of an
    over-fpp verdict (``items`` or file-size skew), today's and the recommended ``items`` (the
    value keeping :data:`BLOOM_SHARE` of the files under the configured fpp) and the sentence."""
    rows = [{"column": b.column, "verdict": b.verdict, "cause": b.cause or "-", "filters": b.files,
             "over_fpp_filters": b.over_fpp_files, "configured_items": b.configured_items,
             "configured_fpp": b.configured_fpp, "recommended_items": b.recommended_items,
             "bytes": b.bytes, "recommended_bytes": b.recommended_bytes, "why": b.message()}
            for b in table_sizing(table, snapshot_id)]
    return pd.DataFrame(rows, columns=["column", "verdict", "cause", "filters", "over_fpp_filters",
                                       "configured_items", "configured_fpp", "recommended_items", "bytes",
                                       "recommended_bytes", "why"])


__all__ = ["BLOOM_FILTER", "BLOOM_SHARE", "BLOOM_TYPES", "bloom_sizing_frame"]
