"""Table and warehouse health at a glance, from metadata alone.

Everything here comes from manifests, the index manifest and file-index container heads (the
``$file_indexes`` view); no data file is read, and a bloom filter's bit set is read only for
files that hold more rows than the filter was sized for. Per table:

- index bytes against data bytes per index kind and storage (embedded in the manifest, in a
  ``.index`` file, or a table-level file of the index manifest: deletion vectors, HASH, global);
- small files (under :meth:`CoreOptions.small_file_threshold`), DV density (table and worst
  partition x bucket);
- per file index: coverage (live files lacking a configured one), stale ones (carried but no
  longer configured) and ones on the wrong column (:func:`.advise.index_inventory`);
- bloom-filter sizing per column (:func:`.bloom_sizing.column_sizing`, shared with the advisor),
  with one recommended ``items``;
- the files that could not be used and why (:func:`unusable_files` for file indexes and DVs,
  :func:`unusable_index_files` for HASH and global index files; shared with the pages);
- a list of :class:`HealthItem` (severity, the app page that explains it) and a score.

The score follows Amoro's table health score: start at 100 and deduct per issue kind, each
kind's deduction weighted by the share of the table it touches and capped (:data:`CAPS`); small
files cost Amoro's penalty (:mod:`.health_score` says why each weight is what it is).
Info items deduct nothing. The warehouse score is the mean of the table scores weighted by
live files (a table that cannot be opened scores 0).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from indexcore.analysis.advise import index_inventory
from indexcore.analysis.audit import hash_rows_mismatch
from indexcore.analysis.balance import DEFAULT_COMPACTION_DENSITY, dv_by_bucket
from indexcore.analysis.bloom_sizing import OVER_FPP, OVERSIZED, SKEW, BloomSizing, census_sizing
from indexcore.analysis.health_score import CAPS, deduction, small_file_points
from indexcore.analysis.index_bytes import CONTAINER_HEAD, IndexBytes, index_bytes_of
from indexcore.analysis.live_rows import live_rows
from indexcore.errors import IndexCoreError, StorageError
from indexcore.formats.registry import BLOOM_FILTER, FILE_INDEX_KINDS, FILE_INDEX_TYPES
from indexcore.io import Fetch
from indexcore.paimon.index_types import DELETION_VECTORS, HASH
from indexcore.views import register_view, view
from indexcore.views.census import unusable_rows
from indexcore.views.census_rows import FILE_INDEXES
from indexcore.views.common import from_rows, partition_label, partition_types, to_frame
from indexcore.warehouse.global_index import global_index_files, open_reader
from indexcore.warehouse.table_planning import KNOWN_INDEX_TYPES, LISTED_GLOBAL_TYPES

Progress = Callable[[int, int, str], None]

# the key of the app page that explains an item (pages/ maps keys to titles and scripts)
PAGE_TABLE, PAGE_BITMAP, PAGE_BLOOM = "table", "bitmap", "bloom"
PAGE_RANGE, PAGE_DV, PAGE_HASH, PAGE_WHATIF = "range", "deletion_vectors", "hash_index", "what_if"
PAGE_GLOBAL = "global_indexes"
# the page that explains each index kind (a file-index kind names its page: IndexKind.page)
KIND_PAGE = {**{k.name: k.page for k in FILE_INDEX_KINDS}, DELETION_VECTORS: PAGE_DV, HASH: PAGE_HASH}

ERROR, WARNING, INFO = "error", "warning", "info"
SEVERITIES = (ERROR, WARNING, INFO)
# an unusable file always costs at least this share of its cap: a query may read wrong or more
UNUSABLE_FLOOR = 0.25
# index bytes above this share of data bytes are worth a look; above INDEX_HEAVY they cost points
INDEX_NOTE, INDEX_HEAVY = 0.5, 1.0
UNUSABLE_COLUMNS = ["file_name", "index_type", "column_name", "why", "error"]
MISSING_DV = "missing DV file"  # the reason a live file whose DV file is gone cannot be used
NOT_FOUND = "file not found"  # how storage errors begin when a file is gone
# the index-manifest files :func:`unusable_index_files` checks, and why one cannot be used
GLOBAL_INDEX, UNKNOWN_KIND = "global index", "unknown"
MISSING_HASH, UNREADABLE_HASH, HASH_ROWS = "missing hash index file", "unreadable hash index", \
    "hash index row count mismatch"
MISSING_GLOBAL, UNREADABLE_GLOBAL = "missing global index file", "unreadable global index"
# reasons whose page is not the one of their index kind (a global "bitmap" is not a file index)
WHY_PAGE = {MISSING_DV: PAGE_DV, MISSING_GLOBAL: PAGE_GLOBAL, UNREADABLE_GLOBAL: PAGE_GLOBAL}


@dataclass(frozen=True)
class HealthItem:
    """One finding: what, how bad, the page that explains it, and what it costs the score."""

    table: str
    kind: str
    severity: str
    message: str
    page: str
    deduction: int = 0
    column: str | None = None
    index_type: str | None = None
    files: int | None = None
    recommendation: str | None = None


@dataclass(frozen=True)
class Coverage:
    """A file index configured or carried by live files: how many carry it, how many lack it
    (configured only), how many carry it on the wrong column (a name the file's schema lacks,
    or one that now means another field); ``configured`` False with carriers is a stale index."""

    column: str
    index_type: str
    files: int
    lacking: int
    configured: bool = True
    carrying: int = 0
    wrong_column: int = 0
    why_wrong: str | None = None

    @property
    def stale(self) -> bool:
        return not self.configured and self.carrying > 0


@dataclass(frozen=True)
class TableHealth:
    """A table's health at one snapshot (``error`` when it could not be opened at all)."""

    table: str
    snapshot: int | None = None
    files: int = 0
    rows: int = 0  # records of the live files
    live_rows: int = 0  # rows a read returns (:mod:`.live_rows`; an upper bound unless live_rows_exact)
    live_rows_exact: bool = True
    data_bytes: int = 0
    index_bytes: tuple[IndexBytes, ...] = ()
    small_files: int = 0
    small_file_threshold: int | None = None
    deleted_rows: int = 0
    dv_density: float = 0.0
    worst_bucket: str | None = None
    worst_bucket_density: float = 0.0
    coverage: tuple[Coverage, ...] = ()
    blooms: tuple[BloomSizing, ...] = ()
    unusable: tuple[tuple, ...] = field(default=(), repr=False)  # rows of UNUSABLE_COLUMNS
    problems: int = 0
    items: tuple[HealthItem, ...] = ()
    score: int = 100
    error: str | None = None

    @property
    def total_index_bytes(self) -> int:
        return sum(b.bytes for b in self.index_bytes)

    @property
    def unusable_frame(self) -> pd.DataFrame:
        return pd.DataFrame(list(self.unusable), columns=UNUSABLE_COLUMNS)


