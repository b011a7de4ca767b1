"""What the Bloom filters page shows beyond the views: the kinds it explains."""

from __future__ import annotations

from indexcore.formats.registry import BLOOM_FILTER, page_kinds

BLOOM_TYPES = page_kinds("bloom")  # the kinds the Bloom filters page explains

__all__ = ["BLOOM_FILTER", "BLOOM_TYPES"]
