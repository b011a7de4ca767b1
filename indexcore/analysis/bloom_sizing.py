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
  so its rows stand in; census rows have their filters read as bytes, each container once, and
  their bits counted together: :func:`_blob_keys`) for files with more rows than ``items``,
  bounded by rows for the others
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
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from indexcore.errors import IndexCoreError
from indexcore.formats.bloom import (
    DEFAULT_FPP,
    DEFAULT_ITEMS,
    HEADER_SIZE,
    MAX_HASH_FUNCTIONS,
    estimate_items,
    items_for_fpp,
    optimal_bits,
)
from indexcore.formats.registry import BLOOM_FILTER
from indexcore.views import view
from indexcore.views.blob_bytes import census_blob_bytes
from indexcore.views.census import texts_in
from indexcore.views.census_blobs import names_plan_rows
from indexcore.warehouse.model import LiveFile
from indexcore.warehouse.plan_columns import LiveFilesByPath, whole

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
        return (f"{self.over_fpp_files:,} of {self.files:,} filters hold more distinct keys than "
                f"items={self.configured_items}: more false positives than fpp {self.configured_fpp}; {self.cause_text()}")

    def cause_text(self) -> str:
        """Over fpp: what the cause is and its fix (the part of :meth:`message` after the finding)."""
        if self.cause == SKEW:
            return (f"{BLOOM_SHARE:.0%} of the files hold at most {self.ndv_share:,} keys, so items is "
                    f"not the cause: the over-fpp filters are on the largest files (from "
                    f"{self.over_fpp_rows_min:,} rows; 95% of files have at most {self.rows_p95:,}). File-size "
                    "skew is the cause and compaction the fix")
        return f"items={self.recommended_items} keeps {BLOOM_SHARE:.0%} of the files under fpp {self.configured_fpp}"


def _quantile(values: list[int], q: float) -> int:
    """The ``q`` quantile with linear interpolation (pandas' default), rounded up; at least 1.
    The two order statistics by a partial sort in numpy (a million files' rows: no Python sort)."""
    pos = (len(values) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(values) - 1)
    part = np.partition(np.asarray(values, np.int64), [lo, hi])
    low, high = int(part[lo]), int(part[hi])
    return max(1, math.ceil(low + (high - low) * (pos - lo)))


def covering(values: list[int], share: float) -> int:
    """The smallest value at or above which no more than ``1 - share`` of ``values`` lie (at least 1)."""
    if not len(values):
        return 1
    k = max(math.ceil(share * len(values)) - 1, 0)
    return max(1, int(np.partition(np.asarray(values, np.int64), k)[k]))


def column_sizing(table, column: str, blooms: Iterable[tuple[LiveFile, str, int]]) -> BloomSizing | None:
    """The sizing verdict of ``column``'s bloom filters: ``blooms`` holds (live file, the column's
    name in that file's schema, the filter's stored bytes) per readable, non-empty filter.
    None when no file's options could be read."""
    return sizing_of(column, bloom_tally(table, blooms))


def bloom_tally(table, blooms: Iterable[tuple[LiveFile, str, int]]) -> dict:
    """What :func:`sizing_of` needs of some of a column's filters (live file, its column name, its
    bytes), in sums, sets and per-file lists that add up across disjoint sets of files (Spark tasks
    each tally their own: :func:`merge_tallies`): :func:`rows_tally` of them as census rows."""
    blooms = list(blooms)
    by_path = {lf.path: lf for lf, _, _ in blooms}
    rows = pa.table({"schema_id": pa.array([lf.file.schema_id for lf, _, _ in blooms], pa.int64()),
                     "record_count": pa.array([lf.file.row_count for lf, _, _ in blooms], pa.int64()),
                     "column_name": pa.array([name for _, name, _ in blooms], pa.string()),
                     "index_size_in_bytes": pa.array([size for _, _, size in blooms], pa.int64()),
                     "file_path": pa.array([lf.path for lf, _, _ in blooms], pa.string())})
    return rows_tally(table, rows, lambda paths: [by_path[p] for p in paths])


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