@dataclass(frozen=True)
class WarehouseHealth:
    tables: tuple[TableHealth, ...]
    score: int

    @property
    def items(self) -> tuple[HealthItem, ...]:
        return tuple(i for t in self.tables for i in t.items)


# ---------------------------------------------------------------------------------------
# Files a page could not use


def unusable_files(file_indexes: pd.DataFrame, index_types: Iterable[str] | None = None,
                   lost_dvs: pd.DataFrame | None = None) -> pd.DataFrame:
    """The files whose file index (of ``index_types``; all when None) or deletion vector could
    not be used, and why: ``unreadable index``, ``missing .index file``, ``unknown index kind X``
    or ``missing DV file``.

    ``file_indexes`` is the ``$file_indexes`` view as a frame; ``lost_dvs`` the rows of the
    ``$deletion_vectors`` view (``file_name``, ``dv_file``) whose DV file is gone
    (:func:`lost_deletion_vectors`).
    """
    parts = []
    if not file_indexes.empty:
        kinds = file_indexes["index_type"]
        unknown = kinds.notna() & ~kinds.isin(FILE_INDEX_TYPES)
        wanted = kinds.isna() | (kinds.isin(list(index_types)) if index_types is not None else True)
        bad = file_indexes[(file_indexes["error"].notna() & wanted) | unknown].copy()
        missing = bad["error"].fillna("").str.startswith(NOT_FOUND)
        bad["why"] = "unreadable index"
        bad.loc[missing, "why"] = "missing .index file"
        bad.loc[unknown, "why"] = "unknown index kind " + bad.loc[unknown, "index_type"].astype(str)
        parts.append(bad[UNUSABLE_COLUMNS])
    if lost_dvs is not None and not lost_dvs.empty:
        parts.append(pd.DataFrame({"file_name": lost_dvs["file_name"], "index_type": DELETION_VECTORS,
                                   "column_name": None, "why": MISSING_DV,
                                   "error": f"{NOT_FOUND}: " + lost_dvs["dv_file"].astype(str)}))
    if not parts:
        return pd.DataFrame(columns=UNUSABLE_COLUMNS)
    return pd.concat(parts, ignore_index=True)


