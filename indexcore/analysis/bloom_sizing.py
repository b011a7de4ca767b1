"""Bloom-filter sizing per column: one verdict and one recommended ``items``.

The one home of the rule that table health (:mod:`.health`) and the index advisor
(:mod:`.advise`) both report. Per column, over the files carrying a bloom filter on it:

- ``needed`` bytes: what each file's rows need at its configured ``fpp`` under the bloom
  format's own sizing rule (:func:`indexcore.formats.bloom.optimal_bits`); rows bound the
  distinct keys from above, so a column storing more than :data:`OVERSIZE_FACTOR` x that is
  ``oversized`` whatever its distinct count;
- files holding more distinct keys than their ``items``: their filters answer with more false
  positives than ``fpp`` promises (``over fpp``). The distinct count is estimated from the bit
  set (:meth:`BloomFilterReader.summary`, the same estimate as the ``$bloom_filters`` view), read
  only for files with more rows than ``items``;
- one recommended ``items`` for the column: the :data:`BLOOM_QUANTILE` quantile of rows per file.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from indexcore.errors import IndexCoreError
from indexcore.formats.bloom import DEFAULT_FPP, DEFAULT_ITEMS, HEADER_SIZE, items_for_fpp, optimal_bits
from indexcore.formats.registry import BLOOM_FILTER
from indexcore.warehouse.model import LiveFile

#: A column's bloom filters storing more than this many times what their rows need are oversized.
OVERSIZE_FACTOR = 4.0
#: The share of files (by rows) whose bloom filter the recommended ``items`` fits.
BLOOM_QUANTILE = 0.95
OVERSIZED, OVER_FPP, OK = "oversized", "over fpp", "ok"


@dataclass(frozen=True)
class BloomSizing:
    """Bloom filters of one column against what their files' row counts need at the configured fpp."""

    column: str
    files: int
    bytes: int
    needed_bytes: int
    configured_items: int
    configured_fpp: float
    rows_p95: int
    over_fpp_files: int
    verdict: str  # OVERSIZED, OVER_FPP or OK
    recommended_items: int | None = None
    recommended_bytes: int | None = None
    saved_bytes: int | None = None


def _quantile(values: list[int], q: float) -> int:
    """The ``q`` quantile with linear interpolation (pandas' default), rounded up; at least 1."""
    s = sorted(values)
    pos = (len(s) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(s) - 1)
    return max(1, math.ceil(s[lo] + (s[hi] - s[lo]) * (pos - lo)))


def column_sizing(table, column: str, blooms: Iterable[tuple[LiveFile, str, int]]) -> BloomSizing | None:
    """The sizing verdict of ``column``'s bloom filters: ``blooms`` holds (live file, the column's
    name in that file's schema, the filter's stored bytes) per readable, non-empty filter.
    None when no file's options could be read."""
    stored = needed = over = 0
    items_seen, fpp_seen, rows = set(), set(), []
    options: dict[tuple[int, str], dict] = {}  # per (file schema, column name): the same for its files
    needs: dict[tuple[int, float], int] = {}  # per (rows, fpp): files of a table share a few row counts
    for lf, name, size in blooms:
        key = (lf.file.schema_id, name)
        opts = options.get(key)
        if opts is None:
            opts = options[key] = table.file_schema(lf).file_index_options(name, BLOOM_FILTER.name)
        try:
            items = int(opts.get("items", DEFAULT_ITEMS))
            fpp = float(opts.get("fpp", DEFAULT_FPP))
            need = needs.get((lf.file.row_count, fpp))
            if need is None:
                need = needs[(lf.file.row_count, fpp)] = optimal_bits(max(1, int(lf.file.row_count)), fpp) // 8 \
                    + HEADER_SIZE
        except ValueError:
            continue
        items_seen.add(items)
        fpp_seen.add(fpp)
        rows.append(int(lf.file.row_count))
        stored += int(size)
        needed += need
        if lf.file.row_count > items:
            over += _holds_more_than(table, lf, name, items)
    if not items_seen:
        return None
    items, fpp = max(items_seen), min(fpp_seen)
    p95 = _quantile(rows, BLOOM_QUANTILE)
    verdict = OVERSIZED if stored > OVERSIZE_FACTOR * needed else OVER_FPP if over else OK
    rec = rec_bytes = saved = None
    if verdict != OK:
        rec = p95
        rec_bytes = len(rows) * items_for_fpp(rec, fpp)["bytes"]
        saved = stored - rec_bytes
    return BloomSizing(column, len(rows), stored, needed, items, fpp, p95, over, verdict, rec, rec_bytes, saved)


def _holds_more_than(table, lf: LiveFile, column: str, items: int) -> int:
    """1 when the file's bloom filter on ``column`` holds more distinct keys than ``items`` (its
    container head from the table's head cache, its reader from the table's reader cache)."""
    try:
        ((_, head, _error),) = table.iter_index_heads([lf])
        entry = None if head is None else next(
            (e for e in head.entries if e.column == column and e.index_type == BLOOM_FILTER.name), None)
        if entry is None or entry.empty:
            return 0
        reader = table.index_reader(lf, entry, table.file_schema(lf).field(column).type, None)
        return int(reader.summary()["estimated_items"] > items)
    except (IndexCoreError, KeyError):
        return 0