def census_tallies(table, census, by_path: Mapping) -> dict[str, dict]:
    """:func:`bloom_tally` of every bloom-indexed column of a ``$file_indexes`` census (``by_path``:
    its live files by path; filters of other files are left out): judged on the census's columns
    (schema id, rows, bytes); a live file is made only for a file whose filter's bits are read."""
    # only the columns a tally reads are copied by the filters (a filter copies every column it keeps:
    # all sixteen of about 1M bloom rows at 1,000,000 files, twice, were ~260 MB of the Bloom page's peak)
    kept = [c for c in census.column_names if c in _TALLIED or c in _BLOB_COLUMNS]
    blooms = census.select(kept).filter(pc.and_kleene(
        pc.and_kleene(texts_in(census["index_type"], pa.array([BLOOM_FILTER.name])), pc.is_null(census["error"])),
        pc.and_kleene(pc.is_valid(census["column_name"]), pc.invert(pc.fill_null(census["is_empty"], False)))))
    planned = by_path.paths() if isinstance(by_path, LiveFilesByPath) else pa.array(list(by_path), pa.string())
    plan_rows = isinstance(by_path, LiveFilesByPath) and names_plan_rows(blooms["file_path"], planned)
    if not plan_rows:
        blooms = blooms.filter(pc.is_in(blooms["file_path"], planned))  # planned files only

    def files_of(paths: pa.Array) -> list[LiveFile | None]:
        if plan_rows:  # the census names plan rows: those files made, no map of every path
            return by_path.at_rows(whole(paths).indices.to_numpy(zero_copy_only=False))
        texts = paths.cast(pa.string()).to_pylist()
        return by_path.many(texts) if isinstance(by_path, LiveFilesByPath) else [by_path.get(p) for p in texts]

    plan = by_path.plan if isinstance(by_path, LiveFilesByPath) else None

    def blobs_of(rows: pa.Table) -> list[bytes | None]:  # the filters' bytes, each container read once
        return census_blob_bytes(table, rows, plan.snapshot.id if plan.snapshot else None, plan)[0]

    batched = plan is not None and set(_BLOB_COLUMNS) <= set(blooms.column_names)
    out = {}
    columns = sorted(set(pc.unique(blooms["column_name"]).to_pylist()))
    for column in columns:
        mine = blooms if len(columns) == 1 else blooms.filter(texts_in(blooms["column_name"], pa.array([column])))
        out[column] = _tally_columns(table, column, mine, files_of, blobs_of if batched else None)
    return out


# the census columns :func:`census_blob_bytes` reads a row's blob by
_BLOB_COLUMNS = ("file_path", "index_file_path", "storage_type", "column_name", "index_type", "index_offset",
                 "index_size_in_bytes", "is_empty", "error", "schema_id")
# what census_tallies reads: the tally's columns and, where the census has them, a blob's location
_TALLIED = ("file_path", "schema_id", "record_count", "index_size_in_bytes", "column_name")


def rows_tally(table, rows: pa.Table, files_of: Callable[[list[str]], list[LiveFile | None]]) -> dict:
    """:func:`bloom_tally` of ``$file_indexes`` census rows, one per readable, non-empty filter
    (``files_of(paths)``: the live files of those whose filter's bits are read): :func:`_tally_columns`
    of each name the column has in its files' schemas (a renamed column has several), merged."""
    if rows.num_rows and pa.types.is_dictionary(rows["file_path"].type):  # plain: 25x quicker to list
        rows = rows.set_column(rows.schema.get_field_index("file_path"), "file_path",
                               rows["file_path"].cast(pa.string()))
    names = rows["column_name"]
    found = pc.unique(names).to_pylist()

    def listed(paths: pa.Array) -> list[LiveFile | None]:
        return files_of(paths.to_pylist())

    if len(found) == 1:
        return _tally_columns(table, found[0], rows, listed)
    return merge_tallies(_tally_columns(table, name, rows.filter(texts_in(names, pa.array([name]))), listed)
                         for name in found)