def unusable_index_files(table, snapshot_id: int | None = None,
                         kinds: Iterable[str] = (HASH, GLOBAL_INDEX, UNKNOWN_KIND), plan=None) -> pd.DataFrame:
    """The index-manifest files of a snapshot that could not be used, and why (rows of
    :data:`UNUSABLE_COLUMNS`), for the ``kinds`` asked:

    - ``HASH`` (dynamic-bucket hash indexes): missing, unreadable (our error), or holding another
      number of hashes than the index manifest's row count;
    - :data:`GLOBAL_INDEX`: missing, or a BTree / bitmap file whose head or null-row bitmap
      cannot be decoded (vector and full-text files are only checked to exist);
    - :data:`UNKNOWN_KIND`: an index kind indexcore neither decodes nor lists.

    Unreadable index manifests are not here: they are plan problems (``problems_frame``). ``plan``:
    anything with the snapshot's ``index_entries`` and ``hash_indexes`` (a plan head: no data file planned).
    """
    kinds = set(kinds)
    if plan is None:
        plan = table.plan_columns(snapshot_id)  # the index manifest's entries: no object per data file
    rows = []

    def broken(name: str, kind: str, column, exc: IndexCoreError, missing: str, unreadable: str) -> None:
        rows.append((name, kind, column, missing if exc.message.startswith(NOT_FOUND) else unreadable, str(exc)))

    if HASH in kinds and plan.hash_indexes:
        entries = [e for es in plan.hash_indexes.values() for e in es]
        paths = [table.index_file_path(e, table.partition_dir(e.partition)) for e in entries]
        table.storage.prefetch([Fetch(p) for p in paths])
        for e in entries:
            meta = e.index_file
            try:
                count = table.hash_index(e).count
            except IndexCoreError as exc:
                broken(meta.file_name, HASH, None, exc, MISSING_HASH, UNREADABLE_HASH)
                continue
            mismatch = hash_rows_mismatch(count, meta)
            if mismatch:
                rows.append((meta.file_name, HASH, None, HASH_ROWS, mismatch))
    # only asked when the index manifest lists one (global_index_files reads that manifest again)
    if GLOBAL_INDEX in kinds and any(e.index_file.global_index_meta is not None for e in plan.index_entries):
        for gif in global_index_files(table, snapshot_id):
            meta, column = gif.entry.index_file, gif.field.name if gif.field is not None else None
            try:
                reader = open_reader(table, gif)
                if reader is not None:
                    _ = reader.null_rows  # decodes the head and the null-row bitmap
                elif not table.storage.exists(gif.path):
                    raise StorageError(NOT_FOUND, file=gif.path)
            except IndexCoreError as exc:
                broken(meta.file_name, gif.index_type, column, exc, MISSING_GLOBAL, UNREADABLE_GLOBAL)
    if UNKNOWN_KIND in kinds:
        types = partition_types(table)
        rows += [(e.index_file.file_name, e.index_file.index_type, None,
                  f"unknown index kind {e.index_file.index_type}",
                  f"{partition_label(e.partition, types, table.caches.labels)} bucket {e.bucket}") for e in _undecoded(plan)]
    return pd.DataFrame(rows, columns=UNUSABLE_COLUMNS)


