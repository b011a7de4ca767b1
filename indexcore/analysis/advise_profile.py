"""The advisor's profile of the filtered columns: which index kinds a column's cardinality asks
for (:func:`candidate_kinds`), and the files the queries sample, read once for the profile and
for every candidate built on them (:func:`read_sampled`), each column only as far as its
candidates depend on it.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from indexcore.analysis.advise_model import QueryRun
from indexcore.analysis.workload import EQUALITY, PATTERN, PREFIX, RANGE
from indexcore.errors import IndexCoreError
from indexcore.formats.registry import BITMAP, BLOOM_FILTER, BSI, RANGE_BITMAP, supported_index_types
from indexcore.warehouse.data_file import read_data_file
from indexcore.warehouse.model import LiveFile, Problem

LOW_CARDINALITY_MAX = 1000
LOW_CARDINALITY_RATIO = 0.125
BLOOM_FPP = 0.01


def column_profile(table, schema, files: Sequence[LiveFile], columns: list[str],
                   problems: list[Problem]) -> dict[str, dict[str, int]]:
    """Per column: the largest distinct count and row count of a profiled file."""
    out = {c: {"max_distinct": 0, "max_rows": 0} for c in columns}
    for lf in files:
        try:
            data = read_data_file(table.storage, lf, table.file_schema(lf), schema, columns=columns)
        except IndexCoreError as exc:
            problems.append(Problem(lf.path, exc.structure or "data file", exc.message))
            continue
        _count(out, data, columns, columns)
    return out


def candidate_kinds(dtype, filters: set[str], profile: dict[str, int]) -> list[tuple[str, dict[str, str], str]]:
    """(index type, options, why) worth trying for a column filtered as ``filters``. A prefix or a
    pattern (``LIKE``, startsWith / endsWith / contains) asks for no kind: every file index of
    Paimon answers REMAIN to them (:data:`.advise_patterns.NO_PATTERN_INDEX`)."""
    filters = set(filters) - {PREFIX, PATTERN}
    if not filters:
        return []
    supported = set(supported_index_types(dtype))
    distinct, rows = profile["max_distinct"], profile["max_rows"]
    low = distinct <= LOW_CARDINALITY_MAX and distinct <= max(1, LOW_CARDINALITY_RATIO * rows)
    out = []
    if profile_matters(filters):
        if low and BITMAP.name in supported:
            out.append((BITMAP.name, {}, f"equality on a low-cardinality column (at most {distinct} distinct "
                                      f"values in a file of up to {rows} rows)"))
        elif EQUALITY in filters and BLOOM_FILTER.name in supported:
            out.append((BLOOM_FILTER.name, {"items": str(max(distinct, 1)), "fpp": str(BLOOM_FPP)},
                        f"equality on a high-cardinality column (up to {distinct} distinct values per file)"))
    if RANGE in filters:
        for kind in (RANGE_BITMAP.name, BSI.name):
            if kind in supported:
                out.append((kind, {}, "range conditions"))
    return out


def profile_matters(filters: set[str]) -> bool:
    """Whether the kinds :func:`candidate_kinds` gives a column filtered as ``filters`` hang on its
    profile (a bitmap or a bloom filter for equality and the like); ranges alone ask for range
    kinds whatever the column holds, and prefixes or patterns for none."""
    filters = set(filters) - {PREFIX, PATTERN}
    return bool(filters) and bool(filters & {EQUALITY, "null", "other"} or not filters & {RANGE})


def _read_columns(table, schema, lfs: Sequence[LiveFile], columns: list[str], problems: list[Problem],
                  enough: dict[str, int] | None = None, counted: set[str] | None = None
                  ) -> tuple[list[tuple[LiveFile, Any, float]], dict[str, dict[str, int]]]:
    """(file, its columns as an Arrow table, seconds to read it) for each readable file of ``lfs``,
    read once for the profile and for every kind built on it, and the columns' profile over them
    (:func:`_profile`). ``enough``: column -> a distinct count past which its profile no longer
    matters (:func:`_read_sampled`); once a file holds more, the next files are read without it
    (its profile then stops at that file's count; -1: not read at all), and when no column is left,
    no further file. ``counted``: the columns whose distinct values are counted (None: all; the
    others' profile stays 0 distinct values: :func:`profile_matters`)."""
    out = []
    memo: dict = {}  # files of one schema share their Parquet projection and column picks
    profile = {c: {"max_distinct": 0, "max_rows": 0} for c in columns}
    wanted = [c for c in columns if not enough or enough.get(c, 0) >= 0]
    for lf in table.iter_prefetched(lfs, index=False, dv=False, data=True):
        if not wanted:
            break
        start = time.perf_counter()
        try:
            data = read_data_file(table.storage, lf, table.file_schema(lf, problems), schema, columns=wanted,
                                  memo=memo)
        except IndexCoreError as exc:
            problems.append(Problem(lf.path, exc.structure or "data file", exc.message))
            continue
        out.append((lf, data, time.perf_counter() - start))
        # the columns whose count decides what is read next are counted now, the others after the loop
        _count(profile, data, [c for c in wanted if c in enough and (counted is None or c in counted)]
               if enough else [], columns)
        if enough and any(profile[c]["max_distinct"] > enough[c] for c in wanted if c in enough):
            wanted = [c for c in wanted if c not in enough or profile[c]["max_distinct"] <= enough[c]]
    for c in columns:  # read from every file read (not dropped by ``enough``): counted at once
        if (counted is None or c in counted) and not (enough and c in enough):
            profile[c]["max_distinct"] = max_distinct([data.column(c) for _, data, _ in out])
    return out, profile


#: Profiles of a column of low and of high cardinality (every profile asks for the kinds of one of them).
_LOW, _HIGH = {"max_distinct": 1, "max_rows": 1 << 30}, {"max_distinct": 1 << 30, "max_rows": 1 << 30}


def _missing(dtype, filters: set[str], have: set[str], profile: dict[str, int]) -> list[str]:
    """The kinds a column of ``profile`` would get as candidates (those it has are not)."""
    return [kind for kind, _, _ in candidate_kinds(dtype, filters, profile) if kind not in have]


def _sure(dtype, filters: set[str], have: set[str]) -> bool:
    """Whether a column gets a candidate whatever its profile says (of low or high cardinality)."""
    return all(_missing(dtype, filters, have, profile) for profile in (_LOW, _HIGH))


def read_sampled(table, schema, files: Sequence[LiveFile], runs: list[QueryRun], columns: list[str],
                  filters: dict[str, set[str]], have: set[tuple[str, str]],
                  problems: list[Problem]) -> tuple[list[tuple[LiveFile, Any, float]], dict[str, dict[str, int]]]:
    """The files the queries sample, read once with every filtered column, and the columns' profile
    over them (each file profiled once): first those of the
    columns that get a candidate whatever their profile (``_sure``); a column whose candidates hang
    on its profile (equality beside an existing bitmap, say) is profiled on those, and its own
    sampled files are read only when a candidate follows (else they would be read for nothing)."""
    sampled: dict[str, set[int]] = {c: set() for c in columns}
    for r in runs:
        at = {int(r.reached[p]) for p, _ in r.sample}
        for c in r.predicate.fields() & sampled.keys():
            sampled[c] |= at
    kinds_had = {c: {k for col, k in have if col == c} for c in columns}
    sure = [c for c in columns if _sure(schema.field(c).type, filters[c], kinds_had[c])]
    first = set().union(*(sampled[c] for c in sure)) if sure else set().union(*sampled.values())
    lfs = [files[i] for i in sorted(first, key=lambda i: files[i].path)]
    # a column that gets no candidate once it is not of low cardinality (an equality beside the
    # bloom filter it has): one file with more distinct values than a low-cardinality column holds
    # settles it, so it is read no further (the bound takes the largest row count the manifests
    # give; a file holding more rows than its manifest says has every file read again in full)
    # (and one that gets none either way is not read at all)
    rows_bound = max((lf.file.row_count for lf in lfs), default=0)
    enough = {c: -1 if not _missing(schema.field(c).type, filters[c], kinds_had[c], _LOW) else
              min(LOW_CARDINALITY_MAX, max(1, LOW_CARDINALITY_RATIO * rows_bound)) for c in columns
              if c not in sure and not _missing(schema.field(c).type, filters[c], kinds_had[c], _HIGH)}
    counted = {c for c in columns if profile_matters(filters[c])}  # the others' kinds are the same either way
    read, profile = _read_columns(table, schema, lfs, columns, problems, enough, counted)
    if enough and max((data.num_rows for _, data, _ in read), default=0) > rows_bound:
        read, profile = _read_columns(table, schema, lfs, columns, problems, counted=counted)
    more = set()
    for c in columns:
        if c not in sure and _missing(schema.field(c).type, filters[c], kinds_had[c], profile[c]):
            more |= sampled[c] - first
    if more:
        extra, found = _read_columns(table, schema, [files[i] for i in sorted(more, key=lambda i: files[i].path)],
                                     columns, problems, counted=counted)
        read += extra
        profile = _merge_profiles(profile, found)
    return read, profile


def _merge_profiles(a: dict[str, dict[str, int]], b: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    """The profile of two sets of files from theirs (each figure a maximum)."""
    return {c: {k: max(v, b[c][k]) for k, v in figures.items()} for c, figures in a.items()}


def max_distinct(columns: Sequence[Any]) -> int:
    """The largest count of distinct non-null values in one of ``columns`` (Arrow arrays, one per
    file): what ``pc.count_distinct(column, mode="only_valid")`` of each gives, their maximum. Of
    strings and integers, one dictionary encoding of them all and one ``numpy.unique`` of (file,
    value) pairs, not a kernel call per file (a hundred 60-row files: a tenth of the time); of other
    types (floats: Arrow's hashing of -0.0 and NaN is its own) file by file."""
    arrays = [c.combine_chunks() if isinstance(c, pa.ChunkedArray) else c for c in columns]
    if not arrays:
        return 0
    kind = arrays[0].type
    if len(arrays) < 2 or any(a.type != kind for a in arrays) or not (
            pa.types.is_integer(kind) or pa.types.is_string(kind) or pa.types.is_large_string(kind)):
        return max(pc.count_distinct(a, mode="only_valid").as_py() for a in arrays)
    codes = pc.dictionary_encode(pa.concat_arrays(arrays)).indices.fill_null(-1).to_numpy(zero_copy_only=False)
    lengths = np.fromiter((len(a) for a in arrays), np.int64, len(arrays))
    files = np.repeat(np.arange(len(arrays), dtype=np.int64), lengths)
    valid = codes >= 0
    if not valid.any():
        return 0
    width = int(codes.max()) + 1
    pairs = np.unique(files[valid] * width + codes[valid].astype(np.int64))
    return int(np.bincount(pairs // width).max())


def _count(profile: dict[str, dict[str, int]], data, counted: list[str], columns: list[str]) -> None:
    """One read file added to ``profile``: the distinct values of its ``counted`` columns, its rows
    to every column's."""
    for c in counted:
        profile[c]["max_distinct"] = max(profile[c]["max_distinct"],
                                         pc.count_distinct(data.column(c), mode="only_valid").as_py())
    for c in columns:
        profile[c]["max_rows"] = max(profile[c]["max_rows"], data.num_rows)