READ_SLICE = 4096  # bloom filters whose bits are read for one batch of live files


def _tally_columns(table, column: str, blooms: pa.Table, files_of: Callable[[pa.Array], list[LiveFile | None]],
                   blobs_of: Callable[[pa.Table], list[bytes | None]] | None = None) -> dict:
    """The tally (the one rule: :func:`bloom_tally`) of census rows ``blooms`` whose files' schemas
    all name the column ``column``, on their columns: options judged per file schema, the bytes a
    file's rows need per distinct (rows, fpp), sums in numpy; only the files with more rows than
    ``items`` have their filter's bits read: a slice at a time as bytes (``blobs_of(rows)``: each
    row's blob, None where it is not had so), their bits counted together (:func:`_blob_keys`); the
    others leave the columns (``files_of(paths)``: their live files, of their ``file_path`` cells)
    for :func:`_distinct_keys`."""
    sids = blooms["schema_id"].to_numpy()
    counts = blooms["record_count"].to_numpy()
    sizes = blooms["index_size_in_bytes"].to_numpy()
    paths = blooms["file_path"]
    items = np.zeros(len(sids), np.int64)
    fpps = np.zeros(len(sids), np.float64)
    valid = np.zeros(len(sids), bool)
    for sid in np.unique(sids).tolist():  # the options of each file schema (the same for its files)
        at = sids == sid
        opts = table.schema_or_latest(sid, paths[int(np.argmax(at))].as_py()).file_index_options(
            column, BLOOM_FILTER.name)
        try:
            items[at], fpps[at] = int(opts.get("items", DEFAULT_ITEMS)), float(opts.get("fpp", DEFAULT_FPP))
        except ValueError:
            continue
        valid[at] = True
    counts = counts.astype(np.int64)
    need = np.zeros(len(sids), np.int64)
    for fpp in np.unique(fpps[valid]).tolist():  # files of a table share a few row counts
        of_fpp = valid & (fpps == fpp)
        distinct, where = distinct_inverse(counts[of_fpp])
        bytes_of = np.zeros(len(distinct), np.int64)
        ok = np.ones(len(distinct), bool)
        for i, n in enumerate(distinct.tolist()):
            try:
                bytes_of[i] = optimal_bits(max(1, n), fpp) // 8 + HEADER_SIZE
            except ValueError:  # an fpp the filter cannot have: the file is left out, as its options are
                ok[i] = False
        need[of_fpp] = bytes_of[where]
        valid[np.flatnonzero(of_fpp)[~ok[where]]] = False
    keep = np.flatnonzero(valid)
    items, fpps, counts, sizes = items[keep], fpps[keep], counts[keep], sizes[keep]
    needed = int(need[keep].sum())
    rows = counts.tolist()
    ndv = list(rows)
    over, over_rows = 0, []
    read = np.flatnonzero(counts > items)
    for lo in range(0, len(read), READ_SLICE):  # a slice's live files at a time, gone before the next
        part = read[lo:lo + READ_SLICE]
        keys = np.full(len(part), -1, np.int64)
        if blobs_of is not None:
            keys = _blob_keys(blobs_of(blooms.take(pa.array(keep[part]))), counts[part], items[part])
        alone = part[keys < 0]  # not had as bytes: through the file's reader
        files = files_of(paths.take(pa.array(keep[alone]))) if len(alone) else []
        for at, lf in zip(alone.tolist(), files, strict=True):
            n_rows, limit = rows[at], int(items[at])
            ndv[at] = min(n_rows, limit) if lf is None else _distinct_keys(table, lf, column, n_rows, limit)
        for at, k in zip(part.tolist(), keys.tolist(), strict=True):
            if k >= 0:
                ndv[at] = k
            if ndv[at] > items[at]:
                over += 1
                over_rows.append(rows[at])
    return {"stored": int(sizes.sum()), "needed": int(needed), "over": over, "items": set(items.tolist()),
            "fpp": set(fpps.tolist()), "rows": rows, "ndv": ndv, "over_rows": over_rows}