def lost_deletion_vectors(table, deletion_vectors: pd.DataFrame) -> pd.DataFrame:
    """Rows of a ``$deletion_vectors`` frame whose DV index file does not exist (one check per DV file)."""
    if deletion_vectors.empty or "dv_file" not in deletion_vectors:
        return deletion_vectors.iloc[0:0]
    gone = [p for p in deletion_vectors["dv_file"].dropna().unique() if not table.storage.exists(p)]
    return deletion_vectors[deletion_vectors["dv_file"].isin(gone)]


# ---------------------------------------------------------------------------------------
# One table


def worst_bucket(buckets: pd.DataFrame) -> tuple[str, float]:
    """The densest partition x bucket of a :func:`.balance.dv_by_bucket` frame (ties: the first in
    its (partition, bucket) order) and its density."""
    top = buckets.sort_values("density", ascending=False, kind="stable").iloc[0]
    return f"{top['partition']} bucket {int(top['bucket'])}", float(top["density"])


def _coverage(table, snapshot_id, unreadable: set[str]) -> list[Coverage]:
    """Configured or carried file indexes (:func:`advise.index_inventory`): the live files lacking
    them, carrying them, carrying them on the wrong column; a file whose index container is
    ``unreadable`` is listed as unusable, not as lacking."""
    groups, _problems = index_inventory(table, snapshot_id)
    return [Coverage(g.column, g.index_type, g.live_files, lacking_files(g.missing, unreadable) if g.configured else 0,
                     g.configured, len(g.blobs), len(g.wrong_column),
                     g.wrong_column[0]["reason"] if g.wrong_column else None)
            for g in groups if g.index_type in FILE_INDEX_TYPES and (g.configured or g.blobs)]


def lacking_files(missing: list[str], unreadable: set[str]) -> int:
    """The files of ``missing`` (paths, one per file) whose container is not ``unreadable``: no set
    of the missing paths when no container is (a newly configured index lacks on every file)."""
    return len(missing) if not unreadable else len(set(missing) - unreadable)


def _undecoded(plan) -> list:
    """Index manifest entries of a kind indexcore neither decodes nor lists."""
    return [e for e in plan.index_entries if e.index_file.index_type not in KNOWN_INDEX_TYPES
            and not (e.index_file.global_index_meta is not None and e.index_file.index_type in LISTED_GLOBAL_TYPES)]


def _small_files(plan, limit: int) -> tuple[int, int]:
    """(files under ``limit`` bytes, those of them sharing their partition and bucket with another)."""
    live = plan.files.select(["_FILE_SIZE", "partition_id", "_BUCKET"])  # not a copy of every column's small rows
    small = live.filter(pc.less(live.column("_FILE_SIZE"), limit)).select(["partition_id", "_BUCKET"])
    if not small.num_rows:
        return 0, 0
    first: dict = {}  # partition values -> the first partition id holding them (raw bytes may differ)
    canon = np.array([first.setdefault(p[0], i) for i, p in enumerate(plan.partitions)], np.int64)
    pid = canon[small.column("partition_id").to_numpy()]
    keys = (pid << 32) | (small.column("_BUCKET").to_numpy().astype(np.int64) & 0xFFFFFFFF)
    counts = np.unique(keys, return_counts=True)[1]
    return int(counts.sum()), int(counts[counts > 1].sum())


