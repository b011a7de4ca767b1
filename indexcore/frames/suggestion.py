"""A predicate worth explaining: equalities on values the snapshot holds, tried by explain on a
sample of files, the one that prunes most first (What-if, Advisor and Spark pages' default)."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from typing import Any

import numpy as np

from indexcore.errors import IndexCoreError
from indexcore.expr import EQUAL, Leaf, predicate_to_sql, quote_name
from indexcore.formats.bitmap.keys import KeyCodec
from indexcore.formats.bitmap.summary import blob_counts
from indexcore.formats.registry import FILE_INDEX_TYPES
from indexcore.frames.pruning import file_stats
from indexcore.scan.explainer import explain_files
from indexcore.scan.plan_stages import plan_value_stats
from indexcore.views.common import partition_types
from indexcore.warehouse.file_sample import sample_rows
from indexcore.warehouse.model import LiveFile
from indexcore.warehouse.table_heads import WHOLE_INDEX_BYTES

SUGGEST_MAX_FILES = 500  # files the suggestion reads stats and indexes of, and explains candidates on
SUGGEST_TRIES = 6
# files a candidate is first explained on when it is unlikely to beat the best found (its whole
# explain is skipped when these already read more files than the best does)
PROBE_FILES = 16
WHOLE_BATCH = 64  # sampled files whose whole .index files (up to 64 KiB each) are held at once


def suggestion_sample(table, snapshot_id: int | None = None) -> tuple[list[LiveFile], int]:
    """The live files the predicate suggestion works on and how many there are in all: every file
    up to ``SUGGEST_MAX_FILES``, else a fixed random sample of whole buckets (primary-key tables).
    Drawn on the columnar plan (:func:`~indexcore.warehouse.file_sample.sample_rows`, the draw of
    ``sample_files``): objects are made for the sampled files only (by plan row; the live files a view
    made already are taken)."""
    plan = table.plan_columns(snapshot_id)
    paths = plan.files.column("path").to_pylist()
    groups = None
    if table.schema().primary_keys:
        groups = list(zip(plan.partition_values(), plan.files.column("_BUCKET").to_pylist(), strict=True))
    rows = sample_rows(paths, SUGGEST_MAX_FILES, groups, seed=0)
    # by plan row: no map of every path to its row
    return table.live_files_by_path(snapshot_id).at_rows(np.asarray(rows, np.int64)), len(paths)


def _rarest(seen: dict[tuple[str, Any], tuple[set[str] | int, int]], total: int) -> list[tuple[str, Any, int]]:
    """(column, value, files) held by the fewest files (then rows), rarest first; ``seen`` gives
    each its files (a set of paths, or their count) and rows."""
    out = [(col, value, n, rows) for (col, value), (files, rows) in seen.items()
           if 0 < (n := files if isinstance(files, int) else len(files)) <= total]
    out.sort(key=lambda c: (c[2], c[3], c[0], str(c[1])))
    return [c[:3] for c in out]


def _covering(ranges: list[tuple[Any, Any]], values: list[Any]) -> list[int] | None:
    """For each of ``values``, how many ``(lo, hi)`` ranges hold it (``lo <= value <= hi``), by
    bisection over the sorted ends: where every range has ``lo <= hi`` that is the number of ``lo``
    up to it less the ``hi`` below it. None where that does not hold or the values do not order
    (a NaN, types that do not compare): the caller counts range by range."""
    try:
        if any(not lo <= hi or lo != lo or hi != hi for lo, hi in ranges):  # noqa: PLR0124 - NaN test
            return None
        starts, ends = sorted(lo for lo, _ in ranges), sorted(hi for _, hi in ranges)
        return [bisect_right(starts, v) - bisect_left(ends, v) for v in values]
    except TypeError:
        return None


def _exact_stat(value: Any) -> bool:
    """Manifest stats truncate strings (``truncate(16)`` by default): only shorter ones are values."""
    return value is not None and not (isinstance(value, str | bytes) and len(value) >= 16)


def _whole_containers(table, files: list[LiveFile], folders: dict) -> dict[str, tuple[bytes, str]]:
    """The ``.index`` files of ``files`` of at most :data:`WHOLE_INDEX_BYTES`, each read whole in one
    request, by data file path (bytes, name); their heads kept on the table where
    :meth:`~indexcore.warehouse.table_heads.TableIndexHeads.iter_index_heads` finds them, so a
    file is read once for its head and its bitmap blobs (not once for the head, then per blob).
    ``folders``: the directories looked up so far (:meth:`Storage.read_prefixes`)."""
    on_disk = [lf for lf in files if lf.has_file_index and lf.file.embedded_index is None and lf.index_path]
    if not on_disk or table.storage.cache is not None:  # an object store: its reads go through the prefetch
        return {}
    index_paths = [lf.index_path for lf in on_disk]
    reads = table.storage.read_prefixes(index_paths, WHOLE_INDEX_BYTES, served=False, folders=folders)
    table.keep_read_heads([lf.path for lf in on_disk], index_paths, reads)
    return {lf.path: (read[0], read[2]) for lf, read in zip(on_disk, reads, strict=True)
            if not isinstance(read, IndexCoreError) and len(read[0]) == read[1]}


def _bitmap_dictionaries(table, files: list[LiveFile], latest: dict) -> tuple[dict, dict[str, str], int]:
    """From the file-index heads of ``files``: (column, value) -> (files, rows) of each bitmap's
    dictionary (only bitmap blobs are opened, and kept on the table for the candidates' explains),
    the other indexed columns and their kind, and how many files have an index."""
    seen: dict[tuple[str, Any], tuple[set[str], int]] = {}
    other: dict[str, str] = {}
    indexed = 0
    options_of: dict[tuple, dict] = {}
    codecs: dict[Any, KeyCodec | None] = {}
    folders: dict[str, str | None] = {}
    types: dict[tuple, Any] = {}  # (schema id, column) -> its type, None where the latest schema reads it otherwise
    for lo in range(0, len(files), WHOLE_BATCH):  # a batch's whole containers held at a time
        part = files[lo:lo + WHOLE_BATCH]
        whole = _whole_containers(table, part, folders)
        for lf, head, _error in table.iter_index_heads(part):
            indexed += 1
            if head is None:
                continue
            schema = table.file_schema(lf)
            for entry in head.entries:
                key = (schema.id, entry.column)
                dtype = types.get(key, _UNSEEN)
                if dtype is _UNSEEN:  # once per schema and column: the same for every file of the schema
                    dtype = types[key] = _read_alike(schema, entry.column, latest)
                if dtype is None:
                    continue
                if entry.index_type != "bitmap":
                    if entry.index_type in FILE_INDEX_TYPES:
                        other.setdefault(entry.column, entry.index_type)
                    continue
                try:
                    if entry.empty:
                        raise IndexCoreError("empty bitmap")
                    known = options_of.get((schema.id, entry.column))  # the same for every file of a schema
                    options = known if known is not None else options_of.setdefault(
                        (schema.id, entry.column), schema.file_index_options(entry.column, "bitmap"))
                    got = whole.get(lf.path)
                    if got is None and lf.file.embedded_index is not None:  # embedded: its bytes are the plan's
                        got = (bytes(lf.file.embedded_index), f"{lf.path} (embedded file index)")
                    if got is not None and entry.offset >= 0 and entry.offset + entry.length <= len(got[0]):
                        # opened on the bytes read with its container (an error: index_reader reads and raises it)
                        blob = got[0][entry.offset:entry.offset + entry.length]
                        table.keep_index_reader(lf, entry, dtype, options, blob, got[1])
                        counted = _blob_dictionary(blob, dtype, codecs)
                        if counted is not None:  # the reader's dictionary, read on the bytes
                            _add_values(seen, entry.column, lf.path, counted)
                            continue
                    reader = table.index_reader(lf, entry, dtype, options)
                except IndexCoreError:  # no dictionary to read: its manifest stats still give a value
                    other.setdefault(entry.column, "bitmap")
                    continue
                try:
                    _add_values(seen, entry.column, lf.path, reader.dictionary())
                except IndexCoreError:
                    continue
    return seen, other, indexed


_UNSEEN = object()


def _read_alike(schema, column: str, latest: dict):
    """The type of ``column`` in a file's ``schema`` where the latest schema has it with that type,
    else None (its values would not be the latest's)."""
    field = latest.get(column)
    try:
        dtype = schema.field(column).type
    except KeyError:
        return None
    return dtype if field is not None and dtype == field.type else None


def _blob_dictionary(blob: bytes, dtype, codecs: dict) -> list[tuple[Any, int]] | None:
    """``BitmapReader.dictionary()`` of a whole bitmap blob, read on its bytes
    (:func:`~indexcore.formats.bitmap.summary.blob_counts`: the same values and counts, without a
    reader's meta and blocks); None where that does not take the blob (the reader then reads it)."""
    if dtype not in codecs:
        try:
            codecs[dtype] = KeyCodec(dtype)
        except (IndexCoreError, ValueError):
            codecs[dtype] = None
    codec = codecs[dtype]
    if codec is None:
        return None
    try:
        counts = blob_counts(blob, codec)
    except (IndexCoreError, ValueError, TypeError, OverflowError):
        return None
    return None if counts is None else counts.dictionary


def _add_values(seen: dict, column: str, path: str, dictionary) -> None:
    """Count one file's bitmap ``dictionary`` (value, rows) into ``seen``: (column, value) -> (files, rows)."""
    for value, card in dictionary:
        paths, rows = seen.get((column, value), (set(), 0))
        paths.add(path)
        seen[(column, value)] = (paths, rows + card)


def predicate_candidates(table, snapshot_id: int | None = None,
                         files: list[LiveFile] | None = None) -> list[tuple[str, str]]:
    """(SQL, why) equalities that should prune this snapshot, best first.

    Values come from what the snapshot itself holds, so each one matches some rows: bitmap
    dictionaries (the value the fewest files and rows hold), the minimum of a bloom-filter,
    range-bitmap or BSI column in one file (from its manifest stats), a partition value, then
    any column whose per-file minimum lies in few files' [min, max]. Only the files of
    :func:`suggestion_sample` are looked at (heads, bitmap dictionaries and manifest stats);
    ``files``: that sample when the caller has drawn it already.
    """
    return [(sql, why) for sql, why, _files in _candidates(table, snapshot_id, files)]


def _candidates(table, snapshot_id: int | None, files: list[LiveFile] | None) -> list[tuple[str, str, int]]:
    """:func:`predicate_candidates` with the files of the sample each is expected in (what chose it:
    a bitmap dictionary's files, the smallest partition's, the files whose stats range covers the
    value; 1 for the minimum of one file): :func:`suggest_predicate` explains the likely smallest first."""
    schema = table.schema()
    row_type = schema.row_type()
    if files is None:
        files, _total = suggestion_sample(table, snapshot_id)
    if not files:
        return []
    latest = {f.name: f for f in schema.fields}
    out: list[tuple[str, str, int]] = []

    def add(column: str, value: Any, why: str, expected: int) -> None:
        if value is None or column not in latest:
            return
        try:
            sql = predicate_to_sql(Leaf(EQUAL, column, (value,)), row_type)
        except (TypeError, ValueError, KeyError):
            return
        if all(sql != s for s, _, _ in out):
            out.append((sql, why, expected))

    bitmap_values_seen, other_index, indexed = _bitmap_dictionaries(table, files, latest)
    for column, value, n in _rarest(bitmap_values_seen, indexed)[:2]:
        add(column, value, f"bitmap-indexed `{column}`: a value {n} of {indexed} indexed files hold", n)

    stats = _latest_stats(table, snapshot_id, schema, [lf for lf in files if lf.file.schema_id == schema.id])
    for column, index_type in sorted(other_index.items(), key=lambda kv: FILE_INDEX_TYPES.index(kv[1])):
        lows = sorted(((s[column][0], p) for p, s in stats.items() if column in s and _exact_stat(s[column][0])),
                      key=lambda vp: (str(vp[0]), vp[1]))
        if lows:
            add(column, lows[len(lows) // 2][0], f"{index_type}-indexed `{column}`: the minimum of one file", 1)

    if partition_types(table):
        parts: dict[tuple, int] = {}
        for lf in files:
            parts[lf.partition] = parts.get(lf.partition, 0) + 1
        if len(parts) > 1:
            smallest = min(parts, key=lambda p: (parts[p], str(p)))
            if smallest and smallest[0] is not None:
                key = schema.partition_keys[0]
                add(key, smallest[0], f"partition key `{key}`: one of {len(parts)} partitions", parts[smallest])

    spans: dict[tuple[str, Any], tuple[int, int]] = {}  # (column, value) -> (files whose range covers it, 0)
    for column in schema.field_names:
        ranges = [(s[column][0], s[column][1]) for s in stats.values()
                  if column in s and _exact_stat(s[column][0]) and s[column][1] is not None]
        counts = _covering(ranges, [low for low, _high in ranges[:50]])
        if counts is not None:
            spans.update({(column, low): (n, 0) for (low, _high), n in zip(ranges, counts, strict=False)})
            continue
        for low, _high in ranges[:50]:
            try:  # a count: each range is one file's (the stats are per path)
                spans[(column, low)] = (sum(1 for lo, hi in ranges if lo <= low <= hi), 0)
            except TypeError:
                break
    for column, value, n in _rarest(spans, len(stats) - 1)[:2]:
        add(column, value, f"`{column}`: a value whose stats range covers {n} of {len(files)} files", n)
    return out


def _latest_stats(table, snapshot_id: int | None, schema, files: list[LiveFile]) -> dict[str, dict]:
    """Path -> every column's (min, max, null count) of ``files`` (written with the latest
    ``schema``), as :func:`~indexcore.frames.pruning.file_stats` gives them: decoded from the
    columnar plan a column at a time where the files are its rows, else file by file."""
    if not files:
        return {}
    plan = table.plan_columns(snapshot_id)
    row_of = {p: i for i, p in enumerate(plan.files.column("path").to_pylist())}
    rows = [row_of.get(lf.path) for lf in files]
    if any(r is None for r in rows):
        return {lf.path: file_stats(table, lf) for lf in files}
    found = plan_value_stats(table, plan, rows, schema, table.file_schema(files[0]))
    return {lf.path: cells for lf, cells in zip(files, found, strict=True)}


def _reads_more(table, sql: str, part: list[LiveFile], schema, snapshot_id: int | None, limit: int) -> bool:
    """Does explaining ``sql`` on ``part`` of an append table's files read more than ``limit`` of them?
    (Then on all of them it does too.) False where it cannot be explained: the full explain says so."""
    try:
        ex = explain_files(table, sql, part, schema=schema, snapshot_id=snapshot_id, kept=True)
    except IndexCoreError:
        return False
    return sum(1 for f in ex.files if f.skipped_by is None) > limit


def suggest_predicate(table, snapshot_id: int | None = None) -> dict[str, Any]:
    """A SQL equality that prunes this snapshot (see :func:`predicate_candidates`).

    Up to ``SUGGEST_TRIES`` candidates are explained on :func:`suggestion_sample`'s files (their
    index heads and readers kept on the table, so each blob is opened once for all); among
    those that leave at least one row and fewer files or rows than all, the one reading the
    fewest files, then rows, then the first in the list wins (explained likely smallest first; one
    that cannot win is not explained in full: see the comment in the body).
    Returns ``sql``, ``why``, ``files``, ``files_read``, ``rows``, ``rows_selected`` (over the
    files explained), ``sample_files`` and ``total_files`` (equal unless the snapshot has more
    than ``SUGGEST_MAX_FILES``) and ``prunes`` (False, with an ``IS NOT NULL`` fallback, when
    nothing the table holds prunes).
    """
    files, total = suggestion_sample(table, snapshot_id)
    plan = table.plan_columns(snapshot_id)
    schema = table.read_schema(snapshot_id, plan.snapshot)
    sid = plan.snapshot.id if plan.snapshot else None
    tried = _candidates(table, snapshot_id, files)[:SUGGEST_TRIES]
    # The winner is the fewest files, then rows, then the first in the list: the same whatever the
    # order they are explained in, so the likely smallest go first, and a candidate that cannot win
    # is not explained (or only on a few files): one after a winner reading one row of one file, and,
    # in an append table (each file decided alone, so a part of the files reads no more of them than
    # all do), one that reads more files than the best on its first PROBE_FILES files already.
    probe = not schema.primary_keys and len(files) > PROBE_FILES
    best: dict[str, Any] | None = None
    best_at = len(tried)
    for i in sorted(range(len(tried)), key=lambda i: (tried[i][2], i)):
        sql, why, expected = tried[i]
        if best is not None:
            if (best["files_read"], best["rows_selected"]) == (1, 1) and i > best_at:
                continue  # one row of one file, earlier in the list: nothing after it does better
            if probe and expected > best["files_read"] and _reads_more(table, sql, files[:PROBE_FILES], schema, sid,
                                                                         best["files_read"]):
                continue
        try:
            ex = explain_files(table, sql, files, schema=schema, snapshot_id=sid, kept=True)
        except IndexCoreError:
            continue
        read = sum(1 for f in ex.files if f.skipped_by is None)
        rows = sum(f.row_count - (f.dv_cardinality or 0) for f in ex.files)
        selected = sum(f.rows_after_dv for f in ex.files if f.skipped_by is None)
        if read == 0 or selected == 0 or (read == len(ex.files) and selected >= rows):
            continue  # selects nothing, or prunes nothing
        if best is None or (read, selected, i) < (best["files_read"], best["rows_selected"], best_at):
            best, best_at = {"sql": sql, "why": why, "files": len(ex.files), "files_read": read, "rows": rows,
                             "rows_selected": selected, "prunes": True, "sample_files": len(files),
                             "total_files": total}, i
    if best is not None:
        return best
    names = table.schema().field_names
    return {"sql": f"{quote_name(names[0])} IS NOT NULL" if names else "TRUE", "why": "no equality on the data prunes",
            "files": None, "files_read": None, "rows": None, "rows_selected": None, "prunes": False,
            "sample_files": len(files), "total_files": total}