def distinct_inverse(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(values, return_inverse=True)`` of integers; of small non-negative ones (rows per
    file) by counting, not by sorting every value (an argsort of 1M row counts was 0.14 s of health)."""
    top = int(values.max()) if len(values) else -1
    if not len(values) or int(values.min()) < 0 or top >= max(1 << 20, 4 * len(values)):
        return np.unique(values, return_inverse=True)
    distinct = np.flatnonzero(np.bincount(values, minlength=top + 1))
    number = np.zeros(top + 1, np.int64)
    number[distinct] = np.arange(len(distinct))
    return distinct.astype(values.dtype), number[values]


_POPCOUNT = np.array([bin(b).count("1") for b in range(256)], np.int64)  # set bits of each byte value


def _blob_keys(blobs: list[bytes | None], rows: np.ndarray, items: np.ndarray) -> np.ndarray:
    """:func:`_distinct_keys` of bloom-filter blobs given as bytes (-1 where None), their bits
    counted in one numpy pass over all of them: the reader's summary estimate (the header's hash
    count, the bit set's popcount) bounded by rows; rows when saturated; ``min(rows, items)``
    for a blob its reader refuses (no bit set, an impossible hash count)."""
    out = np.full(len(blobs), -1, np.int64)
    got = [i for i, b in enumerate(blobs) if b is not None]
    if not got:
        return out
    sizes = np.array([len(blobs[i]) for i in got], np.int64)
    data = np.frombuffer(b"".join(blobs[i] for i in got), np.uint8)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    ones = np.concatenate([[0], np.cumsum(_POPCOUNT[data])])  # set bits before each byte
    bits_from = np.minimum(starts + HEADER_SIZE, starts + sizes)
    set_bits = ones[starts + sizes] - ones[bits_from]
    head = np.zeros(len(got), np.int64)
    whole = sizes > HEADER_SIZE
    for j in range(HEADER_SIZE):  # the hash count: a big-endian int at the blob's start
        head = (head << 8) | np.where(whole, data[np.minimum(starts + j, len(data) - 1)], 0)
    head = np.where(head >= 1 << 31, head - (1 << 32), head)
    for i, size, k, x in zip(got, sizes.tolist(), head.tolist(), set_bits.tolist(), strict=True):
        n_rows, limit = int(rows[i]), int(items[i])
        if size <= HEADER_SIZE or not 1 <= k <= MAX_HASH_FUNCTIONS:
            out[i] = min(n_rows, limit)
            continue
        estimated = estimate_items((size - HEADER_SIZE) * 8, x, k)
        out[i] = n_rows if not math.isfinite(estimated) else min(n_rows, math.ceil(estimated))
    return out


def census_sizing(table, census, by_path: Mapping) -> list[BloomSizing]:
    """:func:`column_sizing` of every bloom-indexed column of a ``$file_indexes`` census
    (``by_path``: its live files by path), as :func:`census_tallies` judges them."""
    verdicts = (sizing_of(column, tally) for column, tally in census_tallies(table, census, by_path).items())
    return [v for v in verdicts if v is not None]


def table_sizing(table, snapshot_id: int | None = None) -> list[BloomSizing]:
    """:func:`column_sizing` of every bloom-indexed column of a snapshot (latest by default), on
    the columnar plan (no live file object but for the filters whose bits are read)."""
    plan = table.plan_columns(snapshot_id)
    sid = plan.snapshot.id if plan.snapshot else None
    return census_sizing(table, view(table, "file_indexes", sid), plan.by_path(table))