def table_health(table, snapshot_id: int | None = None) -> TableHealth:
    """The health of one table at ``snapshot_id`` (latest by default); see the module docstring."""
    plan = table.plan_columns(snapshot_id)  # the file aggregates on columns, no object per file
    sid = plan.snapshot.id if plan.snapshot else None
    schema = table.read_schema(snapshot_id, plan.snapshot)
    files = plan.num_files
    data_bytes = int(pc.sum(plan.files.column("_FILE_SIZE")).as_py() or 0)
    rows = int(pc.sum(plan.files.column("_ROW_COUNT")).as_py() or 0)
    census = view(table, "file_indexes", sid) if files else FILE_INDEXES.empty_table()
    bad_rows = unusable_rows(census)  # all unusable_files and the unreadable containers need; a frame only of some
    frame = to_frame(bad_rows) if bad_rows.num_rows else pd.DataFrame()
    by_path = plan.by_path(table)

    index_bytes = index_bytes_of(census, plan, data_bytes)
    limit = schema.core_options.small_file_threshold(bool(schema.primary_keys))
    target = schema.core_options.target_file_size_for(bool(schema.primary_keys))
    small_files, mergeable = _small_files(plan, limit)

    dv_view = view(table, "deletion_vectors", sid) if files else None
    deleted = int(pc.sum(dv_view["deleted"]).as_py() or 0) if dv_view is not None else 0
    # the worst bucket summed on the view's Arrow columns; a frame only of the files with a DV (lost
    # ones): at 1,000,000 files a frame of every file was 0.25 GB while health ran
    dvs = pd.DataFrame() if dv_view is None else dv_view.filter(dv_view["has_dv"]).to_pandas()
    worst, worst_density = None, 0.0
    if deleted:
        worst, worst_density = worst_bucket(dv_by_bucket(dv_view))
    lost = lost_deletion_vectors(table, dvs) if not dvs.empty else None
    unusable = [u for u in (unusable_files(frame, None, lost), unusable_index_files(table, sid)) if not u.empty]
    broken = set(frame.loc[frame["error"].notna() & frame["column_name"].isna(), "file_path"]) \
        if files and not frame.empty else set()
    coverage = _coverage(table, sid, broken) if files else []
    blooms = census_sizing(table, census, by_path)
    problems = len({(p.path, p.structure, p.reason) for p in [*plan.problems, *table.problems]})
    live = live_rows(table, snapshot_id)

    h = TableHealth(
        table=table.name, snapshot=sid, files=files, rows=rows, live_rows=live.live,
        live_rows_exact=live.exact, data_bytes=data_bytes,
        index_bytes=tuple(index_bytes), small_files=small_files, small_file_threshold=limit,
        deleted_rows=deleted, dv_density=deleted / rows if rows else 0.0, worst_bucket=worst,
        worst_bucket_density=worst_density, coverage=tuple(coverage), blooms=tuple(blooms),
        unusable=tuple(r for u in unusable for r in u.itertuples(index=False, name=None)), problems=problems)
    return scored(h, mergeable, target, [*plan.problems, *table.problems])


def scored(h: TableHealth, mergeable: int, target: int, problems) -> TableHealth:
    """``h`` with its items and score (``mergeable``: small files sharing a bucket; ``target``: the
    target file size; ``problems``: the plan's and the table's)."""
    points = small_file_points(h.files, h.data_bytes, h.small_file_threshold, target) if mergeable else 0
    items = _items(h, mergeable, points, problems)
    score = max(0, 100 - sum(_capped(items).values()))
    return TableHealth(**{**{f: getattr(h, f) for f in h.__dataclass_fields__}, "items": tuple(items),
                          "score": score})


def _capped(items: Iterable[HealthItem]) -> dict[str, int]:
    """Points taken off per issue kind, each kind at most its cap."""
    out: dict[str, int] = {}
    for i in items:
        out[i.kind] = min(CAPS.get(i.kind, 0), out.get(i.kind, 0) + i.deduction)
    return out


