"""Bloom-filter sizing per column: one verdict and one recommended ``items``.

The one home of the rule that table health (:mod:`.health`), the index advisor (:mod:`.advise`)
and the Bloom page (:mod:`indexcore.frames.bloom`) report. Per column, over the files carrying
a bloom filter on it:

- ``needed`` bytes: what each file's rows need at its configured ``fpp`` under the bloom
  format's own sizing rule (:func:`indexcore.formats.bloom.optimal_bits`); rows bound the
  distinct keys from above, so a column storing more than :data:`OVERSIZE_FACTOR` x that is
  ``oversized`` whatever its distinct count;
- the distinct keys (NDV) of each filter: estimated from its bit set (:meth:`BloomFilterReader.summary`,
  the same estimate as the ``$bloom_filters`` view; a saturated filter's estimate is unbounded,
  so its rows stand in) for files with more rows than ``items``, bounded by rows for the others
  (which then hold at most ``items``). A filter holding more keys than its ``items`` answers
  with more false positives than ``fpp`` promises (``over fpp``);
- one recommended ``items``: the smallest value that keeps :data:`BLOOM_SHARE` of the files'
  NDV at or under it (so that share stays under the configured fpp), never smaller than
  today's ``items`` for ``over fpp`` filters. When today's ``items`` already covers that share,
  the over-fpp filters are the few largest files: the cause is file-size skew, not ``items``,
  and compaction is the fix (``cause`` :data:`SKEW`, ``items`` unchanged). An ``oversized``
  column's recommendation is the same share of its files' rows.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import pyarrow.compute as pc

from indexcore.errors import IndexCoreError
from indexcore.formats.bloom import DEFAULT_FPP, DEFAULT_ITEMS, HEADER_SIZE, items_for_fpp, optimal_bits
from indexcore.formats.registry import BLOOM_FILTER
from indexcore.views import view
from indexcore.warehouse.model import LiveFile
from indexcore.warehouse.plan_columns import LiveFilesByPath

#: A column's bloom filters storing more than this many times what their rows need are oversized.
OVERSIZE_FACTOR = 4.0
#: The share of files the recommended ``items`` keeps under the configured fpp.
BLOOM_SHARE = 0.95
BLOOM_QUANTILE = BLOOM_SHARE  # the name table health's tests knew it by
OVERSIZED, OVER_FPP, OK = "oversized", "over fpp", "ok"
#: The cause of an over-fpp verdict: ``items`` too small for most files, or a few large files.
ITEMS, SKEW = "items", "file size skew"


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
    cause: str | None = None  # ITEMS or SKEW for OVER_FPP
    ndv_share: int | None = None  # the NDV that BLOOM_SHARE of the files stay at or under
    over_fpp_rows_min: int | None = None  # rows of the smallest over-fpp file

    def message(self) -> str:
        """The verdict in a sentence (what the advisor, health and the Bloom page say)."""
        if self.verdict == OVERSIZED:
            return (f"items={self.configured_items} stores {self.bytes:,} bytes where the files' rows need "
                    f"{self.needed_bytes:,} at fpp {self.configured_fpp}; items={self.recommended_items} fits")
        if self.verdict != OVER_FPP:
            return f"{self.files} filters fit items={self.configured_items} at fpp {self.configured_fpp}"
        head = (f"{self.over_fpp_files} of {self.files} filters hold more distinct keys than "
                f"items={self.configured_items}: more false positives than fpp {self.configured_fpp}")
        if self.cause == SKEW:
            return (f"{head}; {BLOOM_SHARE:.0%} of the files hold at most {self.ndv_share:,} keys, so items is "
                    f"not the cause: the over-fpp filters are on the largest files (from "
                    f"{self.over_fpp_rows_min:,} rows; 95% of files have at most {self.rows_p95:,}). File-size "
                    "skew is the cause and compaction the fix")
        return (f"{head}; items={self.recommended_items} keeps {BLOOM_SHARE:.0%} of the files under fpp "
                f"{self.configured_fpp}")


def _quantile(values: list[int], q: float) -> int:
    """The ``q`` quantile with linear interpolation (pandas' default), rounded up; at least 1."""
    s = sorted(values)
    pos = (len(s) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(s) - 1)
    return max(1, math.ceil(s[lo] + (s[hi] - s[lo]) * (pos - lo)))


def covering(values: list[int], share: float) -> int:
    """The smallest value at or above which no more than ``1 - share`` of ``values`` lie (at least 1)."""
    s = sorted(values)
    return max(1, s[max(math.ceil(share * len(s)) - 1, 0)]) if s else 1


def column_sizing(table, column: str, blooms: Iterable[tuple[LiveFile, str, int]]) -> BloomSizing | None:
    """The sizing verdict of ``column``'s bloom filters: ``blooms`` holds (live file, the column's
    name in that file's schema, the filter's stored bytes) per readable, non-empty filter.
    None when no file's options could be read."""
    return sizing_of(column, bloom_tally(table, blooms))


def bloom_tally(table, blooms: Iterable[tuple[LiveFile, str, int]]) -> dict:
    """What :func:`sizing_of` needs of some of a column's filters, in sums, sets and per-file lists
    that add up across disjoint sets of files (Spark tasks each tally their own: :func:`merge_tallies`)."""
    stored = needed = over = 0
    items_seen, fpp_seen, rows, ndv, over_rows = set(), set(), [], [], []
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
        n_rows = int(lf.file.row_count)
        rows.append(n_rows)
        stored += int(size)
        needed += need
        keys = n_rows
        if n_rows > items:
            keys = _distinct_keys(table, lf, name, n_rows, items)
            if keys > items:
                over += 1
                over_rows.append(n_rows)
        ndv.append(keys)
    return {"stored": stored, "needed": needed, "over": over, "items": items_seen, "fpp": fpp_seen,
            "rows": rows, "ndv": ndv, "over_rows": over_rows}


def merge_tallies(tallies: Iterable[dict]) -> dict:
    """The tally of the union of the (disjoint) files of ``tallies``."""
    out = {"stored": 0, "needed": 0, "over": 0, "items": set(), "fpp": set(), "rows": [], "ndv": [], "over_rows": []}
    for t in tallies:
        for k in ("stored", "needed", "over"):
            out[k] += t[k]
        for k in ("items", "fpp"):
            out[k] |= set(t[k])
        for k in ("rows", "ndv", "over_rows"):
            out[k].extend(t[k])
    return out


def sizing_of(column: str, tally: dict) -> BloomSizing | None:
    """The verdict of a column's :func:`bloom_tally` (None when no file's options could be read)."""
    if not tally["items"]:
        return None
    stored, needed, over, rows, ndv, over_rows = (tally[k] for k in ("stored", "needed", "over", "rows", "ndv",
                                                                      "over_rows"))
    items, fpp = max(tally["items"]), min(tally["fpp"])
    p95 = _quantile(rows, BLOOM_SHARE)
    share_ndv = covering(ndv, BLOOM_SHARE)
    verdict = OVERSIZED if stored > OVERSIZE_FACTOR * needed else OVER_FPP if over else OK
    rec = rec_bytes = saved = cause = None
    if verdict == OVERSIZED:
        rec = p95
    elif verdict == OVER_FPP:
        cause = SKEW if share_ndv <= items else ITEMS
        rec = max(share_ndv, items)  # never smaller than today's for filters already over fpp
    if rec is not None:
        rec_bytes = len(rows) * items_for_fpp(rec, fpp)["bytes"]
        saved = stored - rec_bytes
    return BloomSizing(column, len(rows), stored, needed, items, fpp, p95, over, verdict, rec, rec_bytes, saved,
                       cause, share_ndv, min(over_rows) if over_rows else None)


def _distinct_keys(table, lf: LiveFile, column: str, rows: int, items: int) -> int:
    """The distinct keys the file's bloom filter on ``column`` holds, estimated from its bits and
    bounded by its rows (its container head from the table's head cache, its reader from the
    table's reader cache); its rows when saturated, ``items`` (not over) when it cannot be read."""
    try:
        ((_, head, _error),) = table.iter_index_heads([lf])
        entry = None if head is None else next(
            (e for e in head.entries if e.column == column and e.index_type == BLOOM_FILTER.name), None)
        if entry is None or entry.empty:
            return min(rows, items)
        reader = table.index_reader(lf, entry, table.file_schema(lf).field(column).type, None)
        estimated = reader.summary()["estimated_items"]
        return rows if not math.isfinite(estimated) else min(rows, math.ceil(estimated))
    except (IndexCoreError, KeyError):
        return min(rows, items)


def census_blooms(census, by_path: Mapping) -> dict[str, list]:
    """The readable, non-empty bloom filters of a ``$file_indexes`` census per column, as
    :func:`column_sizing` takes them (``by_path``: its live files by path)."""
    blooms = census.filter(pc.and_kleene(
        pc.and_kleene(pc.equal(census["index_type"], BLOOM_FILTER.name), pc.is_null(census["error"])),
        pc.and_kleene(pc.is_valid(census["column_name"]), pc.invert(pc.fill_null(census["is_empty"], False)))))
    per_column: dict[str, list] = {}
    paths = blooms["file_path"].to_pylist()
    files = by_path.many(paths) if isinstance(by_path, LiveFilesByPath) else [by_path.get(p) for p in paths]
    for lf, column, size in zip(files, blooms["column_name"].to_pylist(), blooms["index_size_in_bytes"].to_pylist(),
                                strict=True):
        if lf is not None:
            per_column.setdefault(column, []).append((lf, column, size))
    return per_column


def census_sizing(table, census, by_path: Mapping) -> list[BloomSizing]:
    """:func:`column_sizing` of every bloom-indexed column of a ``$file_indexes`` census
    (``by_path``: its live files by path)."""
    per_column = census_blooms(census, by_path)
    out = []
    for column in sorted(per_column):
        sizing = column_sizing(table, column, per_column[column])
        if sizing is not None:
            out.append(sizing)
    return out


def table_sizing(table, snapshot_id: int | None = None) -> list[BloomSizing]:
    """:func:`column_sizing` of every bloom-indexed column of a snapshot (latest by default)."""
    plan = table.plan(snapshot_id)
    sid = plan.snapshot.id if plan.snapshot else None
    return census_sizing(table, view(table, "file_indexes", sid), {lf.path: lf for lf in plan.files})