def _items(h: TableHealth, mergeable: int, small_points: int, problems) -> list[HealthItem]:
    """The findings of a table, worst first (``small_points``: the small-file penalty)."""
    t, out = h.table, []

    def item(kind, severity, message, page, share=None, points=None, **kw):
        if points is None:
            points = deduction(kind, share) if severity != INFO and share is not None else 0
        out.append(HealthItem(t, kind, severity, message, page, points, **kw))

    seen = {(p.path, p.structure, p.reason) for p in problems}
    if seen:
        first = next(iter(seen))
        item("unreadable-metadata", ERROR, f"{len(seen)} unreadable part(s) of the table's metadata "
             f"(first: {first[1]} {first[0].rsplit('/', 1)[-1]}: {first[2]})", PAGE_TABLE, 0.5, files=len(seen))
    if h.unusable:  # a frame (and its group-by) only for a table with unusable files
        for why, g in h.unusable_frame.groupby("why", sort=True):
            n = g["file_name"].nunique()
            kinds = [k for k in g["index_type"].dropna().unique() if k in KIND_PAGE]
            page = KIND_PAGE[kinds[0]] if len(kinds) == 1 else PAGE_TABLE
            page = WHY_PAGE.get(why, page)
            item("unusable-files", ERROR, f"{n} file(s) cannot be used: {why}", page,
                 max(UNUSABLE_FLOOR, n / max(1, h.files)), files=n)
    if h.worst_bucket_density >= DEFAULT_COMPACTION_DENSITY:
        item("dv-density", WARNING, f"{h.worst_bucket_density:.0%} of the rows of {h.worst_bucket} are deleted "
             f"({h.dv_density:.1%} of the table)", PAGE_DV, h.worst_bucket_density,
             recommendation="a full compaction of the bucket drops the deleted rows and their deletion vectors")
    elif h.deleted_rows:
        item("dv-density", INFO, f"{h.dv_density:.1%} of the rows are deleted (densest: {h.worst_bucket} at "
             f"{h.worst_bucket_density:.0%})", PAGE_DV)
    for c in h.coverage:
        page = KIND_PAGE.get(c.index_type, PAGE_TABLE)
        if c.stale:
            gone = f" ({c.wrong_column} of them on a field the table no longer has: {c.why_wrong})" \
                if c.wrong_column else ""
            item("stale-index", WARNING, f"{c.carrying:,} of {c.files:,} live files carry a {c.index_type} index on "
                 f"{c.column}{gone}, but file-index.{c.index_type}.columns no longer lists it", page,
                 c.carrying / max(1, c.files), column=c.column, index_type=c.index_type, files=c.carrying,
                 recommendation="files written from now on lack it; CALL sys.rewrite_file_index drops it from "
                                "the old ones, or configure it again")
        elif c.wrong_column:
            item("wrong-column", WARNING, f"{c.wrong_column} file(s) carry a {c.index_type} index on {c.column} "
                 f"whose column does not match the file's schema: {c.why_wrong}", page,
                 max(UNUSABLE_FLOOR, c.wrong_column / max(1, c.files)), column=c.column, index_type=c.index_type,
                 files=c.wrong_column, recommendation="CALL sys.rewrite_file_index rebuilds the files' indexes "
                                                      "from the current schema")
        if c.lacking:
            item("index-coverage", WARNING, f"{c.lacking:,} of {c.files:,} live files lack the configured "
                 f"{c.index_type} index on {c.column}", page,
                 c.lacking / max(1, c.files), column=c.column, index_type=c.index_type, files=c.lacking,
                 recommendation="CALL sys.rewrite_file_index builds it for the files written before it was "
                                "configured")
    if mergeable:
        mean = h.data_bytes // max(1, h.files)
        item("small-files", WARNING if small_points else INFO,
             f"{h.small_files:,} of {h.files:,} files are under {h.small_file_threshold:,} bytes (mean file "
             f"{mean:,} bytes); {mergeable:,} share a bucket with another small file", PAGE_TABLE,
             points=small_points, files=h.small_files,
             recommendation="compaction merges them (or raise target-file-size only if it is set too low)")
    total = h.total_index_bytes
    if h.data_bytes and total > INDEX_NOTE * h.data_bytes:
        ratio = total / h.data_bytes
        top = max(h.index_bytes, key=lambda b: b.bytes)
        item("index-overhead", WARNING if ratio > INDEX_HEAVY else INFO,
             f"index bytes are {ratio:.0%} of data bytes (largest: {top.index_type} {top.storage}, "
             f"{top.bytes:,} bytes)", KIND_PAGE.get(top.index_type, PAGE_WHATIF), ratio - INDEX_HEAVY,
             index_type=top.index_type)
    for b in h.blooms:
        option = f"file-index.bloom-filter.{b.column}.items"
        if b.verdict == OVERSIZED:
            item("bloom-oversized", WARNING, f"bloom filters on {b.column} take {b.bytes:,} bytes where the "
                 f"files' rows need {b.needed_bytes:,} at fpp {b.configured_fpp} (items={b.configured_items})",
                 PAGE_BLOOM, b.saved_bytes / b.bytes if b.bytes else 0.0, column=b.column, index_type=BLOOM_FILTER.name,
                 files=b.files, recommendation=f"'{option}' = '{b.recommended_items}' saves {b.saved_bytes:,} bytes")
        elif b.verdict == OVER_FPP:
            item("bloom-over-fpp", WARNING, f"{b.over_fpp_files:,} of {b.files:,} bloom filters on {b.column} hold more "
                 f"distinct keys than items={b.configured_items}: more false positives than fpp "
                 f"{b.configured_fpp}", PAGE_BLOOM, b.over_fpp_files / b.files, column=b.column,
                 index_type=BLOOM_FILTER.name, files=b.over_fpp_files,
                 recommendation="compact the table: " + b.cause_text() if b.cause == SKEW else
                 f"'{option}' = '{b.recommended_items}' (costs {-b.saved_bytes:,} more bytes)"
                 if b.saved_bytes is not None and b.saved_bytes < 0 else
                 f"'{option}' = '{b.recommended_items}'")
    order = {s: i for i, s in enumerate(SEVERITIES)}
    return sorted(out, key=lambda i: (order[i.severity], -i.deduction))


# ---------------------------------------------------------------------------------------
# The warehouse


def warehouse_health(warehouse, tables: Iterable[str] | None = None, progress: Progress | None = None,
                     measure: Callable[..., TableHealth] | None = None) -> WarehouseHealth:
    """:func:`table_health` (or ``measure(table)``, e.g. on Spark) of every table (or of ``tables``);
    one that cannot be opened scores 0."""
    names = list(tables) if tables is not None else warehouse.tables()
    out = []
    for i, name in enumerate(names):
        if progress is not None:
            progress(i, len(names), name)
        try:
            out.append((measure or table_health)(warehouse.table(name)))
        except IndexCoreError as exc:
            out.append(TableHealth(name, score=0, error=str(exc), items=(HealthItem(
                name, "unreadable-metadata", ERROR, f"cannot be opened: {exc}", PAGE_TABLE,
                CAPS["unreadable-metadata"]),)))
    if progress is not None:
        progress(len(names), len(names), "done")
    weights = [max(1, t.files) for t in out]
    score = round(sum(t.score * w for t, w in zip(out, weights, strict=True)) / sum(weights)) if out else 100
    return WarehouseHealth(tuple(out), score)


# ---------------------------------------------------------------------------------------
# Frames for the app and notebooks

TABLE_COLUMNS = ["table", "score", "errors", "warnings", "files", "rows", "live_rows", "live_rows_exact", "data_bytes",
                 "index_bytes", "index_pct", "small_files", "dv_density", "worst_bucket_density", "unusable_files", "missing_dv_files",
                 "problems", "index_kinds", "snapshot", "error"]
ITEM_COLUMNS = [f for f in HealthItem.__dataclass_fields__]


def tables_frame(health: WarehouseHealth | Iterable[TableHealth]) -> pd.DataFrame:
    """One row per table: score, issue counts and the numbers behind them."""
    tables = health.tables if isinstance(health, WarehouseHealth) else tuple(health)
    rows = []
    for t in tables:
        bad = t.unusable_frame if t.unusable else None  # no frame per table without unusable files
        rows.append({
            "table": t.table, "score": t.score, "errors": sum(i.severity == ERROR for i in t.items),
            "warnings": sum(i.severity == WARNING for i in t.items), "files": t.files, "rows": t.rows,
            "live_rows": t.live_rows, "live_rows_exact": t.live_rows_exact,
            "data_bytes": t.data_bytes, "index_bytes": t.total_index_bytes,
            "index_pct": t.total_index_bytes / t.data_bytes if t.data_bytes else None,
            "small_files": t.small_files, "dv_density": t.dv_density, "worst_bucket_density": t.worst_bucket_density,
            "unusable_files": int(bad["file_name"].nunique()) if bad is not None else 0,
            "missing_dv_files": int(bad.loc[bad["why"] == MISSING_DV, "file_name"].nunique()) if bad is not None else 0,
            "problems": t.problems,
            "index_kinds": ", ".join(sorted({b.index_type for b in t.index_bytes if b.index_type != CONTAINER_HEAD})),
            "snapshot": t.snapshot, "error": t.error})
    return pd.DataFrame(rows, columns=TABLE_COLUMNS)


def items_frame(health: WarehouseHealth | TableHealth) -> pd.DataFrame:
    """Every health item, worst first (severity, then points)."""
    items = health.items
    return pd.DataFrame([asdict(i) for i in items], columns=ITEM_COLUMNS)


def index_bytes_frame(health: WarehouseHealth | TableHealth) -> pd.DataFrame:
    """Index bytes per table, kind and storage, with their share of the table's data bytes."""
    tables = health.tables if isinstance(health, WarehouseHealth) else (health,)
    return pd.DataFrame([{"table": t.table, **asdict(b)} for t in tables for b in t.index_bytes],
                        columns=["table", *IndexBytes.__dataclass_fields__])


def blooms_frame(health: WarehouseHealth | TableHealth) -> pd.DataFrame:
    """Bloom sizing per table and column, with the recommended ``items`` and the bytes it saves."""
    tables = health.tables if isinstance(health, WarehouseHealth) else (health,)
    return pd.DataFrame([{"table": t.table, **asdict(b)} for t in tables for b in t.blooms],
                        columns=["table", *BloomSizing.__dataclass_fields__])


def coverage_frame(health: WarehouseHealth | TableHealth) -> pd.DataFrame:
    tables = health.tables if isinstance(health, WarehouseHealth) else (health,)
    return pd.DataFrame([{"table": t.table, **asdict(c)} for t in tables for c in t.coverage],
                        columns=["table", *Coverage.__dataclass_fields__])


def unusable_frame(health: WarehouseHealth | TableHealth) -> pd.DataFrame:
    tables = health.tables if isinstance(health, WarehouseHealth) else (health,)
    parts = [t.unusable_frame.assign(table=t.table) for t in tables if t.unusable]
    if not parts:
        return pd.DataFrame(columns=["table", *UNUSABLE_COLUMNS])
    return pd.concat(parts, ignore_index=True)[["table", *UNUSABLE_COLUMNS]]


def health_frames(health: WarehouseHealth | TableHealth) -> dict[str, pd.DataFrame]:
    """Every frame above by name (``tables`` only for a warehouse)."""
    out = {"items": items_frame(health), "index_bytes": index_bytes_frame(health), "blooms": blooms_frame(health),
           "coverage": coverage_frame(health), "unusable": unusable_frame(health)}
    if isinstance(health, WarehouseHealth):
        out = {"tables": tables_frame(health), **out}
    return out


# ``$health``: the items above, one row each, with the table's score on every row; a table
# without findings gives one ``healthy`` row.
HEALTH = pa.schema([
    ("severity", pa.string()), ("kind", pa.string()), ("message", pa.string()), ("page", pa.string()),
    ("deduction", pa.int32()), ("column", pa.string()), ("index_type", pa.string()), ("files", pa.int64()),
    ("recommendation", pa.string()), ("score", pa.int32()), ("snapshot_id", pa.int64())])


def health(table, snapshot_id: int | None = None) -> pa.Table:
    """``$health``: severity, kind, message, the app page explaining it, points off the score."""
    return health_rows(table_health(table, snapshot_id))


def health_rows(h: TableHealth) -> pa.Table:
    """The ``$health`` rows of a :class:`TableHealth` (however it was measured)."""
    rows = [{"severity": i.severity, "kind": i.kind, "message": i.message, "page": i.page,
             "deduction": i.deduction, "column": i.column, "index_type": i.index_type, "files": i.files,
             "recommendation": i.recommendation} for i in h.items]
    if not rows:
        rows = [{"severity": INFO, "kind": "healthy", "message": "no issue found", "page": PAGE_TABLE,
                 "deduction": 0}]
    return from_rows([{**r, "score": h.score, "snapshot_id": h.snapshot} for r in rows], HEALTH)


register_view("health", health)
